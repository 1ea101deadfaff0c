"""The agent interface and the two reference agents every app ships with.

An agent sees what a human operator would: the task prompt, then one observation per
turn, and answers with text. How the text becomes an action is the app's job (it
parses code or a JSON command), so an LLM agent plugs in with the same interface:

    reply(query, observation, history, turn) -> Reply

`query` is passed so the oracle can reach the ground truth; other agents must use only
`query.prompt`, the observations and the history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from omegaconf import DictConfig

from pipeline.core import App, Query


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


class OracleAgent:
    """Acts from the ground truth: proves every query solvable and the scorer fair."""

    def __init__(self, cfg: DictConfig, app: App) -> None:
        self.name = cfg.name
        self._app = app

    def reply(self, query: Query, observation: str, history: list[Exchange], turn: int) -> Reply:
        return Reply(self._app.oracle_reply(query, turn, observation))


class NullAgent:
    """Answers nothing: every query must score 0 % correct against it."""

    def __init__(self, cfg: DictConfig, app: App) -> None:
        self.name = cfg.name

    def reply(self, query: Query, observation: str, history: list[Exchange], turn: int) -> Reply:
        return Reply("")
