"""The agent interface: what every agent (pipeline/reference/, pipeline/llm/, an external
one over MCP or A2A) implements and what the play loop gives it.

An agent sees what a human operator would: the task prompt, then one observation per
turn, and answers with text. How the text becomes an action is the app's job (it
parses code or a JSON command), so an LLM agent plugs in with the same interface:

    reply(query, observation, history, turn) -> Reply

`query` is passed so the oracle can reach the ground truth; other agents must use only
`query.prompt`, the observations and the history.

An agent that holds something per episode (an external agent's process and server) also
has `episode(query, max_turns)`, a context manager around the episode's turns: it yields
an `EpisodeEnd` that the runner fills in before the block ends (the last observation and
why the episode ended), so the agent can tell its program, then release what it holds.
`agent_episode` gives every agent that block (a no-op for the others). An agent that
cannot reply raises `pipeline.errors.AgentFailure` (or a subclass): a typed step, never a
failed stage.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.core import Query
from pipeline.heartbeat import waiting


@dataclass
class Exchange:
    """One past turn as the agent saw it."""

    observation: str
    reply: str


@dataclass
class Reply:
    text: str
    prompt_tokens: int | None = None  # set by agents that call a model
    completion_tokens: int | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)  # per-call metrics, if any


class Agent(Protocol):
    name: str

    def reply(
        self, query: Query, observation: str, history: list[Exchange], turn: int
    ) -> Reply: ...


# An episode's read-only diagnostics: (diagnostic's name, its arguments) -> what it shows.
Probe = Callable[[str, dict[str, Any]], str]


@dataclass
class EpisodeEnd:
    """How an episode ended, filled in by the runner for an agent's `episode` block."""

    observation: str = ""  # what the environment returned last
    reason: str = "the episode ended"  # why, in a few words (shown to external agents)


def agent_episode(
    agent: Agent, query: Query, max_turns: int, probe: Probe | None = None
) -> AbstractContextManager[EpisodeEnd]:
    """The agent's `episode(query, max_turns)` block, or one that holds nothing. An agent
    whose block takes `probe` gets the episode's read-only diagnostics (`Episode.diagnose`:
    e.g. running code on a copy of MALT's graph), when the app has any."""
    opener = getattr(agent, "episode", None)
    if opener is None:
        return _nothing(query)
    if probe is not None and "probe" in inspect.signature(opener).parameters:
        return _shown(query, opener(query, max_turns, probe=probe))
    return _shown(query, opener(query, max_turns))


@contextlib.contextmanager
def _nothing(query: Query) -> Iterator[EpisodeEnd]:
    with waiting(f"episode {query.query_id}"):
        yield EpisodeEnd()


@contextlib.contextmanager
def _shown(query: Query, block: AbstractContextManager[EpisodeEnd]) -> Iterator[EpisodeEnd]:
    """The agent's block, shown by the job's heartbeat while it lasts (pipeline/heartbeat.py)."""
    with waiting(f"episode {query.query_id}"), block as end:
        yield end
