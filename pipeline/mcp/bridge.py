"""The stdio transport: an MCP server on stdin/stdout relaying every call to an episode.

An MCP client that speaks stdio launches its server itself; NetGauge gives it the command
in $NETGAUGE_MCP_COMMAND (as words in $NETGAUGE_MCP_ARGV), which runs

    python -m pipeline.mcp stdio --connect <the episode's URL>

(spelled so that it finds this project's code from any directory). The bridge lists the
episode's tools and passes each call on, with the client's `_meta` (tokens it reports)
and the name it introduced itself with, and its result back. It holds no state: the
episode lives in the runner, and the bridge is in the agent's process group, so it ends
with the agent.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.server import Server
from mcp.server.stdio import stdio_server

from pipeline.mcp.channel import CLIENT_META
from pipeline.mcp.server import legacy_client_info

ROOT = Path(__file__).resolve().parents[2]  # the project whose code the bridge runs
_SPEC = "io.modelcontextprotocol/"  # the SDK's own _meta keys, set again by the relaying client


def command(url: str) -> list[str]:
    """The argv that runs the bridge to `url` with this interpreter and this project."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
        "from pipeline.mcp.__main__ import main; sys.exit(main())"
    )
    return [sys.executable, "-c", code, "stdio", "--connect", url]


def environment(url: str) -> dict[str, str]:
    """The variables that tell a stdio client how to launch the bridge."""
    argv = command(url)
    return {"NETGAUGE_MCP_COMMAND": shlex.join(argv), "NETGAUGE_MCP_ARGV": json.dumps(argv)}


async def relay(url: str) -> None:
    """Serve the tools of the MCP server at `url` on stdin/stdout until stdin closes."""
    async with Client(url) as upstream:

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return await upstream.list_tools()

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
            meta = {k: v for k, v in (ctx.meta or {}).items() if not k.startswith(_SPEC)}
            info = (ctx.meta or {}).get(f"{_SPEC}clientInfo") or legacy_client_info(ctx)
            if info:
                meta[CLIENT_META] = info
            return await upstream.call_tool(params.name, params.arguments, meta=meta or None)

        server = Server("netgauge", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
