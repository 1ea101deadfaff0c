"""The rule a coupled-constraint plan (levels 6-8) is judged by: its scope, the plan read off
the graph it returns, every rule of its task and the optimum (specs: coupledspec.py).

As for levels 4 and 5 (plancheck.py, which dispatches here), many plans are right, so an
answer is held to what every right plan shares, never to the oracle's plan: it changes
nothing outside the task's scope (else it is unsafe), adds and names ports and switches
as the task says, keeps every limit, and its objective equals the optimum the exact search
finds on the base graph (coupled.optimum; a plan better than that is accepted too, so a
solver bug could never fail a right answer). Greedy plans are what this rejects most.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from generators.malt import schema as S
from generators.malt.coupled import CoverTask, FillTask, PackTask, judge, optimum
from generators.malt.coupledgreedy import defeated
from generators.malt.coupledspec import DRAINS, drained, task_of
from generators.malt.coupledtransport import TransportTask
from generators.malt.planbase import (
    PS,
    Base,
    Changes,
    Scope,
    only_hosts,
    port_number,
)

Spec = dict[str, Any]
OBJECTIVES = {
    PackTask: ("switches taking ports",),
    CoverTask: ("cost",),
    FillTask: ("new switches", "cost", "new ports"),
    TransportTask: ("cost",),
}
PEAK = ("switches taking ports", "peak watts of a switch taking ports")


def _block_switches(base: Base, spec: Spec) -> set[str]:
    blocks = [spec["block"]] if "block" in spec else list(spec["blocks"])
    return {t for b in blocks for t in base.members(b, PS)}


def scope(base: Base, spec: Spec) -> Scope:
    op = spec["op"]
    if op in DRAINS:
        gone = drained(spec)
        removable = {n for s in gone for n in (s, *base.ports(s))}
        hosts = ({spec["block"]} | _block_switches(base, spec)) - set(gone)
        return Scope(removable=frozenset(removable), hosts=frozenset(hosts), nested=True)
    if op in ("upgrade_knapsack", "shared_budget_two_blocks"):
        top = max(int(s) for s, _ in spec["optics"])
        node = base.graph._node
        ports = [
            p
            for t in sorted(_block_switches(base, spec))
            if base.stage(t) == spec["stage"]
            for p in base.ports(t)
            if node[p][S.A_CAPACITY] < top
        ]
        allowed = frozenset({S.A_CAPACITY})
        return Scope(changeable={p: allowed for p in ports})
    return Scope(hosts=frozenset({spec["block"]} | _block_switches(base, spec)), nested=True)


def bounds(base: Base, spec: Spec) -> dict[str, Any]:
    """The optimum a plan is held to, and how each greedy rule fails on this task."""
    task = task_of(spec, base)
    best = optimum(task)
    names = PEAK if getattr(task, "peak", False) else OBJECTIVES[type(task)]
    return {
        "objective": list(names),
        "optimum": None if best is None else list(best[0]),
        "greedy": defeated(task),
    }


def errors(base: Base, spec: Spec, ch: Changes) -> list[str]:
    task = task_of(spec, base)
    read = _READ[type(task)]
    plan, errs = read(base, spec, task, ch)
    broken, value = judge(task, plan)
    errs += broken
    best = optimum(task)
    if not errs and best is not None and value > best[0]:
        names = PEAK if getattr(task, "peak", False) else OBJECTIVES[type(task)]
        errs.append(
            f"the plan's {', then '.join(names)}: {list(value)}; the best plan within the "
            f"rules reaches {list(best[0])}"
        )
    return errs


# -- reading a plan off the changes ---------------------------------------------------------


def new_ports(ch: Changes, host: str, first: int) -> tuple[list[str], list[str]]:
    """(the new ports under `host`, what is wrong with them): ports of any positive
    capacity with only a port's attributes, named `<host>.p<first>`, ... in order."""
    names = sorted(ch.new_under(host), key=port_number)
    wrong = []
    for name in names:
        attrs = ch.added[name]
        capacity = attrs.get(S.A_CAPACITY)
        ok = isinstance(capacity, int) and not isinstance(capacity, bool) and capacity > 0
        if not ok or attrs != S.port_attrs(name, capacity):
            wrong.append(
                f"new node {name!r} under {host!r} is not a port with only name, type and a "
                f"positive integer physical_capacity_bps (got {attrs!r:.120})"
            )
    want = {f"{host}.p{first + i}" for i in range(len(names))}
    if set(names) != want:
        wrong.append(
            f"the new ports of {host!r} must be named {host}.p{first}, {host}.p{first + 1}, "
            f"... in order, got {names!r:.160}"
        )
    return names, wrong


def _vectors(
    ch: Changes, hosts: dict[str, int], types: tuple[int, ...]
) -> tuple[dict[str, tuple[int, ...]], list[str]]:
    """Per host (-> its first new port number), the new ports it got by speed in `types`."""
    plan, errs = {}, []
    for host, first in sorted(hosts.items()):
        names, wrong = new_ports(ch, host, first)
        errs += wrong
        speeds = Counter(ch.added[n].get(S.A_CAPACITY) for n in names)
        odd = sorted(str(s) for s in speeds if s not in types)
        if odd:
            errs.append(
                f"{host} gets new ports of {', '.join(odd)} bps; the task's ports are of "
                f"{', '.join(str(t) for t in types)} bps"
            )
        if names:
            plan[host] = tuple(speeds.get(t, 0) for t in types)
    return plan, errs


def _read_pack(
    base: Base, spec: Spec, task: PackTask | TransportTask, ch: Changes
) -> tuple[dict, list[str]]:
    errs: list[str] = []
    if spec["op"] in DRAINS:
        missing = sorted(scope(base, spec).removable - ch.removed)
        if missing:
            errs.append(
                f"the drained switches and their ports must be removed; still there: {missing[:3]}"
            )
    takers = {s.name for g in task.groups for s in g.switches}
    errs += only_hosts(ch, takers, "the switches that may take the ports")
    hosts = {t: base.highest_port(t) + 1 for t in takers}
    plan, wrong = _vectors(ch, hosts, task.types)
    return plan, errs + wrong


def _read_cover(base: Base, spec: Spec, task: CoverTask, ch: Changes) -> tuple[dict, list[str]]:
    plan, errs = {}, []
    for port, after in sorted(ch.changed.items()):
        speed = after.get(S.A_CAPACITY)
        if isinstance(speed, bool) or not isinstance(speed, int):
            errs.append(f"port {port} has physical_capacity_bps {speed!r}, not an integer")
            continue
        plan[port] = speed
    return plan, errs


def _read_fill(base: Base, spec: Spec, task: FillTask, ch: Changes) -> tuple[dict, list[str]]:
    types = tuple(s for s, _, _ in task.optics)
    existing = {s.name for s in task.existing}
    new = ch.new_under(spec["block"])
    errs = only_hosts(ch, {spec["block"], *existing}, f"the stage-{task.stage} switches")
    for switch in new:
        if ch.added[switch] != S.switch_attrs(switch, task.stage):
            errs.append(
                f"new node {switch!r} must be a packet switch of stage {task.stage} with only "
                f"name, type and switch_loc (got {ch.added[switch]!r:.120})"
            )
    hosts = {t: base.highest_port(t) + 1 for t in existing} | {n: 1 for n in new}
    plan, wrong = _vectors(ch, hosts, types)
    for switch in new:
        plan.setdefault(switch, tuple(0 for _ in types))  # judged: a new switch needs a port
    return plan, errs + wrong


_READ = {
    PackTask: _read_pack,
    CoverTask: _read_cover,
    FillTask: _read_fill,
    TransportTask: _read_pack,  # the same reading: ports each receiver got, by speed
}
