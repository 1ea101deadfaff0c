"""The one play loop: observation -> reply -> step -> next observation.

The runner (agents, the MCP and A2A doors among them), the SFT export (the oracle) and the
Gym env (a trainer's policy) all play episodes through `EpisodeLoop`, opened by `played`,
which own what they must agree on: every reply goes through `untrusted.step` (bounded
before the app parses it); the episode ends when a step says done or after the app's turn
limit (or a lower one the caller sets).

It is also the one guard between what an agent caused and the pipeline: whatever a step
or a diagnostic raises while the app parses, checks, runs or reads back a reply is the
environment's failure, never a crashed cell. The app types what is the agent's fault (a
reply it cannot parse: parse_error; one its sandbox refuses: blocked) as ordinary steps;
anything else raised becomes an `env_error` step holding the reason (the exception's type
and message; the traceback goes to the log), which ends the episode and which the run
policy retries or records. `played` then raises the failure inside the environment's
episode block, so the environment sees it and drops what the episode used (a lab is
stopped and built again, never reused), and keeps it from the caller, for whom it is the
recorded step.

Detect and localize episodes (`answers`, pipeline/answers.py): a reply whose first JSON
object holds "answer" is read here, with the one answer parser, and never reaches the app.

The read budget: an episode may declare `read_budget`, the bytes of output (step outputs
and diagnostics, UTF-8) its agent may read. Every action still runs; once the budget is
spent its output is replaced by a notice saying so (the step that crosses it shows what
fits, then the notice), so a budget failure is visible as one. What counts is what the
agent's actions read: the outputs of steps whose action ran (READING) and of diagnostics;
feedback (a parse error, a blocked step's reason, an answer's receipt) is always shown and
never counted. Each step's `Shown` says what it showed: bytes, and the diagnostics run
before it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from pipeline import untrusted
from pipeline.agents import Exchange
from pipeline.answers import AnswerSpec, answer_spec, answer_step
from pipeline.core import App, Environment, Episode, Query, StepResult, StepStatus
from pipeline.errors import EnvironmentFailure

log = logging.getLogger(__name__)
MAX_REASON_CHARS = 2000


def environment_failure(err: BaseException, doing: str) -> EnvironmentFailure:
    """`err` as the environment's failure: itself when it is one, else an EnvironmentFailure
    saying what was being done and what was raised (the traceback is logged)."""
    if isinstance(err, EnvironmentFailure):
        return err
    log.error("%s raised %s", doing, type(err).__name__, exc_info=err)
    failure = EnvironmentFailure(f"{doing} raised {type(err).__name__}: {err}"[:MAX_REASON_CHARS])
    failure.__cause__ = err
    return failure


# The statuses of a step whose action ran: its output is what the agent read.
READING = (StepStatus.OK, StepStatus.EXEC_ERROR, StepStatus.TIMEOUT, StepStatus.RESOURCE_LIMIT)


@dataclass
class Shown:
    """What one turn showed its agent: the bytes of its output (as shown), and the
    diagnostics run before it, with the bytes they showed."""

    bytes_out: int = 0
    diagnostics: int = 0
    diagnostic_bytes: int = 0


@dataclass
class EpisodeLoop:
    episode: Episode
    max_turns: int | None = None  # None: the episode's own limit
    observation: str = ""  # what the agent sees before its next reply
    history: list[Exchange] = field(default_factory=list)  # the turns played so far
    steps: list[StepResult] = field(default_factory=list)
    failure: EnvironmentFailure | None = None  # why the environment failed, if it did
    answers: AnswerSpec | None = None  # detect / localize: the answer the episode ends with
    shown: list[Shown] = field(default_factory=list)  # one per step
    pending: Shown = field(default_factory=Shown)  # diagnostics since the last step
    bytes_read: int = 0  # every output and diagnostic shown so far
    read_budget: int | None = None  # the episode's `read_budget` (None: unbounded)

    def __post_init__(self) -> None:
        own = self.episode.max_turns
        self.max_turns = own if self.max_turns is None else min(own, self.max_turns)
        self.read_budget = getattr(self.episode, "read_budget", None)
        self.observation = self.episode.observe()

    @property
    def read_left(self) -> int | None:
        """Bytes the agent may still read (None: no budget)."""
        if self.read_budget is None:
            return None
        return max(0, self.read_budget - self.bytes_read)

    @property
    def turn(self) -> int:
        """Turns played so far (the next reply is turn `turn + 1`)."""
        return len(self.steps)

    @property
    def over(self) -> bool:
        if not self.steps:
            return self.turn >= (self.max_turns or 0)
        last = self.steps[-1]
        return bool(last.done) or last.status is StepStatus.ENV_ERROR or self.at_limit

    @property
    def at_limit(self) -> bool:
        return self.turn >= (self.max_turns or 0)

    def step(self, reply: str) -> StepResult:
        """Play one reply; whatever it raises is an env_error step (the module docstring)."""
        if self.over:
            raise RuntimeError("the episode is over; no further step can be played")
        try:
            result = self._answer(reply) or untrusted.step(self.episode, reply)
        except Exception as err:  # recorded as the step; the traceback is logged
            self.failure = environment_failure(err, "playing the reply")
            result = StepResult("", StepStatus.ENV_ERROR, "", error=str(self.failure), done=True)
        if result.status in READING and result.answer is None:
            output, size = self._show(result.output)
            result = replace(result, output=output) if output != result.output else result
        else:  # the loop's or the app's feedback (a parse error, a refusal): always shown
            size = len(result.output.encode("utf-8", "surrogatepass"))
        self.shown.append(replace(self.pending, bytes_out=size))
        self.pending = Shown()
        self.history.append(Exchange(self.observation, reply))
        self.steps.append(result)
        self.observation = result.output
        return result

    @property
    def diagnose(self) -> Any:
        """The episode's read-only diagnostics (`diagnose(name, arguments)`), or None when
        it has none; what one raises is raised as the environment's failure, and what one
        shows counts against the read budget like any output (it uses no turn)."""
        if getattr(self.episode, "diagnose", None) is None:
            return None
        return self._diagnose

    def _diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        try:
            output = self.episode.diagnose(name, arguments)  # type: ignore[attr-defined]
        except Exception as err:  # raised on as the environment's failure
            self.failure = environment_failure(err, f"the diagnostic {str(name)[:100]!r}")
            raise self.failure from err
        shown, size = self._show(output)
        self.pending.diagnostics += 1
        self.pending.diagnostic_bytes += size
        return shown

    def _answer(self, reply: object) -> StepResult | None:
        if self.answers is None or untrusted.refusal(reply) is not None:
            return None
        return answer_step(self.answers, str(reply))

    def _show(self, text: str) -> tuple[str, int]:
        """`text` as the read budget lets it be shown, and the bytes of it shown."""
        data = text.encode("utf-8", "surrogatepass")
        left = self.read_left
        if left is None or len(data) <= left:
            self.bytes_read += len(data)
            return text, len(data)
        budget = f"read budget of {kib(self.read_budget or 0)} used"
        if left == 0:
            return f"({budget}: output withheld)", 0
        head = data[:left].decode("utf-8", "ignore")
        size = len(head.encode("utf-8", "surrogatepass"))
        self.bytes_read += size
        return f"{head}\n({budget}: the other {len(data) - size} bytes withheld)", size


def kib(size: int) -> str:
    """Bytes as KiB, e.g. "320 KiB", "0.5 KiB"."""
    value = size / 1024
    return f"{value:.0f} KiB" if value == int(value) else f"{value:.1f} KiB"


class _Recorded(Exception):
    """The loop's failure, raised through the environment's episode block (which drops what
    the episode used) and kept from the caller, who has it as the env_error step."""


@contextmanager
def played(
    env: Environment,
    query: Query,
    max_turns: int | None = None,
    answers: AnswerSpec | None = None,
) -> Iterator[EpisodeLoop]:
    """The episode of `query` in `env` as a loop, for the block; see the module docstring.
    Failing to open, observe or close the episode raises out of it (EnvironmentFailure when
    the environment says so)."""
    try:
        with env.episode(query) as episode:
            loop = EpisodeLoop(episode, max_turns, answers=answers)
            yield loop
            if loop.failure is not None:
                raise _Recorded() from loop.failure
    except _Recorded:
        pass


def play_oracle(app: App, env: Environment, query: Query) -> EpisodeLoop:
    """The oracle's episode of `query` in `env`, played to its end (the SFT export and the
    apps' benchmarks); what became of each turn is in the returned loop's `steps`."""
    with played(env, query, answers=answer_spec(app, query)) as loop:
        while not loop.over:
            loop.step(app.oracle_reply(query, loop.turn + 1, loop.observation))
    return loop
