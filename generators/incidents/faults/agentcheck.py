"""Whether a drawn fault is fair to an agent, without a lab: its fix commands pass the agent's
command sandbox as they would be sent, its evidence commands pass it too and only read, on
machines the agent may use; its cause names a device of the lab.

The checks are the sandbox's own (emulators/netcmd/policy.py, vtysh.py, effects.py), so a
fix that the sandbox would refuse, or an evidence command that would change state, is
found here before any lab is built. Live proof (prove.py) runs the same commands.
"""

from __future__ import annotations

import functools
import re
import shlex

from emulators.netcmd import effects, vtysh
from emulators.netcmd.policy import check
from generators.incidents.faults.kinds import Fault, kind
from generators.netlab.spec import NetSpec


@functools.lru_cache(maxsize=4096)
def read_only(command: str) -> bool:
    """Whether an allowed command only reads (vtysh: `show` lines only)."""
    checked = check(command)
    if not checked.allowed:
        return False
    if checked.argv[0].endswith("/vtysh"):
        lines = vtysh.check_vtysh(list(checked.argv[1:]), vtysh.DAEMONS)
        return lines.reason is None and vtysh.read_only(lines.lines)
    return not effects.changes(checked.argv, checked.writes)


@functools.lru_cache(maxsize=4096)
def _refusal(command: str) -> str | None:
    """Why the agent's sandbox refuses `command` (the same answer for the same string)."""
    return check(command).reason


def _machine(spec: NetSpec, machine: str, command: str) -> str | None:
    routers = {r.name for r in spec.routers}
    machines = routers | {h.name for h in spec.hosts}
    if machine not in machines:
        return f"{machine!r} is not a machine an agent may use"
    if shlex.split(command)[0] == "vtysh" and machine not in routers:
        return f"vtysh on {machine}, which runs no FRR"
    return None


def problems(fault: Fault, spec: NetSpec) -> list[str]:
    """Everything unfair or malformed about `fault` on `spec`, as sentences."""
    out = []
    declared = kind(fault.kind)
    if declared.benign != fault.benign:
        out.append(f"{fault.kind}: benign is {fault.benign}, its kind says {declared.benign}")
    if fault.cause.kind != fault.kind:
        out.append(f"cause names kind {fault.cause.kind}, the fault is {fault.kind}")
    if fault.cause.device not in spec.devices:
        out.append(f"cause names {fault.cause.device}, no device of {spec.name}")
    for inj in fault.inject:
        if inj.device not in spec.devices or not inj.lines:
            out.append(f"injection on {inj.device} with lines {inj.lines}")
    if not fault.benign and not fault.fix:
        out.append("a fault without a fix")
    if fault.benign and fault.fix:
        out.append("a benign anomaly with a fix (the oracle must leave it)")
    for machine, command in fault.fix:
        refused = _refusal(command)
        if refused:
            out.append(f"fix {command!r}: {refused}")
            continue
        why = _machine(spec, machine, command)
        if why:
            out.append(f"fix {command!r}: {why}")
    if not fault.evidence:
        out.append("no evidence")
    for ev in fault.evidence:
        refused = _refusal(ev.command)
        if refused:
            out.append(f"evidence {ev.command!r}: {refused}")
            continue
        if not read_only(ev.command):
            out.append(f"evidence {ev.command!r} changes state")
        why = _machine(spec, ev.machine, ev.command)
        if why:
            out.append(f"evidence {ev.command!r}: {why}")
        try:
            re.compile(ev.pattern)
        except re.error as err:
            out.append(f"evidence pattern {ev.pattern!r}: {err}")
    return out
