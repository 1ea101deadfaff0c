"""The analytic half of a planning query's oracle check: one right plan, made on a View.

Each solver applies a plan for its spec (plancheck.py) to an index.View of the base; the
generator reads the plan as `View.diff()` and holds it, and the oracle program's own plan
(planoracle.py), to the plan checker, which knows neither. Choices are greedy with
ties broken by name (or by `tie`, e.g. reversed, which tests use to make another right
plan), so a spec has one analytic plan:

- drains move ports in port-number order to the receiving switch with the fewest ports;
- additions fill the switches with the fewest ports first and spread the rest evenly;
- upgrades take the lowest-capacity ports first, at most the per-switch budget each;
- placements go to the block with the lowest total that still has room.

The coupled-constraint plans of levels 6-8 are solved exactly instead (coupledplan.py;
`tie` other than the default makes it try equal choices the other way round).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generators.malt import coupledplan
from generators.malt import planmath as pm
from generators.malt import schema as S
from generators.malt.index import Redraw, View
from generators.malt.planbase import port_number

PS, PORT, AGG = S.EK_PACKET_SWITCH, S.EK_PORT, S.EK_AGG_BLOCK
Spec = dict[str, Any]
Tie = Callable[[str], Any]


def solve(spec: Spec, view: View, tie: Tie = str) -> None:
    """Apply the analytic plan of `spec` to `view` (raises Redraw when there is none);
    `tie` orders names where the plan's rule leaves a choice."""
    _SOLVERS[spec["op"]](spec, view, tie)


class _Ports:
    """Port counts and next port numbers of switches as ports are added."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.count: dict[str, int] = {}
        self.next: dict[str, int] = {}

    def of(self, switch: str) -> int:
        if switch not in self.count:
            ports = self.view.members(switch, PORT)
            self.count[switch] = len(ports)
            self.next[switch] = max((port_number(p) for p in ports), default=0) + 1
        return self.count[switch]

    def add(self, switch: str, capacity: int) -> None:
        self.of(switch)
        name = f"{switch}.p{self.next[switch]}"
        self.view.add(name, S.port_attrs(name, capacity), switch)
        self.next[switch] += 1
        self.count[switch] += 1


def _stage(view: View, switch: str) -> int:
    return view.attrs(switch)[S.A_SWITCH_LOC][S.A_STAGE]


def _capacity(view: View, node: str) -> int:
    return sum(view.attrs(p)[S.A_CAPACITY] for p in view.members(node, PORT))


def _drain(spec: Spec, view: View, tie: Tie) -> None:
    drained = [spec["switch"]] if spec["op"] == "drain" else sorted(spec["switches"])
    ports = _Ports(view)
    by_stage: dict[int, list[str]] = {}
    for switch in drained:
        by_stage.setdefault(_stage(view, switch), []).append(switch)
    for stage, switches in sorted(by_stage.items()):
        group = [
            t
            for t in view.members(spec["block"], PS)
            if t not in drained and _stage(view, t) == stage
        ]
        moving = [
            (view.attrs(p)[S.A_CAPACITY])
            for s in switches
            for p in sorted(view.members(s, PORT), key=port_number)
        ]
        if spec["op"] == "drain":
            limit = spec["max_ports"]
        else:
            limit = pm.water_level([ports.of(t) for t in group], len(moving))
        for capacity in moving:
            room = [t for t in group if ports.of(t) < limit]
            if not room:
                raise Redraw("the receiving switches are full")
            ports.add(min(room, key=lambda t: (ports.of(t), tie(t))), capacity)
    for switch in drained:
        view.remove(switch)


def _even(total: int, parts: int) -> list[int]:
    share, rest = divmod(total, parts)
    return [share + (i < rest) for i in range(parts)]


def _add_switches(view: View, spec: Spec, names: list[str], total: int, tie: Tie) -> None:
    """Add the switches `names`, spreading `total` ports evenly (the extra ones first to
    the names first in `tie` order)."""
    ports = _Ports(view)
    counts = dict(zip(sorted(names, key=tie), _even(total, len(names)), strict=True))
    for name in names:
        count = counts[name]
        view.add(name, S.switch_attrs(name, spec["stage"]), spec["block"])
        for _ in range(count):
            ports.add(name, spec["capacity"])


def _expand(spec: Spec, view: View, tie: Tie) -> None:
    needed = pm.ceil_div(spec["target"] - _capacity(view, spec["block"]), spec["capacity"])
    names = list(spec["switches"])
    if needed < len(names):
        raise Redraw("fewer new ports than new switches")
    _add_switches(view, spec, names, needed, tie)


def _expand_fill(spec: Spec, view: View, tie: Tie) -> None:
    needed = pm.ceil_div(spec["target"] - _capacity(view, spec["block"]), spec["capacity"])
    ports, most = _Ports(view), spec["max_ports"]
    group = [t for t in view.members(spec["block"], PS) if _stage(view, t) == spec["stage"]]
    for switch in sorted(group, key=lambda t: (ports.of(t), tie(t))):
        while needed and ports.of(switch) < most:
            ports.add(switch, spec["capacity"])
            needed -= 1
    if needed:
        count = pm.ceil_div(needed, most)
        if count > len(spec["names"]):
            raise Redraw("more new switches needed than names given")
        _add_switches(view, spec, list(spec["names"][:count]), needed, tie)


def _upgrade(spec: Spec, view: View, tie: Tie) -> None:
    blocks = [spec["block"]] if spec["op"] == "upgrade" else view.members(spec["superblock"], AGG)
    target = spec["capacity"]
    for block in blocks:
        deficit = spec["target"] - _capacity(view, block)
        candidates = sorted(
            (view.attrs(p)[S.A_CAPACITY], tie(p), p, switch)
            for switch in view.members(block, PS)
            for p in view.members(switch, PORT)
            if view.attrs(p)[S.A_CAPACITY] < target
        )
        used: dict[str, int] = {}
        for before, _, port, switch in candidates:
            if deficit <= 0:
                break
            if used.get(switch, 0) >= spec["per_switch"]:
                continue
            used[switch] = used.get(switch, 0) + 1
            view.set_attr(port, S.A_CAPACITY, target)
            deficit -= target - before
        if deficit > 0:
            raise Redraw(f"{block} cannot reach the target")


def _place(spec: Spec, view: View, tie: Tie) -> None:
    ports = _Ports(view)
    hosts = {
        b: [t for t in view.members(b, PS) if _stage(view, t) == spec["stage"]]
        for b in view.members(spec["superblock"], AGG)
    }
    total = {b: _capacity(view, b) for b in hosts}
    placed = {t: 0 for ts in hosts.values() for t in ts}
    unit = spec["capacity"]
    for _ in range(spec["ports"]):
        open_ = [
            b
            for b, ts in hosts.items()
            if any(placed[t] < spec["per_switch"] for t in ts)
            and (spec["op"] == "place_balance" or total[b] + unit <= spec["budget"])
        ]
        if not open_:
            raise Redraw("no block has room left")
        block = min(open_, key=lambda b: (total[b], tie(b)))
        switch = min(
            (t for t in hosts[block] if placed[t] < spec["per_switch"]),
            key=lambda t: (placed[t], tie(t)),
        )
        ports.add(switch, unit)
        placed[switch] += 1
        total[block] += unit


_SOLVERS: dict[str, Callable[[Spec, View, Tie], None]] = {
    "drain": _drain,
    "drain_balance": _drain,
    "expand": _expand,
    "expand_fill": _expand_fill,
    "upgrade": _upgrade,
    "upgrade_superblock": _upgrade,
    "place": _place,
    "place_balance": _place,
}


def _coupled(spec: Spec, view: View, tie: Tie) -> None:
    coupledplan.apply(spec, view, 1 if tie is str else -1)


_SOLVERS.update({op: _coupled for op in coupledplan.KINDS})
