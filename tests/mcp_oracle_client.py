"""An MCP agent for the tests, written with the official SDK: it plays the oracle's actions.

Started by NetGauge as an agent command (`agent.command`), it connects as its environment
says (streamable HTTP to $NETGAUGE_MCP_URL, or stdio by launching $NETGAUGE_MCP_ARGV),
reads the task, then calls the action tool with the arguments the test wrote for its
query ($ORACLE_FILE: {query_id: [arguments of turn 1, turn 2, ...]}) until a result says
the episode is over. It reports made-up token counts in `_meta` (NetGauge records them).
$ORACLE_MODE=stop calls `stop` after the first action instead; =unknown calls a tool that
does not exist, over and over. $ORACLE_LOOK ({"tool": …, "arguments": …}) names a read-only
diagnostic it calls before each action.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters

USAGE = {"netgauge/usage": {"prompt_tokens": 11, "completion_tokens": 3}}


def _server() -> str | StdioServerParameters:
    if os.environ["NETGAUGE_MCP_TRANSPORT"] == "stdio":
        argv = json.loads(os.environ["NETGAUGE_MCP_ARGV"])
        return StdioServerParameters(command=argv[0], args=argv[1:])
    return os.environ["NETGAUGE_MCP_URL"]


async def play() -> None:
    with open(os.environ["ORACLE_FILE"]) as f:
        actions = json.load(f)[os.environ["NETGAUGE_QUERY_ID"]]
    mode = os.environ.get("ORACLE_MODE", "oracle")
    action = os.environ["NETGAUGE_ACTION"]
    look = json.loads(os.environ.get("ORACLE_LOOK", "null"))
    async with Client(_server()) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {action, "read_task", "stop"} <= names, names
        task = await client.call_tool("read_task", {})
        with open(os.environ["NETGAUGE_TASK_FILE"]) as f:
            assert task.structured_content["task"] == f.read()
        if mode == "unknown":
            while True:
                await client.call_tool("format_disk", {})
        for arguments in actions:
            if look is not None:
                assert look["tool"] in os.environ["NETGAUGE_DIAGNOSTICS"].split(","), look
                seen = await client.call_tool(look["tool"], look["arguments"])
                assert not seen.is_error and seen.structured_content["output"], seen
            result = await client.call_tool(action, arguments, meta=USAGE)
            if mode == "stop":
                await client.call_tool("stop", {"reason": "enough"})
                return
            if result.structured_content.get("over"):
                return


if __name__ == "__main__":
    asyncio.run(play())
    sys.exit(0)
