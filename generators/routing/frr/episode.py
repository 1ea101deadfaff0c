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
from collections.abc import Iterator
from contextlib import contextmanager

from emulators.base import backend_name
from emulators.netcmd import vtysh
from emulators.netcmd.tools import TOOL_NAMES
from generators.lab.reply import REPLY_FORMAT
from generators.lab.step import CommandStep
from generators.routing.checks import Connectivity
from generators.routing.episode import ProbedEpisode
from generators.routing.faults import Fault
from generators.routing.frr.generator import FrrPool
from generators.routing.frr.intent import summary
from generators.routing.frr.lab import FrrLab
from generators.routing.frr.topology import FrrTopology
from pipeline.api import EnvironmentFailure, Query


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
            "configuration where it is wrong, and anything else on the path. The checks read "
            "the routing state too: every adjacency and session of the network described "
            "above must be up, each subnet learned by the protocol meant to carry it, and no "
            "static route added; traffic carried by static routes does not count as a repair.",
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
    shown = _traffic(now, blind)
    if now.full and now.gaps:
        shown += (
            "\nAll required traffic works, but not as the routing protocols of the network "
            f"described should carry it: {summary(now.gaps)}."
        )
    return shown


def _traffic(now: Connectivity, blind: bool) -> str:
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


class FrrEpisode(ProbedEpisode):
    """One FRR query being played; see the module docstring."""

    heading = "Required traffic now"
    remind_after_parse_error = True

    def __init__(self, query: Query, lab: FrrLab, first: Connectivity, max_turns: int) -> None:
        assert lab.sandbox is not None
        super().__init__(query, lab.sandbox, first, max_turns)
        self._lab = lab
        self._blind = lab.topo.level == 5

    def _probe_after(self, played: CommandStep) -> Connectivity | None:
        assert played.result is not None
        if not played.changed_network or _read_only(played.result.command):
            return None
        return self._lab.after_change()  # done only if it lasts past a dead interval

    def _render(self) -> str:
        return render(self._now, self._blind)


@contextmanager
def frr_episode(pool: FrrPool, query: Query, max_turns: int) -> Iterator[FrrEpisode]:
    """The episode of an FRR query on a reset lab of its topology, faults injected."""
    topo = FrrTopology.from_name(query.env_key)
    with pool.use(topo) as lab:
        lab.inject([Fault.from_json(f) for f in query.ground_truth["faults"]])
        first = lab.wait_broken()
        if first.full:
            raise EnvironmentFailure(
                f"{query.query_id}: the injected faults left every pair reachable; they were "
                "validated when generated, so this network behaves differently"
            )
        yield FrrEpisode(query, lab, first, max_turns)
