"""One episode of an MCP agent: its tools, its server and the user's program.

`start(task)` opens the episode's MCP server (pipeline/mcp/server.py) and starts the
agent's program with the task and the server's address in its environment:

    NETGAUGE_MCP_TRANSPORT      http or stdio (agent.transport)
    NETGAUGE_MCP_URL            http: the streamable HTTP endpoint to connect to
    NETGAUGE_MCP_COMMAND        stdio: the command that launches the MCP server (a shell
    NETGAUGE_MCP_ARGV           line), and the same as a JSON list of words
    NETGAUGE_TASK_FILE          a file holding the task (also the `read_task` tool)
    NETGAUGE_ACTION             the name of the tool that acts (e.g. run_command)
    NETGAUGE_ANSWER             detect, localize: the tool that answers (submit_answer),
                                else empty; NETGAUGE_TASK the task kind (mitigate, ...)
    NETGAUGE_DIAGNOSTICS        the read-only tools, comma-separated (e.g. show; may be empty)
    NETGAUGE_MAX_TURNS          the turn budget: calls of that tool
    NETGAUGE_TURN_TIMEOUT_S     the time limits (agent.turn_timeout_s, episode_timeout_s)
    NETGAUGE_EPISODE_TIMEOUT_S
    NETGAUGE_QUERY_ID           the query's id (for the agent's own logs)

`reply(observation)` is one turn: the observation becomes the result of the agent's last
action, and the agent's next action (within the turn's and the episode's time limits) is
the reply, written by the app's reply format. `close(end)` gives the last action its
result, then ends the program (pipeline/mcp/process.py) and the server.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from pipeline import answers
from pipeline.agents import EpisodeEnd, Probe, Reply
from pipeline.config import ROOT
from pipeline.core import Query, ReplyFormat, diagnostics
from pipeline.errors import AgentFailure
from pipeline.heartbeat import waiting
from pipeline.mcp import bridge
from pipeline.mcp.channel import Channel
from pipeline.mcp.config import MCPAgentConfig
from pipeline.mcp.process import AgentProcess, environment
from pipeline.mcp.server import HttpServer, tool_server


class Session:
    """See the module docstring. Without `argv`, nobody is started: the URL goes to
    `announce` and a person's MCP client plays (`python -m pipeline.mcp`)."""

    def __init__(
        self,
        cfg: MCPAgentConfig,
        reply_format: ReplyFormat,
        query: Query,
        max_turns: int,
        *,
        argv: list[str] | None,
        announce: Callable[[str], None] | None = None,
        probe: Probe | None = None,
    ) -> None:
        self.cfg = cfg
        self.query = query
        self.max_turns = max_turns
        self._format = reply_format
        self._argv = argv
        self._announce = announce
        self._probe = probe
        self._stack = contextlib.ExitStack()
        self._channel: Channel | None = None
        self._process: AgentProcess | None = None
        self._deadline = 0.0

    @property
    def started(self) -> bool:
        return self._channel is not None

    def start(self, task: str) -> None:
        cfg = self.cfg
        self._channel = Channel(
            self._format.action,
            task,
            self.max_turns,
            cfg.max_bad_calls,
            diagnostics=diagnostics(self._format),
            probe=self._probe,
            max_diagnostics=cfg.max_diagnostics,
            answer=getattr(self._format, "answer_action", None),
        )
        server = self._stack.enter_context(HttpServer(tool_server(self._channel)))
        self._deadline = time.monotonic() + cfg.episode_timeout_s
        if self._announce is not None:
            self._announce(server.url)
        if self._argv is None:
            return
        process = AgentProcess(cfg.memory_mb)
        self._stack.callback(process.stop, cfg.grace_s)  # before the server stops
        self._process = process
        task_file = process.workdir / "task.txt"
        task_file.write_text(task, encoding="utf-8", errors="surrogateescape")
        env = environment(
            process.workdir, self._variables(server.url, task_file), cfg.env, cfg.pass_env
        )
        process.start(self._argv, env, ROOT / (cfg.cwd or "."))

    def _variables(self, url: str, task_file: Path) -> dict[str, str]:
        cfg = self.cfg
        looks = self._channel.diagnostics if self._channel is not None else ()
        out = {
            "NETGAUGE_MCP_TRANSPORT": cfg.transport,
            "NETGAUGE_TASK_FILE": str(task_file),
            "NETGAUGE_ACTION": self._format.action.name,
            "NETGAUGE_ANSWER": self._channel.answer.name
            if self._channel is not None and self._channel.answer is not None
            else "",
            "NETGAUGE_TASK": self.query.task,
            "NETGAUGE_DIAGNOSTICS": ",".join(d.name for d in looks),
            "NETGAUGE_MAX_TURNS": str(self.max_turns),
            "NETGAUGE_TURN_TIMEOUT_S": str(cfg.turn_timeout_s),
            "NETGAUGE_EPISODE_TIMEOUT_S": str(cfg.episode_timeout_s),
            "NETGAUGE_QUERY_ID": self.query.query_id,
        }
        if cfg.transport == "stdio":
            return out | bridge.environment(url)
        return out | {"NETGAUGE_MCP_URL": url}

    def reply(self, observation: str) -> Reply:
        if self._channel is None:
            raise RuntimeError("reply() before start(): the episode has no MCP server yet")
        cfg = self.cfg
        timeout, why = (
            cfg.turn_timeout_s,
            f"no action within agent.turn_timeout_s={cfg.turn_timeout_s} s",
        )
        left = self._deadline - time.monotonic()
        if left < timeout:
            timeout = max(0.0, left)
            why = f"the episode's limit agent.episode_timeout_s={cfg.episode_timeout_s} s passed"
        with waiting(f"the MCP agent's next action ({self.query.query_id})"):
            arguments, calls = self._channel.exchange(observation, timeout, why, self._gone)
        prompt = [c["prompt_tokens"] for c in calls if c["prompt_tokens"] is not None]
        completion = [c["completion_tokens"] for c in calls if c["completion_tokens"] is not None]
        return Reply(
            answers.render_call(self._format, self._channel.acted, arguments),
            prompt_tokens=sum(prompt) if prompt else None,
            completion_tokens=sum(completion) if completion else None,
            calls=calls,
        )

    def _gone(self) -> AgentFailure | None:
        return self._process.ended() if self._process is not None else None

    def close(self, end: EpisodeEnd) -> None:
        """Tell the agent how the episode ended; end its program and the server."""
        if self._channel is not None:
            self._channel.finish(end.observation, end.reason)
        self._stack.close()
