"""Greedy rules for the coupled-constraint plans (levels 6-8), and the filter that keeps a
task only when every one of them fails.

The rules are the project's own greedy solvers (plansolve.py: fewest-ports-first drains,
water-filling, lowest-capacity-first upgrades, fill-then-add expansion) carried over to
each model, and the greedy rules a programmer reaches for first (first fit and best fit
decreasing, fill the roomiest switch first, best gain per cost, largest gain, cheapest
first, ratio then prune, balance by largest first). A rule fails when its plan breaks a
rule of the task, cannot be completed, or misses the optimum; `defeated` records how each
failed (stored with the ground truth, never shown).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generators.malt import planmath as pm
from generators.malt.coupled import (
    CoverTask,
    FillTask,
    PackGroup,
    PackTask,
    Plan,
    judge,
    optimum,
)
from generators.malt.coupledtransport import TRANSPORT_RULES, TransportTask

Rule = Callable[[Any], Plan | None]


# -- packing ---------------------------------------------------------------------------------


class _Loads:
    """Ports, watts and bps of a group's switches while a rule places ports."""

    def __init__(self, task: PackTask, group: PackGroup) -> None:
        self.task, self.watts = task, dict(task.watts)
        self.ports = {s.name: s.ports for s in group.switches}
        self.power = {s.name: s.watts for s in group.switches}
        self.bps = {s.name: s.bps for s in group.switches}
        self.names = [s.name for s in group.switches]
        self.plan: dict[str, list[int]] = {}

    def fits(self, name: str, speed: int) -> bool:
        t = self.task
        return (
            self.ports[name] < t.max_ports
            and self.power[name] + self.watts[speed] <= t.max_watts
            and (t.max_bps is None or self.bps[name] + speed <= t.max_bps)
        )

    def room(self, name: str) -> int:
        return self.task.max_watts - self.power[name]

    def put(self, name: str, speed: int) -> None:
        self.ports[name] += 1
        self.power[name] += self.watts[speed]
        self.bps[name] += speed
        vector = self.plan.setdefault(name, [0] * len(self.task.types))
        vector[self.task.types.index(speed)] += 1


def _items(task: PackTask, counts: tuple[int, ...], heavy_first: bool) -> list[int]:
    out = [t for t, c in zip(task.types, counts, strict=True) for _ in range(c)]
    watts = dict(task.watts)
    return sorted(out, key=lambda t: (-watts[t], -t)) if heavy_first else out


def _spread(limit_of: Callable[[_Loads, int], int]) -> Callable[..., dict | None]:
    """plansolve's drain: each port, in order, to the switch with the fewest ports that is
    under the limit (ties by name), whatever else it draws."""

    def place(task: PackTask, group: PackGroup, counts: tuple[int, ...]) -> dict | None:
        loads = _Loads(task, group)
        limit = limit_of(loads, sum(counts))
        for speed in _items(task, counts, heavy_first=False):
            room = [n for n in loads.names if loads.ports[n] < limit]
            if not room:
                return None
            loads.put(min(room, key=lambda n: (loads.ports[n], n)), speed)
        return loads.plan

    return place


def _decreasing(pick: Callable[[_Loads, list[str]], str]) -> Callable[..., dict | None]:
    """Heaviest port first, each to the switch `pick` chooses among those it fits."""

    def place(task: PackTask, group: PackGroup, counts: tuple[int, ...]) -> dict | None:
        loads = _Loads(task, group)
        for speed in _items(task, counts, heavy_first=True):
            fitting = [n for n in loads.names if loads.fits(n, speed)]
            if not fitting:
                return None
            loads.put(pick(loads, fitting), speed)
        return loads.plan

    return place


def _fill(order: Callable[[_Loads, str], Any]) -> Callable[..., dict | None]:
    """Switches in `order`, each filled with the heaviest ports that still fit."""

    def place(task: PackTask, group: PackGroup, counts: tuple[int, ...]) -> dict | None:
        loads = _Loads(task, group)
        left = _items(task, counts, heavy_first=True)
        for name in sorted(loads.names, key=lambda n: (order(loads, n), n)):
            rest = []
            for speed in left:
                if loads.fits(name, speed):
                    loads.put(name, speed)
                else:
                    rest.append(speed)
            left = rest
        return None if left else loads.plan

    return place


PACKERS: dict[str, Callable[..., dict | None]] = {
    "fewest_ports_first": _spread(lambda loads, n: loads.task.max_ports),
    "water_filling": _spread(lambda loads, n: pm.water_level(list(loads.ports.values()), n)),
    "first_fit_decreasing": _decreasing(lambda loads, fit: fit[0]),
    "best_fit_decreasing": _decreasing(lambda loads, fit: min(fit, key=lambda n: loads.room(n))),
    "largest_room_first": _fill(lambda loads, n: -loads.room(n)),
    "most_slots_first": _fill(lambda loads, n: loads.ports[n]),
}


def _lpt(task: PackTask) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The pool shared between the two stages largest port first, each port to the stage
    that has gained less so far (the lower stage on a tie)."""
    gained, split = [0, 0], [[0] * len(task.types), [0] * len(task.types)]
    for speed in sorted(_items(task, task.pool or (), False), reverse=True):
        side = 0 if gained[0] <= gained[1] else 1
        gained[side] += speed
        split[side][task.types.index(speed)] += 1
    return tuple(split[0]), tuple(split[1])


def _pack_rule(name: str) -> Rule:
    packer = PACKERS[name]

    def rule(task: PackTask) -> Plan | None:
        if task.balance and name == "fewest_ports_first":
            # The project's placement ignores stages: one group of every switch.
            merged = PackGroup(0, tuple(s for g in task.groups for s in g.switches), ())
            found = packer(task, merged, task.pool)
            return None if found is None else {k: tuple(v) for k, v in found.items()}
        shares = _lpt(task) if task.balance else [g.items for g in task.groups]
        plan: Plan = {}
        for group, counts in zip(task.groups, shares, strict=True):
            found = packer(task, group, tuple(counts))
            if found is None:
                return None
            plan.update({k: tuple(v) for k, v in found.items()})
        return plan

    return rule


# -- covering ----------------------------------------------------------------------------------


def _cover(choose: str, prune: bool = False) -> Rule:
    """Block by block (stock shared, in the task's order), upgrades chosen one at a time
    by `choose` until the block's need is met; with `prune`, upgrades not needed after
    all are dropped again, the most expensive first."""

    def rule(task: CoverTask) -> Plan | None:
        stock, costs = dict(task.stock), dict(task.optics)
        plan: Plan = {}
        for block in task.blocks:
            used: dict[str, int] = {}
            gained = 0
            mine: list[tuple[str, int, int]] = []
            while gained < block.need:
                options = [
                    (port, before, speed, switch)
                    for switch, ports in block.switches
                    if used.get(switch, 0) < task.per_switch
                    for port, before in ports
                    if port not in plan
                    for speed, _ in task.optics
                    if speed > before and stock.get(speed, 1) > 0
                ]
                if not options:
                    return None
                port, before, speed, switch = min(options, key=_KEYS[choose](costs))
                plan[port] = speed
                mine.append((port, before, speed))
                used[switch] = used.get(switch, 0) + 1
                gained += speed - before
                if speed in stock:
                    stock[speed] -= 1
            if prune:
                for port, before, speed in sorted(mine, key=lambda m: (-costs[m[2]], m[0])):
                    if gained - (speed - before) >= block.need:
                        gained -= speed - before
                        del plan[port]
                        if speed in stock:
                            stock[speed] += 1
        return plan

    return rule


def _lowest_first(costs: dict[int, int]) -> Callable[[tuple], Any]:
    top = max(costs)
    return lambda o: (o[1], o[0], o[2] != top, -o[2])


_KEYS: dict[str, Callable[[dict[int, int]], Callable[[tuple], Any]]] = {
    "lowest": _lowest_first,
    "ratio": lambda c: lambda o: (-(o[2] - o[1]) / c[o[2]], -(o[2] - o[1]), o[0]),
    "gain": lambda c: lambda o: (-(o[2] - o[1]), c[o[2]], o[0]),
    "cheap": lambda c: lambda o: (c[o[2]], -(o[2] - o[1]), o[0]),
}
COVER_RULES: dict[str, Rule] = {
    "lowest_capacity_first": _cover("lowest"),
    "best_ratio": _cover("ratio"),
    "largest_gain_first": _cover("gain"),
    "cheapest_first": _cover("cheap"),
    "best_ratio_pruned": _cover("ratio", prune=True),
}


# -- filling -----------------------------------------------------------------------------------


def _fill_rule(speeds_in_order: Callable[[FillTask], list[int]], power: bool) -> Rule:
    """New ports of the first speed in `speeds_in_order` that fits anywhere, each on the
    existing switch with the fewest ports where it fits (without `power`, the port limit
    only, as plansolve's fill), else on a new switch, until the block's need is met."""

    def rule(task: FillTask) -> Plan | None:
        watts = {s: w for s, _, w in task.optics}
        index = {s: i for i, (s, _, _) in enumerate(task.optics)}
        ports = {s.name: s.ports for s in task.existing}
        power_now = {s.name: s.watts for s in task.existing}
        plan: dict[str, list[int]] = {}
        opened = 0
        gained = 0

        def fits(name: str, speed: int) -> bool:
            ok = ports[name] < task.max_ports
            return ok and (not power or power_now[name] + watts[speed] <= task.max_watts)

        while gained < task.need:
            placed = False
            for speed in speeds_in_order(task):
                room = [n for n in ports if fits(n, speed)]
                if room:
                    name = min(room, key=lambda n: (ports[n], n))
                    placed = True
                    break
            if not placed:
                if opened == len(task.names):
                    return None
                name = task.names[opened]
                opened += 1
                ports[name], power_now[name] = 0, 0
                speed = next((s for s in speeds_in_order(task) if fits(name, s)), None)
                if speed is None:
                    return None
            ports[name] += 1
            power_now[name] += watts[speed]
            plan.setdefault(name, [0] * len(task.optics))[index[speed]] += 1
            gained += speed
        return {k: tuple(v) for k, v in plan.items()}

    return rule


def _by(key: Callable[[tuple[int, int, int]], Any]) -> Callable[[FillTask], list[int]]:
    return lambda task: [s for s, _, _ in sorted(task.optics, key=key)]


FILL_RULES: dict[str, Rule] = {
    "fill_then_new": _fill_rule(lambda task: [task.optics[-1][0]], power=False),
    "best_ratio": _fill_rule(_by(lambda o: (o[1] / o[0], -o[0])), power=True),
    "fastest_first": _fill_rule(_by(lambda o: -o[0]), power=True),
    "cheapest_first": _fill_rule(_by(lambda o: (o[1], -o[0])), power=True),
}

RULES: dict[type, dict[str, Rule]] = {
    PackTask: {name: _pack_rule(name) for name in PACKERS},
    CoverTask: COVER_RULES,
    FillTask: FILL_RULES,
    TransportTask: TRANSPORT_RULES,
}


def defeated(task: Any) -> dict[str, str] | str:
    """How every greedy rule fails on `task` (rule -> why), or why the task is not kept:
    it has no plan, or some rule reaches the optimum."""
    best = optimum(task)
    if best is None:
        return "no plan meets every rule"
    value = best[0]
    out: dict[str, str] = {}
    for name, rule in RULES[type(task)].items():
        plan = rule(task)
        if plan is None:
            out[name] = "cannot place everything within the limits"
            continue
        errs, got = judge(task, plan)
        if errs:
            out[name] = f"breaks a rule: {errs[0]}"
        elif got > value:
            out[name] = f"misses the optimum: {list(got)} against {list(value)}"
        else:
            return f"the greedy rule {name} reaches the optimum"
    return out


def _fewest(need: int, room: list[int]) -> int:
    """The fewest of the `room`s that add up to `need` (len + 1 when they cannot)."""
    total = 0
    for k, r in enumerate(sorted(room, reverse=True), 1):
        if total >= need:
            return k - 1
        total += max(0, r)
    return len(room) if total >= need else len(room) + 1


def promising(task: Any) -> bool:
    """A cheap screen a drawer may use before the exact search: False for a drain no set
    of switches has the room for, or whose greedy plan keeps every rule and uses no more
    switches than a lower bound (the most of: the fewest switches whose free slots, or
    whose watts to spare, could hold the ports), which makes it optimal."""
    if not isinstance(task, PackTask) or task.balance or task.peak:
        return True
    watts = dict(task.watts)
    bound = 0
    for group in task.groups:
        bins = task.bins(group)
        need_watts = sum(watts[t] * c for t, c in zip(task.types, group.items, strict=True))
        fewest = max(
            _fewest(sum(group.items), [slots for slots, _, _ in bins]),
            _fewest(need_watts, [heads[0] for _, heads, _ in bins]),
        )
        if fewest > len(bins):
            return False  # not even every switch together has the room
        bound += fewest
    for rule in RULES[PackTask].values():
        plan = rule(task)
        if plan is not None:
            errs, value = judge(task, plan)
            if not errs and value[0] <= bound:
                return False
    return True
