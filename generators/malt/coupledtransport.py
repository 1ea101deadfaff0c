"""The level-8 drain at least cost (`drain_min_cost`): a transportation problem.

Several switches of one stage of a block are drained; each drained port goes to another
switch of that stage (not drained), every receiver ending with at most `max_ports` ports
and taking at most `per_speed` moved ports of any one speed, and a moved port of speed s
on receiver r costs the task's `costs[r][s]` (the optics and cabling there). Least total
cost. Each stage is a min-cost flow (source -> speed -> receiver -> sink:
coupledsolve.transport), solved exactly in a few ms; the per-switch search that solves
the other drains (coupledsolve.pack: switch by switch over the counts of ports left by
speed) has to visit about prod(n_s + 1) states per switch, which `dp_work` estimates: the
drawer keeps only tasks where that is far beyond the sandbox's CPU limit, and only tasks
that every greedy rule below gets wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from generators.malt import coupledsolve as cs
from generators.malt.coupledread import Switch

Value = tuple[int, ...]
Plan = dict[str, Any]
# The least work (dp_work) a kept task's per-switch search takes: a plain dict-of-states
# search over the counts left (cheaper per pair than coupledsolve.pack) ran at 4-8 M pairs
# per CPU-s here (ten drawn tasks, 11.6 M pairs in 2.1 s to 263 M in 36.7 s), so this is
# 7.5 CPU-s and up, past the sandbox's 5.
SEARCH_FLOOR = 60_000_000
Rule = Callable[["TransportTask"], Plan | None]


@dataclass(frozen=True)
class Stage:
    """One stage's drained ports (per type) and the switches that may take them."""

    stage: int
    switches: tuple[Switch, ...]
    items: tuple[int, ...]
    costs: tuple[tuple[int, ...], ...]  # per switch, per type


@dataclass(frozen=True)
class TransportTask:
    types: tuple[int, ...]  # port speeds (bps), ascending
    groups: tuple[Stage, ...]
    max_ports: int
    per_speed: int

    def bins(self, group: Stage) -> list[tuple[int, tuple[int, ...], tuple[int, ...]]]:
        """coupledsolve.transport's bins: free slots, cap per type, cost per type."""
        return [
            (max(0, self.max_ports - sw.ports), (self.per_speed,) * len(self.types), costs)
            for sw, costs in zip(group.switches, group.costs, strict=True)
        ]


def transport_solve(task: TransportTask, order: int = 1) -> tuple[Value, Plan] | None:
    plan: Plan = {}
    total = 0
    for group in task.groups:
        found = cs.transport(group.items, task.bins(group), order)
        if found is None:
            return None
        total += found[0]
        for sw, vector in zip(group.switches, found[1], strict=True):
            if any(vector):
                plan[sw.name] = tuple(vector)
    return (total,), plan


def transport_judge(task: TransportTask, plan: Plan) -> tuple[list[str], Value]:
    """(rules the plan breaks, its total cost): plan = switch -> ports taken, per type."""
    errs: list[str] = []
    where = {
        sw.name: (i, sw, costs)
        for i, g in enumerate(task.groups)
        for sw, costs in zip(g.switches, g.costs, strict=True)
    }
    taken = [[0] * len(task.types) for _ in task.groups]
    cost = 0
    for name, vector in sorted(plan.items()):
        if not any(vector):
            continue
        if name not in where:
            errs.append(f"{name} may not take ports in this task")
            continue
        i, sw, costs = where[name]
        taken[i] = [a + b for a, b in zip(taken[i], vector, strict=True)]
        cost += sum(c * a for c, a in zip(costs, vector, strict=True))
        if sw.ports + sum(vector) > task.max_ports:
            errs.append(
                f"{name} ends with {sw.ports + sum(vector)} ports; at most {task.max_ports} "
                "are allowed"
            )
        for speed, got in zip(task.types, vector, strict=True):
            if got > task.per_speed:
                errs.append(
                    f"{name} takes {got} moved ports of {speed} bps; at most {task.per_speed} "
                    "of one speed are allowed"
                )
    for group, got in zip(task.groups, taken, strict=True):
        if tuple(got) != group.items:
            errs.append(
                f"stage-{group.stage} switches take {list(got)} ports by speed "
                f"{list(task.types)}; the drained ports of that stage are {list(group.items)}"
            )
    return errs, (cost,)


def dp_work(task: TransportTask) -> int:
    """About how many (state, choice) pairs the switch-by-switch search over the counts of
    ports left by speed (coupledsolve.pack's shape) tries: per switch, every count vector
    times every vector the switch could take."""
    work = 0
    for group in task.groups:
        states = math.prod(n + 1 for n in group.items)
        for slots, caps, _ in task.bins(group):
            limits = [min(n, c) for n, c in zip(group.items, caps, strict=True)]
            work += states * len(cs.vectors(limits, slots, (), ()))
    return work


# -- greedy rules: each places every port by a local choice -----------------------------


class _Room:
    def __init__(self, task: TransportTask, group: Stage) -> None:
        self.task = task
        self.slots = [max(0, task.max_ports - sw.ports) for sw in group.switches]
        self.took = [[0] * len(task.types) for _ in group.switches]

    def fits(self, j: int, t: int) -> int:
        return min(self.slots[j], self.task.per_speed - self.took[j][t])

    def put(self, j: int, t: int, k: int) -> None:
        self.slots[j] -= k
        self.took[j][t] += k


def _run(place: Callable[[TransportTask, Stage, _Room, list[int]], bool]) -> Rule:
    def rule(task: TransportTask) -> Plan | None:
        plan: Plan = {}
        for group in task.groups:
            room, left = _Room(task, group), list(group.items)
            if not place(task, group, room, left) or any(left):
                return None
            for sw, took in zip(group.switches, room.took, strict=True):
                if any(took):
                    plan[sw.name] = tuple(took)
        return plan

    return rule


def _cheapest_cell(task: TransportTask, group: Stage, room: _Room, left: list[int]) -> bool:
    """Least-cost cell first, as much as it takes (the textbook minimum-cell start)."""
    cells = sorted((c, j, t) for j, costs in enumerate(group.costs) for t, c in enumerate(costs))
    for _, j, t in cells:
        k = min(left[t], room.fits(j, t))
        room.put(j, t, k)
        left[t] -= k
    return True


def _port_by_port(order: Callable[[TransportTask, Stage], list[int]]) -> Callable[..., bool]:
    """Each port, speeds in `order`, to the cheapest switch with room for it."""

    def place(task: TransportTask, group: Stage, room: _Room, left: list[int]) -> bool:
        for t in order(task, group):
            while left[t]:
                open_ = [j for j in range(len(group.switches)) if room.fits(j, t) > 0]
                if not open_:
                    return False
                j = min(open_, key=lambda j: (group.costs[j][t], j))
                room.put(j, t, 1)
                left[t] -= 1
        return True

    return place


def _vogel(task: TransportTask, group: Stage, room: _Room, left: list[int]) -> bool:
    """Vogel's approximation: the speed whose two cheapest open switches differ most goes
    first, to its cheapest, as much as fits."""
    while any(left):
        best = None
        for t, n in enumerate(left):
            if not n:
                continue
            open_ = sorted(
                (group.costs[j][t], j) for j in range(len(group.switches)) if room.fits(j, t)
            )
            if not open_:
                return False
            regret = open_[1][0] - open_[0][0] if len(open_) > 1 else 10**9
            if best is None or regret > best[0]:
                best = (regret, t, open_[0][1])
        assert best is not None
        _, t, j = best
        k = min(left[t], room.fits(j, t))
        room.put(j, t, k)
        left[t] -= k
    return True


def _cheapest_switch(task: TransportTask, group: Stage, room: _Room, left: list[int]) -> bool:
    """Switches by their mean cost, each filled with the speeds cheapest on it."""
    for j in sorted(range(len(group.switches)), key=lambda j: (sum(group.costs[j]), j)):
        for t in sorted(range(len(task.types)), key=lambda t: (group.costs[j][t], t)):
            k = min(left[t], room.fits(j, t))
            room.put(j, t, k)
            left[t] -= k
    return True


TRANSPORT_RULES: dict[str, Rule] = {
    "cheapest_cell_first": _run(_cheapest_cell),
    "fastest_port_first": _run(_port_by_port(lambda task, g: list(range(len(task.types)))[::-1])),
    "most_ports_first": _run(
        _port_by_port(lambda task, g: sorted(range(len(task.types)), key=lambda t: -g.items[t]))
    ),
    "vogel": _run(_vogel),
    "cheapest_switch_first": _run(_cheapest_switch),
}
