"""Playing an FRR query: the prompt, the episode and the environment's live labs.

The episode turns each reply into one sandboxed command (vtysh on a router, or the
kernel tools of levels 1-3) and records the hosts' reachability before and after it, in
the evidence shape of levels 1-3 (generators/routing/scoring.py scores both). After a
command that may change something (anything but a vtysh that only shows), the routing
state is left to settle (lab.after_change, which retries idle BGP sessions); a state in
which every flow works counts only after the final window, longer than the OSPF dead
interval, so a fix that breaks again when a timer fires is never judged done. At level 5
the observation gives only how many required pairs fail, not which: the agent has to find
out.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from emulators.base import backend_name
from emulators.netcmd import vtysh
from emulators.netcmd.tools import TOOL_NAMES
from generators.lab.diagnostics import diagnose
from generators.lab.reply import REPLY_FORMAT
from generators.lab.step import play_command
from generators.routing.checks import Connectivity
from generators.routing.faults import Fault
from generators.routing.frr.generator import FrrPool
from generators.routing.frr.lab import FrrLab
from generators.routing.frr.topology import FrrTopology
from pipeline.core import Query, StepResult, StepStatus
from pipeline.errors import EnvironmentFailure


def build_prompt(topo: FrrTopology, max_turns: int, protocols: tuple[str, ...]) -> str:
    tools = ", ".join(TOOL_NAMES)
    traffic = " and ".join(p.upper() for p in protocols)
    seen = (
        "After each command you see its output and how many of the required host pairs "
        "fail (not which ones: find out with the tools)."
        if topo.level == 5
        else "After each command you see its output and the hosts' reachability matrix."
    )
    return "\n".join(
        [
            f"You are the network operator of a routed network emulated with "
            f"{backend_name('mininet')}.",
            "",
            topo.describe(),
            "",
            "Something is broken: some hosts cannot reach each other. Find the problems and "
            f"fix them so that every host reaches every other host ({traffic}; an echo on "
            "port 7 for TCP and UDP). Routing is done by FRR: fix the routing protocols' "
            "configuration where it is wrong, and anything else on the path.",
            "",
            f"{REPLY_FORMAT} The command runs on that machine only, without a shell. On the "
            "routers, `vtysh -c 'LINE' [-c 'LINE' ...]` talks to FRR, the lines in order as "
            "in an interactive session (e.g. -c 'configure terminal' -c 'router ospf' "
            "-c 'network 10.0.1.0/24 area 0'); `show` lines only look. Changes in the "
            "running configuration take effect at once. vtysh options other than -c and "
            "-d are refused, and so are commands that touch files or the host (log file, "
            f"copy, start-shell, ping). Other tools allowed: {tools} (as on a Linux host; "
            "ping needs -c N).",
            f"{seen} Routing needs a few seconds to converge after a change; the check waits "
            f"for it. You have {max_turns} turns; the task ends as soon as every check passes "
            "and keeps passing. Do not break what works.",
        ]
    )


def render(now: Connectivity, blind: bool) -> str:
    if not blind:
        return now.render()
    lines = []
    for protocol, reach in now.by_protocol.items():
        failing = len(reach.failed)
        lines.append(
            f"{protocol.upper()}: {reach.pairs - failing} of {reach.pairs} required host "
            f"pairs work, {failing} fail."
        )
    return "\n".join(lines)


def _read_only(command: str) -> bool:
    """A vtysh command whose lines only look (no settling needed after it)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    if not argv or argv[0].rsplit("/", 1)[-1] != "vtysh":
        return False
    checked = vtysh.check_vtysh(argv[1:], vtysh.DAEMONS)
    return checked.reason is None and vtysh.read_only(checked.lines)


class FrrEpisode:
    """One FRR query being played; see the module docstring."""

    def __init__(self, query: Query, lab: FrrLab, first: Connectivity, max_turns: int) -> None:
        self.query = query
        self.max_turns = max_turns
        self._lab = lab
        self._blind = lab.topo.level == 5
        self._now = first
        self._turn = 0

    def observe(self) -> str:
        return (
            f"{self.query.prompt}\n\nRequired traffic now (turn 1 of {self.max_turns}):\n"
            f"{render(self._now, self._blind)}"
        )

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        assert self._lab.sandbox is not None
        return diagnose(self._lab.sandbox, name, arguments)

    def _evidence(self, before: Connectivity, **facts: Any) -> dict[str, Any]:
        after = self._now.evidence()
        traffic = {
            p: {"before": rows, "after": after[p]}
            for p, rows in before.evidence().items()
            if p != "icmp"
        }
        return {
            **facts,
            "devices": list(before.icmp.devices),
            "before": before.icmp.rows(),
            "after": self._now.icmp.rows(),
            **({"traffic": traffic} if traffic else {}),
        }

    def step(self, reply: str) -> StepResult:
        assert self._lab.sandbox is not None
        self._turn += 1
        last = self._turn >= self.max_turns
        before = self._now
        started = time.perf_counter()
        played = play_command(self._lab.sandbox, reply)
        if played.result is None:
            output = f"{played.shown}\n\n{self._status_text()}"
            evidence = self._evidence(before, parsed=False)
            return StepResult("", StepStatus.PARSE_ERROR, output, evidence, last, played.error)
        probe_s = 0.0
        if played.changed_network and not _read_only(played.result.command):
            probe_started = time.perf_counter()
            self._now = self._lab.after_change()  # done only if it lasts past a dead interval
            probe_s = time.perf_counter() - probe_started
        evidence = self._evidence(
            before,
            **played.facts,
            reason=played.result.reason,
            cmd_s=round(played.result.exec_s, 4),
            probe_s=round(probe_s, 4),
        )
        return StepResult(
            action=played.action,
            status=played.status,
            output=f"{played.shown}\n\n{self._status_text()}",
            evidence=evidence,
            done=self._now.full or last,
            error=played.error if played.status is not StepStatus.OK else None,
            exec_s=time.perf_counter() - started,
        )

    def _status_text(self) -> str:
        if self._now.full:
            shown = render(self._now, self._blind)
            return f"{shown}\nEverything checked works: the network is repaired."
        left = self.max_turns - self._turn
        return (
            f"Required traffic now (turn {self._turn + 1} of {self.max_turns}, {left} left):\n"
            f"{render(self._now, self._blind)}\n{REPLY_FORMAT}"
        )


@contextmanager
def frr_episode(pool: FrrPool, query: Query, max_turns: int) -> Iterator[FrrEpisode]:
    """The episode of an FRR query on a reset lab of its topology, faults injected."""
    topo = FrrTopology.from_name(query.env_key)
    lab = pool.get(topo)
    lab.inject([Fault.from_json(f) for f in query.ground_truth["faults"]])
    first = lab.wait_broken()
    if first.full:
        raise EnvironmentFailure(
            f"{query.query_id}: the injected faults left every pair reachable; they were "
            "validated when generated, so this network behaves differently"
        )
    yield FrrEpisode(query, lab, first, max_turns)
