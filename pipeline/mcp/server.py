"""An episode's MCP server: the tools of a Channel, served over streamable HTTP on loopback.

`tool_server(channel)` is the MCP server (the official SDK's low-level `Server`: the app's
action and its read-only diagnostics with their own JSON schemas, `read_task` and `stop`).
`HttpServer` runs it with uvicorn in a thread of its own, on a free port of 127.0.0.1, at a
path holding a random token:

    http://127.0.0.1:<port>/<token>/mcp

so only who was given the URL (the agent's program) reaches it, and the SDK's DNS-rebinding
protection refuses requests that do not name a loopback host. The stdio transport is a
relay to this URL (pipeline/mcp/bridge.py).
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server import Server

from pipeline.core import Action
from pipeline.errors import EnvironmentFailure
from pipeline.mcp.channel import CLIENT_META, STOP_TOOL, TASK_TOOL, Channel

STARTUP_S = 10.0  # the server must listen within this, or the episode is an env_error
_NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}


def tools(
    action: Action,
    diagnostics: Sequence[Action] = (),
    max_diagnostics: int = 0,
    answer: Action | None = None,
) -> list[types.Tool]:
    """The tools an episode serves: the app's action (and submit_answer in a detect or
    localize episode), its diagnostics, read_task and stop."""
    looks = [
        types.Tool(
            name=d.name,
            description=(
                f"{d.description} At most {max_diagnostics} between two calls of {action.name}."
            ),
            input_schema=d.parameters,
        )
        for d in diagnostics
    ]
    return [
        types.Tool(
            name=action.name,
            description=(
                f"{action.description} Each call is one turn of the episode; its result is "
                "what the environment shows next."
            ),
            input_schema=action.parameters,
        ),
        *(
            [
                types.Tool(
                    name=answer.name,
                    description=f"{answer.description} It is one turn, the last.",
                    input_schema=answer.parameters,
                )
            ]
            if answer is not None
            else []
        ),
        *looks,
        types.Tool(
            name=TASK_TOOL,
            description="The task (the episode's first observation), the tool to act with "
            "and how many turns are left.",
            input_schema=_NO_ARGUMENTS,
        ),
        types.Tool(
            name=STOP_TOOL,
            description="End the episode now, when you are done or give up; it is scored "
            "as it stands.",
            input_schema={
                "type": "object",
                "properties": {"reason": {"type": "string", "description": "why, optionally"}},
                "additionalProperties": False,
            },
        ),
    ]


def tool_server(channel: Channel) -> Server[Any]:
    """The MCP server whose tools act on `channel`."""
    listed = types.ListToolsResult(
        tools=tools(channel.action, channel.diagnostics, channel.max_diagnostics, channel.answer)
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        meta = dict(ctx.meta or {})
        info = legacy_client_info(ctx)
        if info is not None and CLIENT_META not in meta:
            meta[CLIENT_META] = info
        result = await channel.call(params.name, params.arguments, meta)
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)],
            structured_content=result.data,
            is_error=result.error,
        )

    return Server(
        "netgauge",
        version="1",
        instructions=(
            f"One NetGauge episode: read the task with {TASK_TOOL}, act with "
            f"{channel.action.name} (one call per turn), and call {STOP_TOOL} when done."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def legacy_client_info(ctx: Any) -> dict[str, Any] | None:
    """The name and version a client gave in the initialize handshake (clients of the
    2026 protocol send theirs in every request's _meta instead)."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    return info.model_dump(include={"name", "version"}) if info is not None else None


class HttpServer:
    """`server` over streamable HTTP on 127.0.0.1, in a thread, while the block runs."""

    def __init__(self, server: Server[Any]) -> None:
        self._server = server
        self._token = secrets.token_urlsafe(18)
        self._sock: socket.socket | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def __enter__(self) -> HttpServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._sock = sock
        app = self._server.streamable_http_app(streamable_http_path=f"/{self._token}/mcp")
        config = uvicorn.Config(
            app, log_level="warning", timeout_graceful_shutdown=1, lifespan="on"
        )
        self._uvicorn = uvicorn.Server(config)
        served = self._uvicorn
        self._thread = threading.Thread(
            target=lambda: asyncio.run(served.serve(sockets=[sock])),
            name="mcp-server",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + STARTUP_S
        while not served.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.__exit__()
                raise EnvironmentFailure(f"the episode's MCP server did not start in {STARTUP_S} s")
            time.sleep(0.01)
        port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/{self._token}/mcp"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
            if self._thread.is_alive() and self._uvicorn is not None:
                self._uvicorn.force_exit = True
                self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
