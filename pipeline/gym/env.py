"""`NetGaugeEnv`: any NetGauge app as a `gymnasium.Env` with text observations and actions.

Built only on the `pipeline.core.App` protocol, so every app works the same way:

- `reset(seed=…, options=…)` picks a query: a level from `levels` (the env's seeded
  RNG), and that level's next index (0, 1, 2, … wrapping at `queries`; `reset(seed=…)`
  starts every level at 0 again); `options={"level": L, "index": i}` picks one. It opens
  an episode in the app's environment and returns its first observation (text).
- `step(action)` plays the action text as the agent's reply: the app parses and runs it
  in its emulator or sandbox, and the scorer judges the steps so far. It returns the next
  observation (what the environment printed), a reward, `terminated` (the app ended the
  episode: an answer was given, or its own turn rules ended it), `truncated` (the turn
  limit `max_turns` was reached before the app ended it) and `info`.
- `close()` leaves the app's environment (stops its emulator / sandbox processes).

Queries are the pipeline's for `seed` (by default 2, the first seed of the `train` split,
pipeline/splits.py, so training never sees a query the grids evaluate): read from the
queries shard of the data directory when one was made with the same settings and is long
enough, else drawn and validated lazily, one query per reset, from the same seeded stream
the generate stage uses (query i needs queries 0..i-1 drawn first, for the keys they took).

Reward (configurable with `Reward`): `solved` (+1) when the scorer accepts the episode as
it ends, `unsafe_step` (−1) for each step the scorer judges unsafe, `failed` (0) when the
episode ends unsolved, and `step` (0) on every step. `info` holds `correct`, `safe` (the
verdict of the steps so far), `score` (its real-valued score: localize's, else 1 or 0),
`turn`, `turns_left`, `read_left` (bytes; None without a read budget), `bytes_read`,
`task`, `outcome`, `status`, `error` and `query_id`. A detect or localize episode ends
with its answer (pipeline/answers.py: the play loop reads it).

An environment failure (a crashed emulator, or anything else a step raised while the app
played the action: pipeline/play.py) raises `EnvironmentFailure` and ends the episode, whose
lab is dropped: it is not the agent's doing, so it is not turned into a reward.
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from pipeline.answers import answer_spec
from pipeline.build import make_app
from pipeline.config import compose
from pipeline.core import App, Query, StepStatus
from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.generate import stored_queries
from pipeline.play import EpisodeLoop, environment_failure, played
from pipeline.registry import APPS

TRAIN_SEED = 2  # the first seed of the train split: no grid evaluates its queries
MAX_TEXT = 1 << 21  # characters; longer than any prompt, output or code an app accepts


@dataclass(frozen=True)
class Reward:
    """The reward scheme; every term is added up per step."""

    solved: float = 1.0  # the episode ends and the scorer accepts it
    failed: float = 0.0  # the episode ends and the scorer rejects it
    unsafe_step: float = -1.0  # this step left the environment unsafe
    step: float = 0.0  # every step (e.g. -0.01 to prefer short episodes)


class AnyText(spaces.Text):
    """Any string of at most `max_length` characters (all of Unicode); `sample` draws
    short printable-ASCII strings, which is what random agents and env checkers need."""

    def __init__(self, max_length: int = MAX_TEXT, sample_length: int = 64, seed: Any = None):
        super().__init__(max_length, min_length=0, charset=string.printable, seed=seed)
        self.sample_length = sample_length

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        length = int(self.np_random.integers(0, self.sample_length + 1))
        chars = self.np_random.choice(np.array(self.character_list), size=length)
        return "".join(chars.tolist())


class NetGaugeEnv(gym.Env[str, str]):
    """One NetGauge app as a Gymnasium environment (see the module docstring)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012 (gymnasium's API)

    def __init__(
        self,
        app: str = "malt",
        levels: int | Sequence[int] = 1,
        seed: int = TRAIN_SEED,
        queries: int = 100,
        overrides: Sequence[str] = (),
        reward: Reward | dict[str, float] | None = None,
        max_turns: int | None = None,
        data_dir: str = "data",
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode={render_mode!r}; choose one of: ansi, None")
        self.levels = [levels] if isinstance(levels, int) else list(levels)
        if not self.levels or queries < 1:
            raise ConfigError("NetGaugeEnv needs at least one level and queries >= 1")
        self.generation_seed = seed
        self.queries = queries
        self.reward_scheme = Reward(**reward) if isinstance(reward, dict) else reward or Reward()
        self.max_turns = max_turns
        self.render_mode = render_mode
        # composed at its first level: an app's config may be checked against its levels
        # (incidents has no level 1, the config's default)
        given = any(o.startswith("level=") for o in overrides)
        level = [] if given else [f"level={self.levels[0]}"]
        self._overrides = [f"app={app}", f"data_dir={data_dir}", *level, *overrides]
        self.cfg = compose(self._overrides)
        for level in self.levels:
            APPS.get(str(self.cfg.app.kind)).check_level(level)
        self.app: App = make_app(self.cfg)
        self.observation_space = AnyText()
        self.action_space = AnyText()
        self._generated: dict[int, list[Query]] = {}  # per level, the queries so far
        self._streams: dict[int, Iterator[Query]] = {}  # per level, the app's generator
        self._next: dict[int, int] = {}  # per level, the index the next reset plays
        self._env: Any = None  # the app's Environment, entered on the first reset
        self._episode_cm: AbstractContextManager[EpisodeLoop] | None = None
        self._loop: EpisodeLoop | None = None  # the episode being played
        self._query: Query | None = None
        self._observation = ""
        self._done = True

    # -- queries --------------------------------------------------------------------------

    def query(self, level: int, index: int) -> Query:
        """Query `index` of `level` (generated on first use; the same as the pipeline's)."""
        if level not in self.levels or not 0 <= index < self.queries:
            raise ConfigError(
                f"no query level={level} index={index}; levels {self.levels}, "
                f"indices 0..{self.queries - 1}"
            )
        got = self._generated.setdefault(level, [])
        if not got:
            got += self._stored(level) or []
        while len(got) <= index:
            stream = self._streams.get(level)
            if stream is None:
                stream = iter(self.app.generate(level, self.generation_seed, self.queries))
                self._streams[level] = stream
            got.append(next(stream))
        return got[index]

    def _stored(self, level: int) -> list[Query] | None:
        """The level's queries from the data directory's shard, when it has them all."""
        cfg = compose(
            [
                *self._overrides,
                f"level={level}",
                f"seed={self.generation_seed}",
                f"queries={self.queries}",
            ]
        )
        return stored_queries(cfg, self.app)

    # -- the Gymnasium API ---------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._next.clear()
        options = options or {}
        level = int(options.get("level", self.levels[self.np_random.integers(len(self.levels))]))
        if "index" in options:
            index = int(options["index"])
        else:
            index = self._next.get(level, 0)
            self._next[level] = (index + 1) % self.queries
        query = self.query(level, index)
        self._end_episode()
        if self._env is None:
            self._env = self.app.environment()
            self._env.__enter__()
        opening = played(
            self._env, query, self.max_turns or None, answers=answer_spec(self.app, query)
        )
        try:
            self._loop = opening.__enter__()
        except Exception as err:  # a failure of the environment, whatever it raised
            raise environment_failure(err, f"opening the episode of {query.query_id}") from err
        self._episode_cm = opening
        self._query, self._done = query, False
        self._observation = self._loop.observation
        info = {"query_id": query.query_id, "level": level, "index": index, "turn": 0}
        return self._observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        loop = self._loop
        if self._done or loop is None or self._query is None:
            raise gym.error.ResetNeeded("the episode has ended; call reset() first")
        result = loop.step(action)
        if result.status is StepStatus.ENV_ERROR:
            self._end_episode()  # the environment sees the failure and drops the lab
            raise loop.failure or EnvironmentFailure(result.error or "the environment failed")
        turn = loop.turn
        verdict = self.app.score(self._query, loop.steps)
        terminated = bool(result.done)
        truncated = not terminated and loop.at_limit
        scheme = self.reward_scheme
        reward = scheme.step + (0.0 if verdict.step_safe[-1] else scheme.unsafe_step)
        if terminated or truncated:
            reward += scheme.solved if verdict.correct else scheme.failed
            self._done = True
        self._observation = result.output
        info = {
            "query_id": self._query.query_id,
            "turn": turn,
            "correct": bool(verdict.correct),
            "safe": bool(verdict.safe),
            "score": verdict.score if verdict.score is not None else float(verdict.correct),
            "task": self._query.task,
            "turns_left": max(0, (loop.max_turns or 0) - turn),
            "read_left": loop.read_left,
            "bytes_read": loop.bytes_read,
            "outcome": str(verdict.outcome),
            "status": str(result.status),
            "error": result.error,
        }
        return self._observation, float(reward), terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._observation
        return None

    def close(self) -> None:
        """End the episode and leave the app's environment (stops its processes), and
        the generators still drawing queries (they may hold labs of their own)."""
        self._end_episode()
        streams, self._streams = list(self._streams.values()), {}
        for stream in streams:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        env, self._env = self._env, None
        if env is not None:
            env.__exit__(None, None, None)
        super().close()

    def _end_episode(self) -> None:
        cm, self._episode_cm = self._episode_cm, None
        self._loop, self._done = None, True
        if cm is not None:
            cm.__exit__(None, None, None)

    @property
    def reward_config(self) -> dict[str, float]:
        return asdict(self.reward_scheme)

    @property
    def loop(self) -> EpisodeLoop | None:
        """The episode being played (its steps, budgets and what they showed)."""
        return self._loop

    @property
    def current_query(self) -> Query | None:
        """The query being played (for oracle rollouts and logging; agents see only text)."""
        return self._query
