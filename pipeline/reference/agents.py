"""The two reference agents every app ships with: the oracle and the null agent."""

from __future__ import annotations

from omegaconf import DictConfig

from pipeline.agents import Exchange, Reply
from pipeline.core import App, Query


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
