"""The lab apps' read-only diagnostic: `show(machine, what)`, one fixed command per `what`.

An agent that may call diagnostics (ReAct with native tools, an MCP agent) looks at a
machine without spending a turn: `show` runs the command SHOWN[what] on the machine
through the lab's command sandbox, exactly as an agent's command runs (the machine check,
the policy, the jail, the time and output limits), and only shows its output. Every
command in SHOWN reads state and changes none, so a diagnostic is no action: it is no
step, and the episode's state (reachability, the task's attempts) is untouched; the agent
records it as a call (purpose `diagnostic`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.api import Action

if TYPE_CHECKING:  # the reply format imports SHOW; it needs no sandbox
    from emulators.netcmd.sandbox import CommandSandbox

SHOWN = {
    "addresses": "ip addr show",
    "links": "ip link show",
    "routes": "ip route show",
    "rules": "ip rule show",
    "neighbours": "ip neigh show",
    "iptables": "iptables -S",
    "nat": "iptables -t nat -S",
    "forwarding": "sysctl net.ipv4.ip_forward",
}

SHOW = Action(
    name="show",
    description=(
        "Look at one machine of the lab without changing anything and without using a turn: "
        "its addresses, links, routes, policy rules, neighbours, iptables rules (filter or "
        "nat table) or IP forwarding setting."
    ),
    parameters={
        "type": "object",
        "properties": {
            "machine": {"type": "string", "description": "a machine's name, e.g. r0"},
            "what": {
                "type": "string",
                "enum": list(SHOWN),
                "description": "; ".join(f"{k}: `{v}`" for k, v in SHOWN.items()),
            },
        },
        "required": ["machine", "what"],
        "additionalProperties": False,
    },
)


def diagnose(sandbox: CommandSandbox, name: str, arguments: dict[str, Any]) -> str:
    """What `show` shows (or why it cannot); see the module docstring."""
    if name != SHOW.name:
        return f"there is no diagnostic '{name[:100]}'; the one there is: show(machine, what)"
    machine, what = arguments.get("machine"), arguments.get("what")
    if not isinstance(machine, str) or not machine.strip():
        return 'show needs a "machine" string, e.g. r0'
    if not isinstance(what, str) or what not in SHOWN:  # a list or object: unhashable
        return f'show needs "what", one of: {", ".join(SHOWN)}'
    machine = machine.strip()
    result = sandbox.run(machine, SHOWN[what])
    return f"{machine}$ {SHOWN[what]}\n{result.output.rstrip() or '(no output)'}"
