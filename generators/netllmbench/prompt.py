"""What the agent reads before its first task: the lab, the rules, the reply format."""

from __future__ import annotations

from emulators.base import backend_name
from generators.lab.reply import REPLY_FORMAT
from generators.netllmbench.config import NetLLMBenchConfig
from generators.netllmbench.lab import Network
from generators.netllmbench.tasks import Task

TOOLS = "ip, ifconfig, route, arp, ping (with -c N), cat (files under /proc/sys/net/)"


def build_prompt(net: Network, played: list[Task], prepared: int, cfg: NetLLMBenchConfig) -> str:
    backend = backend_name(cfg.emulator)
    if prepared:
        start = (
            f"Part of the configuration is done already ({prepared} earlier "
            f"task{'s' * (prepared > 1)}); you get one more task."
        )
    elif len(played) == 1:
        start = "You get one task."
    else:
        start = f"You get {len(played)} tasks, one at a time; each builds on the ones before."
    return "\n".join(
        [
            f"You are configuring a small IP network emulated with {backend}.",
            "",
            net.describe(),
            "",
            f"{start} You have {cfg.attempts} attempts per task: each attempt is one "
            "command on one machine. After each command you see its output and whether "
            "the task is complete. Do not undo earlier tasks.",
            f"{REPLY_FORMAT} The command runs on that machine only, as root, without a "
            f"shell: no pipes, redirections or command lists. Allowed tools: {TOOLS}. "
            "Switches are not machines.",
        ]
    )
