"""The coupled-constraint tasks of MALT levels 6-8 as specs, and each spec read off the base
graph as its model (coupled.py).

    drain_power_binpack      {"block": B, "switch": S, "max_ports": M, "max_watts": W,
                              "watts": [[bps, W], ...]}
    upgrade_knapsack         {"block": B, "stage": s, "target": T, "per_switch": u,
                              "optics": [[bps, cost], ...]}
    place_power_binpack      {"block": B, "stage": s, "ports": [[bps, n], ...],
                              "max_ports": M, "max_watts": W, "watts": [[bps, W], ...]}
    place_two_stage          {"block": B, "stages": [s1, s2], "ports": [[bps, n], ...],
                              "max_ports": M, "max_watts": W, "watts": [[bps, W], ...]}
    shared_budget_two_blocks {"blocks": [B1, B2], "stage": s, "targets": [T1, T2],
                              "per_switch": u, "optics": [[bps, cost], ...],
                              "stock": [[bps, n]]}
    drain_blast_radius       {"block": B, "switches": [S1, S2], "max_ports": M,
                              "max_watts": W, "max_bps": X, "watts": [[bps, W], ...]}
    expand_lexicographic     {"block": B, "stage": s, "target": T, "optics": [[bps, cost],
                              ...], "watts": [[bps, W], ...], "max_ports": M,
                              "max_watts": W, "names": [N1, N2, ...]}
    drain_min_cost           {"block": B, "switches": [S1, S2, ...] (one stage),
                              "max_ports": M, "per_speed": q,
                              "costs": [[receiver, [[bps, cost], ...]], ...]}

`watts` gives the power of one port by its speed for every speed the task involves (the
ports the switches have and the ports it adds); `optics` the speeds a port may be
upgraded to or added at, and the cost of one such optic; targets are totals of the
physical capacity of the ports of a block (all its switches, every stage).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from generators.malt.coupled import CoverBlock, CoverTask, FillTask, PackGroup, PackTask
from generators.malt.coupledread import Reader, Switch, switch_of, table
from generators.malt.coupledtransport import Stage, TransportTask
from generators.malt.operations import TEMPLATES

Spec = dict[str, Any]
LEVELS = {level: TEMPLATES[level] for level in (6, 7, 8)}
KINDS = frozenset(name for names in LEVELS.values() for name in names)
DRAINS = frozenset({"drain_power_binpack", "drain_blast_radius", "drain_min_cost"})
FAMILY = "malt"


@dataclass(frozen=True)
class CatalogueEntry:
    """One task kind as issue 28's catalogue counts it: `malt.<operation>`, family malt."""

    operation: str
    level: int
    constraints: str  # what couples the task, and its goals
    family: str = FAMILY

    @property
    def id(self) -> str:
        return f"{self.family}.{self.operation}"


CATALOGUE = (
    CatalogueEntry("drain_power_binpack", 6, "ports and watts per receiver; fewest receivers"),
    CatalogueEntry("upgrade_knapsack", 6, "optics cost against gain, u per switch; least cost"),
    CatalogueEntry(
        "place_power_binpack", 6, "new ports of a mix, ports and watts per switch; fewest"
    ),
    CatalogueEntry(
        "place_two_stage", 7, "ports and watts per switch, equal gain of two stages; fewest"
    ),
    CatalogueEntry(
        "shared_budget_two_blocks", 7, "two targets, u per switch, one shared stock; least cost"
    ),
    CatalogueEntry(
        "drain_blast_radius", 8, "ports, watts, bps per receiver; fewest, then lowest peak W"
    ),
    CatalogueEntry(
        "expand_lexicographic", 8, "target, ports and watts; fewest new, cheapest, fewest ports"
    ),
    CatalogueEntry(
        "drain_min_cost", 8, "ports per receiver, per speed per receiver, cost table; least cost"
    ),
)


def stratum(operation: str, size: str, spec: Spec) -> str:
    """A query's variety stratum (`Query.stratum`): operation, size class, and where the task
    sits (its block, or its two blocks)."""
    where = spec.get("block") or "+".join(spec.get("blocks", ()))
    return f"{operation}/{size}/{where}"


def drained(spec: Spec) -> list[str]:
    return [spec["switch"]] if "switch" in spec else list(spec["switches"])


def block_total(reader: Reader, block: str) -> int:
    return sum(reader.speed(p) for sw in reader.switches(block) for p in reader.ports(sw))


def _drain(spec: Spec, reader: Reader) -> PackTask:
    watts, gone = table(spec["watts"]), drained(spec)
    by_stage: dict[int, Counter[int]] = {}
    for switch in gone:
        by_stage.setdefault(reader.stage(switch), Counter()).update(
            reader.speed(p) for p in reader.ports(switch)
        )
    types = tuple(sorted({s for c in by_stage.values() for s in c}))
    groups = []
    for stage, items in sorted(by_stage.items()):
        takers = _takers(reader, spec["block"], stage, watts, gone)
        groups.append(PackGroup(stage, takers, tuple(items[t] for t in types)))
    return PackTask(
        types=types,
        watts=tuple(sorted(watts.items())),
        groups=tuple(groups),
        max_ports=spec["max_ports"],
        max_watts=spec["max_watts"],
        max_bps=spec.get("max_bps"),
        peak=spec["op"] == "drain_blast_radius",
    )


def _takers(
    reader: Reader, block: str, stage: int, watts: Mapping[int, int], leave: Collection[str] = ()
) -> tuple[Switch, ...]:
    """The block's stage-`stage` switches but `leave`, as the models read them."""
    return tuple(
        switch_of(reader, t, watts)
        for t in reader.switches(block)
        if t not in leave and reader.stage(t) == stage
    )


def stages_of(reader: Reader, block: str) -> list[int]:
    return sorted({reader.stage(t) for t in reader.switches(block)})


def _place(spec: Spec, reader: Reader) -> PackTask:
    watts, mix = table(spec["watts"]), table(spec["ports"])
    types = tuple(sorted(mix))
    groups = []
    for stage in spec["stages"]:
        takers = _takers(reader, spec["block"], stage, watts)
        groups.append(PackGroup(stage, takers, tuple(0 for _ in types)))
    return PackTask(
        types=types,
        watts=tuple(sorted(watts.items())),
        groups=tuple(groups),
        max_ports=spec["max_ports"],
        max_watts=spec["max_watts"],
        pool=tuple(mix[t] for t in types),
    )


def _place_one(spec: Spec, reader: Reader) -> PackTask:
    watts, mix = table(spec["watts"]), table(spec["ports"])
    types = tuple(sorted(mix))
    takers = _takers(reader, spec["block"], spec["stage"], watts)
    return PackTask(
        types=types,
        watts=tuple(sorted(watts.items())),
        groups=(PackGroup(spec["stage"], takers, tuple(mix[t] for t in types)),),
        max_ports=spec["max_ports"],
        max_watts=spec["max_watts"],
        new=True,
    )


def upgradable(reader: Reader, block: str, stage: int, top: int) -> CoverBlock:
    """The ports of a block's stage-`stage` switches below `top` bps, by switch (`need`
    left at 0 for the caller)."""
    switches = []
    for t in reader.switches(block):
        if reader.stage(t) == stage:
            ports = tuple((p, reader.speed(p)) for p in reader.ports(t) if reader.speed(p) < top)
            switches.append((t, ports))
    return CoverBlock(block, 0, tuple(switches))


def _upgrade(spec: Spec, reader: Reader) -> CoverTask:
    optics = tuple(sorted((int(s), int(c)) for s, c in spec["optics"]))
    top = optics[-1][0]
    blocks = [spec["block"]] if "block" in spec else list(spec["blocks"])
    targets = [spec["target"]] if "target" in spec else list(spec["targets"])
    out = []
    for block, target in zip(blocks, targets, strict=True):
        found = upgradable(reader, block, spec["stage"], top)
        need = target - block_total(reader, block)
        out.append(CoverBlock(block, need, found.switches))
    return CoverTask(
        blocks=tuple(out),
        optics=optics,
        stock=tuple(sorted((int(s), int(n)) for s, n in spec.get("stock", ()))),
        per_switch=spec["per_switch"],
    )


def _expand(spec: Spec, reader: Reader) -> FillTask:
    watts = table(spec["watts"])
    optics = tuple(sorted((int(s), int(c), watts[int(s)]) for s, c in spec["optics"]))
    existing = tuple(
        switch_of(reader, t, watts)
        for t in reader.switches(spec["block"])
        if reader.stage(t) == spec["stage"]
    )
    return FillTask(
        block=spec["block"],
        stage=spec["stage"],
        need=spec["target"] - block_total(reader, spec["block"]),
        optics=optics,
        existing=existing,
        names=tuple(spec["names"]),
        max_ports=spec["max_ports"],
        max_watts=spec["max_watts"],
    )


def _transport(spec: Spec, reader: Reader) -> TransportTask:
    gone = drained(spec)
    costs = {name: table(pairs) for name, pairs in spec["costs"]}
    moving = Counter(reader.speed(p) for s in gone for p in reader.ports(s))
    types = tuple(sorted(moving))
    stage = reader.stage(gone[0])
    takers = [
        t for t in reader.switches(spec["block"]) if t not in gone and reader.stage(t) == stage
    ]
    group = Stage(
        stage,
        tuple(Switch(t, len(reader.ports(t)), 0, 0) for t in takers),
        tuple(moving[t] for t in types),
        tuple(tuple(costs[t][s] for s in types) for t in takers),
    )
    return TransportTask(types, (group,), spec["max_ports"], spec["per_speed"])


TASKS: dict[str, Callable[[Spec, Reader], Any]] = {
    "drain_power_binpack": _drain,
    "drain_blast_radius": _drain,
    "place_two_stage": _place,
    "place_power_binpack": _place_one,
    "upgrade_knapsack": _upgrade,
    "shared_budget_two_blocks": _upgrade,
    "expand_lexicographic": _expand,
    "drain_min_cost": _transport,
}


def task_of(spec: Spec, source: Any) -> Any:
    """The model of `spec` on the base graph `source` (planbase.Base, index.TopoIndex or
    index.View of an unchanged base)."""
    return TASKS[spec["op"]](spec, Reader.of(source))
