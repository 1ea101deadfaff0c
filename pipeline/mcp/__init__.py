"""MCP agents: NetGauge serves each episode's tools over MCP to the user's agent program.

    config.py   the schema of conf/agent/*.yaml files with `kind: mcp`
    agent.py    MCPAgent, the agent kind: one Session per episode
    session.py  an episode: server, the program and its environment variables, time limits
    channel.py  the tools' state: action calls in as turns, observations out as results
    server.py   the MCP server (the official SDK) over streamable HTTP on loopback
    bridge.py   the stdio transport: a stdio MCP server relaying to an episode's URL
    process.py  the user's program: its environment, process group, cgroup and end
    serve.py    `python -m pipeline.mcp app=…`: one episode for a person's MCP client

Tools: the app's action (e.g. `run_command(machine, command)`, `kubectl(command, stdin)`,
`submit_code(code)`), each call one turn; its read-only diagnostics (`show(machine, what)`,
`kubectl_read(command)`, `run_code(code)`), using no turn; `read_task`; `stop`.
"""

from pipeline.registry import AgentSpec

AGENTS = [AgentSpec("mcp", ".agent:MCPAgent", ".config:MCPAgentConfig")]
