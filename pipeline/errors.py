"""NetGauge's one exception hierarchy: every failure the pipeline reports is a NetGaugeError.

Messages say what was wrong, what was expected, and which key or input caused it.
Agent misbehaviour never fails a stage: an agent that cannot reply raises an
`AgentFailure` to the play loop (pipeline/runner.py), which records it as a typed step and
ends the episode, so it is a typed `Outcome` in the results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class NetGaugeError(Exception):
    """Base class of every error NetGauge raises on purpose."""


class ConfigError(NetGaugeError):
    """A configuration value, key or name is wrong; raised before any work starts."""


class DataError(NetGaugeError):
    """An input file is missing or unreadable, or a stored shard does not match its schema."""


class EnvironmentFailure(NetGaugeError):
    """An emulator, sandbox or model server failed for reasons that are not the agent's."""


class QueryGenerationError(NetGaugeError):
    """An app's generator drew no valid query in its allowed tries, or its oracle disagrees
    with the analytic answer; the message names the query and the last reasons."""


class RegistryError(ConfigError):
    """A name (app, agent, backend) is not registered."""


class AgentFailure(NetGaugeError):
    """The agent cannot give this turn's reply: it failed, broke its protocol or ran out of
    time. The runner records one step of `status` (a `pipeline.core.StepStatus` value) with
    the message as its reason, ends the episode and scores it as usual. `calls` are the
    agent's calls of the turn (the `calls` table), kept with that step."""

    status = "agent_error"

    def __init__(self, reason: str, *, calls: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__(reason)
        self.calls = list(calls)


class AgentTimeout(AgentFailure):
    """The agent did not answer within its turn's or its episode's time limit."""

    status = "agent_timeout"


class AgentStopped(AgentFailure):
    """The agent ended the episode itself (a stop call, or its program exited cleanly).
    After an action nothing more is recorded (the episode is scored as it stands); an agent
    that stops before any action leaves one `agent_error` step saying so."""


class ContextOverflow(AgentFailure):
    """An agent's conversation no longer fits its model's context, even without its past
    turns: the episode ends as `context_overflow` (pipeline/llm/context.py)."""

    status = "context_overflow"
