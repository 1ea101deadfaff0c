"""MALT levels 6-8: the exact searches' optima on drawn tasks (the sizes queries have, where
brute force cannot go) against an independent formulation as integer programs solved by
HiGHS (scipy.optimize.milp, zero gap); lexicographic goals one after the other."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

from generators.malt.config import SIZES, TopologyConfig
from generators.malt.coupled import CoverTask, FillTask, PackTask, optimum
from generators.malt.coupleddraw import CoupledDrawer
from generators.malt.coupledspec import KINDS, task_of
from generators.malt.coupledtransport import TransportTask
from generators.malt.index import Redraw, TopoIndex
from generators.malt.topology import synthetic_topology

G = 1_000_000_000
PER_KIND = 12


class Program:
    """Integer variables >= 0 and linear rows, minimised one objective at a time."""

    def __init__(self) -> None:
        self.high: list[float] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, high: float = np.inf) -> int:
        self.high.append(high)
        return len(self.high) - 1

    def row(self, coefs: dict[int, float], low: float = -np.inf, high: float = np.inf) -> None:
        self.rows.append((coefs, low, high))

    def minimum(self, objective: dict[int, float]) -> int | None:
        a = np.zeros((len(self.rows), len(self.high)))
        for r, (coefs, _, _) in enumerate(self.rows):
            for i, v in coefs.items():
                a[r, i] += v
        c = np.zeros(len(self.high))
        for i, v in objective.items():
            c[i] += v
        found = milp(
            c,
            constraints=[LinearConstraint(a, [r[1] for r in self.rows], [r[2] for r in self.rows])],
            integrality=np.ones(len(self.high)),
            bounds=Bounds(0, self.high),
            options={"mip_rel_gap": 0},
        )
        if found.status != 0:
            return None
        value = round(found.fun)
        self.row(objective, value, value)  # the next goal keeps this one's optimum
        return value


def pack_program(task: PackTask) -> tuple[int, ...] | None:
    p, watts, used, x = Program(), dict(task.watts), {}, {}
    types = range(len(task.types))
    for g, group in enumerate(task.groups):
        for b, (slots, heads, base) in enumerate(task.bins(group)):
            used[g, b] = (p.var(1), base)
            for t in types:
                x[g, b, t] = p.var()
            y = used[g, b][0]
            p.row({**{x[g, b, t]: 1 for t in types}, y: -slots}, high=0)
            for j, load in enumerate(task.loads()):
                unit = G if j == 1 else 1  # the blast radius's row in Gbps
                p.row(
                    {**{x[g, b, t]: load[t] // unit for t in types}, y: -heads[j] // unit}, high=0
                )
    for t in types:
        if task.balance:
            p.row({v: 1 for k, v in x.items() if k[2] == t}, task.pool[t], task.pool[t])
        else:
            for g, group in enumerate(task.groups):
                own = {v: 1 for k, v in x.items() if k[0] == g and k[2] == t}
                p.row(own, group.items[t], group.items[t])
    if task.balance:
        gain = {v: (1 if k[0] == 0 else -1) * task.types[k[2]] // G for k, v in x.items()}
        p.row(gain, 0, 0)
    fewest = p.minimum({y: 1 for y, _ in used.values()})
    if fewest is None or not task.peak:
        return None if fewest is None else (fewest,)
    top, big = p.var(), 10**6
    for (g, b), (y, base) in used.items():
        power = {x[g, b, t]: -watts[task.types[t]] for t in types}
        p.row({top: 1, **power, y: -(base + big)}, low=-big)  # only switches taking ports
    return fewest, p.minimum({top: 1})


def cover_program(task: CoverTask) -> tuple[int, ...] | None:
    p, cost, stock = Program(), {}, dict(task.stock)
    scarce: dict[int, dict[int, float]] = {s: {} for s in stock}
    for block in task.blocks:
        gain: dict[int, float] = {}
        for _, ports in block.switches:
            mine: dict[int, float] = {}
            for _, speed in ports:
                one: dict[int, float] = {}
                for optic, price in task.optics:
                    if optic > speed:
                        z = p.var(1)
                        cost[z], one[z], mine[z], gain[z] = price, 1, 1, (optic - speed) // G
                        if optic in stock:
                            scarce[optic][z] = 1
                p.row(one, high=1)
            p.row(mine, high=task.per_switch)
        p.row(gain, low=-(-block.need // G))
    for speed, row in scarce.items():
        p.row(row, high=stock[speed])
    found = p.minimum(cost)
    return None if found is None else (found,)


def fill_program(task: FillTask) -> tuple[int, ...] | None:
    p, gain, cost, ports, new = Program(), {}, {}, {}, []

    def switch(slots: int, head: int, opened: int | None) -> None:
        """A switch's new ports by speed; a new one (`opened` its 0/1 variable) takes up
        to its limits only when opened, and then at least one port."""
        xs = [p.var() for _ in task.optics]
        count = {x: 1 for x in xs}
        power = {x: w for x, (_, _, w) in zip(xs, task.optics, strict=True)}
        if opened is None:
            p.row(count, high=slots)
            p.row(power, high=head)
        else:
            p.row({**count, opened: -slots}, high=0)
            p.row({**power, opened: -head}, high=0)
            p.row({**count, opened: -1}, low=0)
        for x, (speed, price, _) in zip(xs, task.optics, strict=True):
            gain[x], cost[x], ports[x] = speed // G, price, 1

    for sw in task.existing:
        slots, head = task.max_ports - sw.ports, task.max_watts - sw.watts
        switch(*((slots, head) if slots >= 0 and head >= 0 else (0, 0)), None)
    for _ in task.names:
        new.append(p.var(1))
        switch(task.max_ports, task.max_watts, new[-1])
    p.row(gain, low=-(-task.need // G))
    first = p.minimum({y: 1 for y in new})
    return None if first is None else (first, p.minimum(cost), p.minimum(ports))


def transport_program(task: TransportTask) -> tuple[int, ...] | None:
    p, cost = Program(), {}
    for group in task.groups:
        x = {}
        for b, (slots, caps, costs) in enumerate(task.bins(group)):
            for t in range(len(task.types)):
                x[b, t] = p.var(caps[t])
                cost[x[b, t]] = costs[t]
            p.row({x[b, t]: 1 for t in range(len(task.types))}, high=slots)
        for t, n in enumerate(group.items):
            p.row({v: 1 for k, v in x.items() if k[1] == t}, n, n)
    found = p.minimum(cost)
    return None if found is None else (found,)


PROGRAMS = {
    PackTask: pack_program,
    CoverTask: cover_program,
    FillTask: fill_program,
    TransportTask: transport_program,
}


@pytest.fixture(scope="module")
def drawers() -> dict[str, tuple[CoupledDrawer, TopoIndex]]:
    """The small topology, and the default one for drain_min_cost (no stage of the small
    one is wide enough for it)."""
    out = {}
    for size in ("small", "medium"):
        cfg = TopologyConfig(source="synthetic", seed=7, **SIZES[size])
        index = TopoIndex(synthetic_topology(cfg))
        out[size] = (CoupledDrawer(index), index)
    return out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_drawn_tasks_have_the_optimum_an_integer_program_finds(drawers, kind):
    draw, index = drawers["medium" if kind == "drain_min_cost" else "small"]
    rng, seen, feasible = random.Random(kind), 0, 0
    while seen < PER_KIND:
        try:
            task = task_of(draw.draws[kind](rng), index)
        except Redraw:
            continue
        seen += 1
        found = optimum(task)
        assert (found and found[0]) == PROGRAMS[type(task)](task), task
        feasible += found is not None
    assert feasible, "no drawn task had a plan"
