"""`MCPAgent`: the user's agent program, acting through the episode's tools over MCP.

Each episode gets a Session (pipeline/mcp/session.py): an MCP server of its own and the
user's program, started on the first turn with the task. Every call of the app's action
tool is one turn, played through the real environment like any agent's reply; its result
is the step's output; the app's read-only diagnostics (`probe`) are tools too, using no
turn. The episode ends when the app says done, when the agent stops (the
`stop` tool, or its program exits), or at the turn budget; a program that fails, misbehaves
or does not answer in time ends it as `agent_error` / `agent_timeout` with the reason.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from omegaconf import DictConfig, OmegaConf

from pipeline import answers
from pipeline.agents import EpisodeEnd, Exchange, Probe, Reply
from pipeline.core import App, Query
from pipeline.mcp.config import MCPAgentConfig
from pipeline.mcp.session import Session


class MCPAgent:
    def __init__(
        self,
        cfg: DictConfig | MCPAgentConfig,
        app: App,
        *,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        self.cfg = cfg if isinstance(cfg, MCPAgentConfig) else OmegaConf.to_object(cfg)
        self.name = self.cfg.name
        # No command and no one to announce the URL to: nobody could ever play.
        self._argv = None if announce is not None else self.cfg.require_command()
        self._announce = announce
        self._app = app
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    @contextmanager
    def episode(
        self, query: Query, max_turns: int, probe: Probe | None = None
    ) -> Iterator[EpisodeEnd]:
        session = Session(
            self.cfg,
            answers.reply_format(self._app, query),
            query,
            max_turns,
            argv=self._argv,
            announce=self._announce,
            probe=probe,
        )
        with self._lock:
            self._sessions[query.query_id] = session
        end = EpisodeEnd()
        try:
            yield end
        finally:
            with self._lock:
                del self._sessions[query.query_id]
            session.close(end)

    def reply(self, query: Query, observation: str, history: list[Exchange], turn: int) -> Reply:
        with self._lock:
            session = self._sessions.get(query.query_id)
        if session is None:
            raise RuntimeError(f"{query.query_id}: an MCP agent replies only inside episode()")
        if not session.started:
            session.start(observation)
        return session.reply(observation)
