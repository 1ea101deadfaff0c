"""What the agent reads before its first task: the lab, the rules, the reply format."""

from __future__ import annotations

from emulators.base import backend_name
from generators.lab.reply import REPLY_FORMAT
from generators.netllmbench.config import NetLLMBenchConfig
from generators.netllmbench.lab import Network
from generators.netllmbench.tasks import Task

TOOLS = "ip, ifconfig, route, arp, ping (with -c N), cat (files under /proc/sys/net/)"


def build_prompt(
    net: Network, played: list[Task], prepared: list[Task], cfg: NetLLMBenchConfig
) -> str:
    backend = backend_name(cfg.emulator)
    done = ""
    if prepared:
        count = len(prepared)
        lines = "\n".join(f"  - {t.done_text()}" for t in prepared)
        done = f"\n\nDone already ({count} earlier task{'s' * (count > 1)}):\n{lines}"
        start = "Part of the configuration is done already (listed above); you get one more task."
    elif len(played) == 1:
        start = "You get one task."
    else:
        start = f"You get {len(played)} tasks, one at a time; each builds on the ones before."
    return "\n".join(
        [
            f"You are configuring a small IP network emulated with {backend}.",
            "",
            net.describe(configured=bool(prepared)) + done,
            "",
            f"{start} You have {cfg.attempts} attempts per task: each attempt is one "
            "command on one machine. After each command you see its output and whether "
            "the task is complete. Do not undo earlier tasks, and make only permanent "
            "changes (no address lifetimes, no temporary entries).",
            f"{REPLY_FORMAT} The command runs on that machine only, as root, without a "
            f"shell: no pipes, redirections or command lists. Allowed tools: {TOOLS}. "
            "Switches are not machines.",
        ]
    )
