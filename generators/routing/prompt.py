"""What the agent reads: the task prompt, the reply format, and how replies are parsed.

A reply is one JSON object {"machine": ..., "command": ...} (generators/lab/reply.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from emulators.base import backend_name
from emulators.netcmd.tools import TOOL_NAMES
from generators.lab.reply import REPLY_FORMAT
from generators.routing.topology import RoutingTopology


def build_prompt(
    topo: RoutingTopology,
    max_turns: int,
    emulator: str = "mininet",
    protocols: Sequence[str] = ("icmp", "tcp", "udp"),
) -> str:
    tools = ", ".join(TOOL_NAMES)
    others = [p.upper() for p in protocols if p != "icmp"]
    traffic = (
        f", and {' and '.join(others)} between them must work too (an echo on port 7, checked "
        "between representative pairs and shown below the matrix)"
        if others
        else ""
    )
    return "\n".join(
        [
            "You are the network operator of a small IP network emulated with "
            f"{backend_name(emulator)}.",
            "",
            topo.describe(),
            "",
            "Something is broken: some machines cannot reach each other. Find the problems "
            "and fix them so that every machine (r0 and every host) can ping every other "
            f"one{traffic}. The reachability matrix below lists, for each machine, the "
            "machines it can ping; X marks one it cannot.",
            "",
            f"{REPLY_FORMAT} The command runs on that machine only, as root, without a "
            "shell: no pipes, redirections, command lists (;, &&) or substitutions. Allowed "
            f"tools: {tools} (sysctl for net.* keys only; cat for files under /proc/sys/net/ "
            "and /proc/net/; ping needs -c N). Switches are not machines.",
            f"After each command you see its output and the new checks. You have {max_turns} "
            "turns; the task ends as soon as every check passes. Do not break what works, "
            "and make only permanent changes (no address lifetimes, no temporary entries).",
        ]
    )
