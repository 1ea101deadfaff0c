"""The one play loop: observation -> reply -> step -> next observation.

The runner (agents), the SFT export (the oracle) and the Gym env (a trainer's policy)
all play episodes through `EpisodeLoop`, which owns what they must agree on: every reply
goes through `untrusted.step` (bounded before the app parses it), an environment failure
during a step becomes an `env_error` step that ends the episode, and the episode ends
when a step says done or after the app's turn limit (or a lower one the caller sets).
Who writes the replies, and what is kept of each turn, is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline import untrusted
from pipeline.agents import Exchange
from pipeline.core import App, Environment, Episode, Query, StepResult, StepStatus
from pipeline.errors import EnvironmentFailure


@dataclass
class EpisodeLoop:
    episode: Episode
    max_turns: int | None = None  # None: the episode's own limit
    observation: str = ""  # what the agent sees before its next reply
    history: list[Exchange] = field(default_factory=list)  # the turns played so far
    steps: list[StepResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        own = self.episode.max_turns
        self.max_turns = own if self.max_turns is None else min(own, self.max_turns)
        self.observation = self.episode.observe()

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
        """Play one reply; the environment's failure is an env_error step, not an error."""
        if self.over:
            raise RuntimeError("the episode is over; no further step can be played")
        try:
            result = untrusted.step(self.episode, reply)
        except EnvironmentFailure as err:
            result = StepResult("", StepStatus.ENV_ERROR, "", error=str(err), done=True)
        self.history.append(Exchange(self.observation, reply))
        self.steps.append(result)
        self.observation = result.output
        return result


def play_oracle(app: App, env: Environment, query: Query) -> EpisodeLoop:
    """The oracle's episode of `query` in `env`, played to its end (the SFT export and the
    apps' benchmarks); what became of each turn is in the returned loop's `steps`."""
    with env.episode(query) as episode:
        loop = EpisodeLoop(episode)
        while not loop.over:
            loop.step(app.oracle_reply(query, loop.turn + 1, loop.observation))
    return loop
