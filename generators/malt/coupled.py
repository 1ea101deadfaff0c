"""The coupled-constraint plans of MALT levels 6-8: each task read off the base graph as a
small model, its exact optimum, and the value and broken rules of any plan for it.

Three models carry the six tasks (specs in coupledcheck.py, prose in coupledrender.py):

- `PackTask` (drain_power_binpack, place_two_stage, drain_blast_radius): ports to put on
  switches, each switch that takes any ending within a port limit, a power limit (watts
  per port by speed, from the task's table) and for the blast radius a capacity limit;
  fewest switches used (then, for the blast radius, the lowest peak power). For the
  two-stage placement the capacity added to the block's two stages must be equal.
- `CoverTask` (upgrade_knapsack, shared_budget_two_blocks): faster optics for ports of one
  or two blocks, at most `per_switch` per switch, every block reaching its target, the
  stock of a scarce optic shared; least cost.
- `FillTask` (expand_lexicographic): new ports of catalogue speeds on a block's switches of
  one stage and on new switches, within port and power limits, to reach a target; fewest
  new switches, then least cost, then fewest new ports.

A plan is a plain mapping (switch -> ports taken by speed; port -> new speed), so the
analytic solver, the greedy rules (coupledgreedy.py) and the checker (which reads a plan
off a graph diff) all judge plans by the same `judge`. Optima come from coupledsolve.py
and are cached per task (a task is a frozen value of the base graph and the spec).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from generators.malt import coupledsolve as cs
from generators.malt.coupledread import Switch
from generators.malt.coupledtransport import TransportTask, transport_judge, transport_solve

Value = tuple[int, ...]
Plan = dict[str, Any]


# The most work (coupledsolve: (state, choice) pairs tried) one task's exact search may
# take: about 0.3 s in CPython here, a sixteenth of the sandbox's 5 CPU-s.
BUDGET = 400_000


def _units(values: Sequence[int]) -> int:
    return functools.reduce(math.gcd, [v for v in values if v], 0) or 1


# -- packing: drains and placements --------------------------------------------------------


@dataclass(frozen=True)
class PackGroup:
    """Switches that may take the ports of one stage, and (for a drain) those ports."""

    stage: int
    switches: tuple[Switch, ...]
    items: tuple[int, ...]  # ports to place, per type (PackTask.types)


@dataclass(frozen=True)
class PackTask:
    types: tuple[int, ...]  # port speeds (bps), ascending
    watts: tuple[tuple[int, int], ...]  # speed -> watts per port, every speed involved
    groups: tuple[PackGroup, ...]
    max_ports: int
    max_watts: int
    max_bps: int | None = None  # the blast radius: no switch may end above this
    peak: bool = False  # then the lowest peak power of a switch taking ports
    # The two-stage placement: ports to share between the two groups (whose own items are
    # empty), the same capacity to each.
    pool: tuple[int, ...] | None = None

    @property
    def balance(self) -> bool:
        return self.pool is not None

    def bins(self, group: PackGroup) -> list[tuple[int, tuple[int, ...], int]]:
        """coupledsolve.pack's bins for a group: free slots, headrooms, watts now."""
        out = []
        for sw in group.switches:
            heads = [self.max_watts - sw.watts]
            if self.max_bps is not None:
                heads.append(self.max_bps - sw.bps)
            slots = self.max_ports - sw.ports
            if slots < 0 or min(heads) < 0:
                slots, heads = 0, [0] * len(heads)
            out.append((slots, tuple(heads), sw.watts))
        return out

    def loads(self) -> tuple[tuple[int, ...], ...]:
        watts = dict(self.watts)
        rows = [tuple(watts[t] for t in self.types)]
        if self.max_bps is not None:
            rows.append(self.types)
        return tuple(rows)

    def splits(self) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """The ways to share the pool between the two stages with equal capacity."""
        pool = self.pool or ()
        out = []
        for low in _grid(pool):
            high = tuple(p - a for p, a in zip(pool, low, strict=True))
            if _bps(self.types, low) == _bps(self.types, high):
                out.append((low, high))
        return out


def _grid(limits: Sequence[int]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for top in limits:
        out = [(*v, k) for v in out for k in range(top + 1)]
    return out


def _bps(types: Sequence[int], counts: Sequence[int]) -> int:
    return sum(t * c for t, c in zip(types, counts, strict=True))


def pack_solve(task: PackTask, order: int = 1) -> tuple[Value, Plan] | None:
    """The optimum of a PackTask and a plan reaching it (None: infeasible)."""
    budget = [BUDGET]
    watts = dict(task.watts)
    peak = [watts[t] for t in task.types] if task.peak else None
    if task.balance:
        best = None
        for low, high in task.splits()[::order]:
            found = [
                cs.pack(items, task.bins(g), task.loads(), peak, order, budget)
                for g, items in zip(task.groups, (low, high), strict=True)
            ]
            if None in found:
                continue
            used = sum(f[0] for f in found)
            if best is None or used < best[0]:
                best = (used, found, (low, high))
        if best is None:
            return None
        results = best[1]
    else:
        results = [
            cs.pack(g.items, task.bins(g), task.loads(), peak, order, budget) for g in task.groups
        ]
        if None in results:
            return None
    plan: Plan = {}
    for group, result in zip(task.groups, results, strict=True):
        for sw, vector in zip(group.switches, result[2], strict=True):
            if any(vector):
                plan[sw.name] = tuple(vector)
    value = (sum(r[0] for r in results),)
    if task.peak:
        value += (max(r[1] for r in results),)
    return value, plan


def pack_judge(task: PackTask, plan: Plan) -> tuple[list[str], Value]:
    """(rules the plan breaks, its value): plan = switch -> ports taken, per type."""
    errs: list[str] = []
    watts = dict(task.watts)
    where = {sw.name: (i, sw) for i, g in enumerate(task.groups) for sw in g.switches}
    taken = [[0] * len(task.types) for _ in task.groups]
    peak = 0
    for name, vector in sorted(plan.items()):
        if not any(vector):
            continue
        if name not in where:
            errs.append(f"{name} may not take ports in this task")
            continue
        i, sw = where[name]
        taken[i] = [a + b for a, b in zip(taken[i], vector, strict=True)]
        ports = sw.ports + sum(vector)
        power = sw.watts + sum(watts[t] * a for t, a in zip(task.types, vector, strict=True))
        peak = max(peak, power)
        if ports > task.max_ports:
            errs.append(f"{name} ends with {ports} ports; at most {task.max_ports} are allowed")
        if power > task.max_watts:
            errs.append(f"{name} ends drawing {power} W; at most {task.max_watts} W are allowed")
        bps = sw.bps + _bps(task.types, vector)
        if task.max_bps is not None and bps > task.max_bps:
            errs.append(f"{name} ends with {bps} bps; at most {task.max_bps} bps are allowed")
    if task.balance:
        got = tuple(map(sum, zip(*taken, strict=True)))
        if got != task.pool:
            errs.append(f"ports placed by speed {_mix(task.types, got)}; the task asks for "
                        f"{_mix(task.types, task.pool)}")  # fmt: skip
        low, high = (_bps(task.types, t) for t in taken)
        if low != high:
            errs.append(
                f"stage {task.groups[0].stage} gains {low} bps and stage {task.groups[1].stage} "
                f"{high} bps; the two must gain the same"
            )
    else:
        for group, got in zip(task.groups, taken, strict=True):
            if tuple(got) != group.items:
                errs.append(
                    f"stage-{group.stage} switches take {_mix(task.types, got)}; the drained "
                    f"ports of that stage are {_mix(task.types, group.items)}"
                )
    used = sum(1 for v in plan.values() if any(v))
    return errs, ((used, peak) if task.peak else (used,))


def _mix(types: Sequence[int], counts: Sequence[int]) -> str:
    shown = [f"{c} x {t // 1_000_000_000}G" for t, c in zip(types, counts, strict=True) if c]
    return "{" + ", ".join(shown) + "}"


# -- covering: upgrades -------------------------------------------------------------------


@dataclass(frozen=True)
class CoverBlock:
    name: str
    need: int  # bps the block lacks (> 0)
    switches: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]  # switch -> (port, speed)


@dataclass(frozen=True)
class CoverTask:
    blocks: tuple[CoverBlock, ...]
    optics: tuple[tuple[int, int], ...]  # (speed, cost), ascending speed
    stock: tuple[tuple[int, int], ...]  # (speed, how many there are) of the scarce optics
    per_switch: int

    def unit(self) -> int:
        """The gcd of every gain an upgrade can make: gains are counted in these units."""
        speeds = {s for _, ports in self._switches() for _, s in ports}
        return _units([o - s for s in speeds for o, _ in self.optics if o > s])

    def _switches(self) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
        return [sw for b in self.blocks for sw in b.switches]


def cover_solve(task: CoverTask, order: int = 1) -> tuple[Value, Plan] | None:
    unit, stock = task.unit(), dict(task.stock)
    options: dict[int, list[tuple[int, int, int | None]]] = {}
    for _, ports in task._switches():
        for _, speed in ports:
            options[speed] = [
                ((o - speed) // unit, c, o if o in stock else None)
                for o, c in task.optics
                if o > speed
            ]
    demands = []
    for block in task.blocks:
        groups = []
        for _, ports in block.switches:
            counts: dict[int, int] = {}
            for _, speed in ports:
                counts[speed] = counts.get(speed, 0) + 1
            groups.append(counts)
        demands.append((-(-block.need // unit), groups, task.per_switch))
    found = cs.cover(demands, options, stock, order, [BUDGET])
    if found is None:
        return None
    cost, picks = found
    plan: Plan = {}
    for block, chosen in zip(task.blocks, picks, strict=True):
        for (_, ports), pick in zip(block.switches, chosen, strict=True):
            free = {s: [p for p, sp in ports if sp == s][::order] for s in {sp for _, sp in ports}}
            for speed, option in pick:
                target = options[speed][option]
                plan[free[speed].pop(0)] = speed + target[0] * unit
    return (cost,), plan


def cover_judge(task: CoverTask, plan: Plan) -> tuple[list[str], Value]:
    """(rules the plan breaks, its cost): plan = port -> its new speed."""
    errs: list[str] = []
    cost_of, stock = dict(task.optics), dict(task.stock)
    where = {p: (b, sw, s) for b in task.blocks for sw, ports in b.switches for p, s in ports}
    gained = {b.name: 0 for b in task.blocks}
    per_switch: dict[str, int] = {}
    used: dict[int, int] = {}
    cost = 0
    for port, speed in sorted(plan.items()):
        if port not in where:
            errs.append(f"port {port} may not be upgraded in this task")
            continue
        block, switch, before = where[port]
        if speed not in cost_of or speed <= before:
            errs.append(
                f"port {port} goes from {before} to {speed} bps; an upgrade installs a faster "
                f"optic from the catalogue ({sorted(cost_of)})"
            )
            continue
        cost += cost_of[speed]
        gained[block.name] += speed - before
        per_switch[switch] = per_switch.get(switch, 0) + 1
        used[speed] = used.get(speed, 0) + 1
    for block in task.blocks:
        if gained[block.name] < block.need:
            errs.append(f"{block.name} gains {gained[block.name]} bps; it needs {block.need}")
    over = sorted(s for s, n in per_switch.items() if n > task.per_switch)
    if over:
        errs.append(f"more than {task.per_switch} ports upgraded on {over[:3]}")
    for speed, have in sorted(stock.items()):
        if used.get(speed, 0) > have:
            errs.append(f"{used[speed]} optics of {speed} bps used; only {have} are in stock")
    return errs, (cost,)


# -- filling: expansion -------------------------------------------------------------------


@dataclass(frozen=True)
class FillTask:
    block: str
    stage: int
    need: int  # bps the block lacks (> 0)
    optics: tuple[tuple[int, int, int], ...]  # (speed, cost, watts), ascending speed
    existing: tuple[Switch, ...]  # the block's switches of the stage
    names: tuple[str, ...]  # new switch names, taken as a prefix
    max_ports: int
    max_watts: int

    def unit(self) -> int:
        return _units([s for s, _, _ in self.optics])


def fill_solve(task: FillTask, order: int = 1) -> tuple[Value, Plan] | None:
    unit = task.unit()
    speeds = [s // unit for s, _, _ in task.optics]
    costs = [c for _, c, _ in task.optics]
    loads = ([w for _, _, w in task.optics],)
    bins = []
    for sw in task.existing:
        slots, head = task.max_ports - sw.ports, task.max_watts - sw.watts
        bins.append((slots, (head,)) if slots >= 0 and head >= 0 else (0, (0,)))
    spare = (task.max_ports, (task.max_watts,))
    need = -(-task.need // unit)
    found = cs.fill(need, speeds, costs, loads, bins, spare, len(task.names), order, [BUDGET])
    if found is None:
        return None
    extra, cost, items, picks = found
    names = [sw.name for sw in task.existing] + list(task.names[:extra])
    plan = {n: tuple(p) for n, p in zip(names, picks, strict=True) if any(p)}
    return (extra, cost, items), plan


def fill_judge(task: FillTask, plan: Plan) -> tuple[list[str], Value]:
    """(rules the plan breaks, its value): plan = switch (existing or new) -> new ports,
    per catalogue speed."""
    errs: list[str] = []
    speeds = [s for s, _, _ in task.optics]
    existing = {sw.name: sw for sw in task.existing}
    new = [n for n in plan if n not in existing]
    if sorted(new) != sorted(task.names[: len(new)]):
        errs.append(
            f"new switches {sorted(new)}; new switches take their names in order from "
            f"{list(task.names)}"
        )
    gained = cost = items = 0
    for name, vector in sorted(plan.items()):
        if name in existing and not any(vector):
            continue  # an existing switch that takes nothing is left as it is
        sw = existing.get(name, Switch(name, 0, 0, 0))
        ports = sw.ports + sum(vector)
        power = sw.watts + sum(w * a for (_, _, w), a in zip(task.optics, vector, strict=True))
        if name not in existing and not any(vector):
            errs.append(f"new switch {name} has no port; every new switch takes at least one")
        if ports > task.max_ports:
            errs.append(f"{name} ends with {ports} ports; at most {task.max_ports} are allowed")
        if power > task.max_watts:
            errs.append(f"{name} ends drawing {power} W; at most {task.max_watts} W are allowed")
        gained += _bps(speeds, vector)
        cost += sum(c * a for (_, c, _), a in zip(task.optics, vector, strict=True))
        items += sum(vector)
    if gained < task.need:
        errs.append(f"{task.block} gains {gained} bps; it needs {task.need}")
    return errs, (len(new), cost, items)


# -- one interface over the three ----------------------------------------------------------

SOLVE: dict[type, Callable[..., tuple[Value, Plan] | None]] = {
    PackTask: pack_solve,
    CoverTask: cover_solve,
    FillTask: fill_solve,
    TransportTask: transport_solve,
}
JUDGE: dict[type, Callable[[Any, Plan], tuple[list[str], Value]]] = {
    PackTask: pack_judge,
    CoverTask: cover_judge,
    FillTask: fill_judge,
    TransportTask: transport_judge,
}


@functools.lru_cache(maxsize=4096)
def optimum(task: Any) -> tuple[Value, Plan] | None:
    """The optimum of a task and one plan reaching it (cached: tasks are frozen values)."""
    return SOLVE[type(task)](task)


def solve(task: Any, order: int = 1) -> tuple[Value, Plan] | None:
    return optimum(task) if order == 1 else SOLVE[type(task)](task, order)


def judge(task: Any, plan: Plan) -> tuple[list[str], Value]:
    return JUDGE[type(task)](task, plan)
