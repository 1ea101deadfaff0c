"""A minimal MCP agent for NetGauge: no model, no API key; a template for your own.

NetGauge starts it once per episode (`agent=mcp_example`, README "Agents"):

    python -m pipeline.run app=malt agent=mcp_example 'agent.command=[python,examples/mcp_agent.py]'

It reads the task, takes one read-only look with the app's diagnostic (no turn used),
makes one fixed first move with the app's action, and stops. Its moves are fixed, not
reasoned, so the episode reaches a verdict (usually "wrong"): the point is the plumbing.
Your model goes where `first_move` is: give it the task and what the look showed, and
send the action it chooses, as many turns as `turns_left` allows.
"""

from __future__ import annotations

import asyncio
import json
import os

from mcp import Client, StdioServerParameters

# One harmless look and one fixed first move per app, keyed by the app's action tool
# ($NETGAUGE_ACTION). Looks change nothing; these moves only read, so they are safe.
CODE = "def process_graph(graph):\n    return graph.number_of_nodes()\n"
LOOK = {
    "submit_code": ("run_code", {"code": CODE}),  # malt: try code on a copy
    "run_command": ("show", {"machine": "r0", "what": "addresses"}),  # routing
    "kubectl": ("kubectl_read", {"command": "kubectl get networkpolicies"}),  # k8s
}
MOVE = {
    "submit_code": {"code": CODE},
    "run_command": {"machine": "r0", "command": "ip -br addr"},
    "kubectl": {"command": "kubectl get networkpolicies", "stdin": None},
}


def server() -> str | StdioServerParameters:
    """Where the episode's tools are: a URL (http), or a command to launch (stdio)."""
    if os.environ["NETGAUGE_MCP_TRANSPORT"] == "stdio":
        argv = json.loads(os.environ["NETGAUGE_MCP_ARGV"])
        return StdioServerParameters(command=argv[0], args=argv[1:])
    return os.environ["NETGAUGE_MCP_URL"]


def first_move(task: str, seen: str, action: str) -> dict:
    """The action's arguments. Replace this with a call to your model."""
    return MOVE[action]


async def main() -> None:
    action = os.environ["NETGAUGE_ACTION"]
    async with Client(server()) as lab:
        task = (await lab.call_tool("read_task", {})).structured_content["task"]
        seen = ""
        if action in LOOK and LOOK[action][0] in os.environ["NETGAUGE_DIAGNOSTICS"].split(","):
            tool, arguments = LOOK[action]
            seen = (await lab.call_tool(tool, arguments)).structured_content["output"]
        # An episode must see at least one action: stopping before any is agent_error.
        result = await lab.call_tool(action, first_move(task, seen, action))
        done = result.structured_content
        print(f"turn {done['turn']}: {done['observation'][:200]}")
        if not done["over"]:
            await lab.call_tool("stop", {"reason": "the example makes one move only"})


if __name__ == "__main__":
    asyncio.run(main())
