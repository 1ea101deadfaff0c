"""What the agent reads: the task prompt, the reply format, and how replies are parsed.

A reply is one JSON object {"machine": ..., "command": ...}; the first JSON object in
the reply text counts (code fences and prose around it are fine).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from emulators.netcmd.tools import RULES
from generators.routing.topology import RoutingTopology

REPLY_FORMAT = (
    'Reply with exactly one JSON object per turn: {"machine": "<r0 or a host name>", '
    '"command": "<one command>"}.'
)


@dataclass(frozen=True)
class Command:
    machine: str
    command: str


def build_prompt(topo: RoutingTopology, max_turns: int) -> str:
    tools = ", ".join(RULES)
    return "\n".join(
        [
            "You are the network operator of a small IP network emulated with Mininet.",
            "",
            topo.describe(),
            "",
            "Something is broken: some machines cannot ping each other. Find the problems "
            "and fix them so that every machine (r0 and every host) can ping every other "
            "one. The reachability matrix below lists, for each machine, the machines it can "
            "ping; X marks one it cannot.",
            "",
            f"{REPLY_FORMAT} The command runs on that machine only, as root, without a "
            "shell: no pipes, redirections, command lists (;, &&) or substitutions. Allowed "
            f"tools: {tools} (sysctl for net.* keys only; cat for files under /proc/sys/net/ "
            "and /proc/net/; ping needs -c N). Switches are not machines.",
            f"After each command you see its output and the new matrix. You have {max_turns} "
            "turns; the task ends as soon as every pair can ping. Do not break what works.",
        ]
    )


def parse_reply(text: str) -> Command | str:
    """The reply's command, or the reason there is none (shown to the agent)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            break
        start = text.find("{", start + 1)
    else:
        return f"the reply holds no JSON object. {REPLY_FORMAT}"
    machine, command = value.get("machine"), value.get("command")
    if not isinstance(machine, str) or not machine.strip():
        return f'the JSON object has no "machine" string. {REPLY_FORMAT}'
    if not isinstance(command, str) or not command.strip():
        return f'the JSON object has no "command" string. {REPLY_FORMAT}'
    return Command(machine.strip(), command.strip())
