"""MALT levels 6-8: the exact searches (coupledsolve.py, through the models of coupled.py)
against brute-force enumeration of every plan on tiny random instances, judged by the same
rule the checker uses (coupled.judge); and the work budget."""

from __future__ import annotations

import itertools
import random

import pytest

from generators.malt import coupledsolve as cs
from generators.malt.coupled import (
    CoverBlock,
    CoverTask,
    FillTask,
    PackGroup,
    PackTask,
    judge,
    solve,
)
from generators.malt.coupleddraw import _balanced
from generators.malt.coupledread import Switch

G = 1_000_000_000
CASES = 60


def best_of(task, plans):
    """The least value of the plans that break no rule (None: none)."""
    values = []
    for plan in plans:
        errs, value = judge(task, plan)
        if not errs:
            values.append(value)
    return min(values, default=None)


def check(task, plans):
    """The solver's value equals the brute force's; its plan and the other-order plan keep
    every rule and reach it."""
    want = best_of(task, plans)
    got = solve(task)
    assert (got and got[0]) == want, task
    if got is not None:
        for order in (1, -1):
            _, plan = solve(task, order)
            assert judge(task, plan) == ([], want), (task, order, plan)
    return want is not None


def switches(rng, count, watts, prefix="s"):
    out = []
    for i in range(count):
        speeds = [rng.choice(list(watts)) for _ in range(rng.randint(0, 3))]
        out.append(Switch(f"{prefix}{i}", len(speeds), sum(watts[s] for s in speeds), sum(speeds)))
    return tuple(out)


def pack_task(rng, balance=False, peak=False):
    types = (10 * G, 40 * G, 100 * G)
    watts = {t: w for t, w in zip(types, sorted(rng.sample(range(1, 9), 3)), strict=True)}
    groups, pool = [], None
    for stage in (2, 3) if (balance or rng.random() < 0.4) else (2,):
        most = 2 if stage == 2 else 1  # at most 9 ports in all: 3 ** 9 plans
        items = (0, 0, 0) if balance else tuple(rng.randint(0, most) for _ in types)
        takers = switches(rng, rng.randint(1, 2 if balance else 3), watts, f"st{stage}s")
        groups.append(PackGroup(stage, takers, items))
    while balance and not (pool and _balanced(types, pool)):
        pool = tuple(rng.randint(0, 2) for _ in types)
    return PackTask(
        types=types,
        watts=tuple(sorted(watts.items())),
        groups=tuple(groups),
        max_ports=rng.randint(2, 5),
        max_watts=rng.randint(6, 24),
        max_bps=rng.choice([None, 150 * G, 220 * G]) if peak else None,
        peak=peak,
        pool=pool,
    )


def pack_plans(task):
    """Every plan: each port to any switch that may take it."""
    if task.balance:
        items = [(t, None) for t, c in zip(task.types, task.pool, strict=True) for _ in range(c)]
        takers = [s.name for g in task.groups for s in g.switches]
    else:
        items = [
            (t, i)
            for i, g in enumerate(task.groups)
            for t, c in zip(task.types, g.items, strict=True)
            for _ in range(c)
        ]
    for choice in itertools.product(*[
        takers if i is None else [s.name for s in task.groups[i].switches] for _, i in items
    ]):  # fmt: skip
        plan: dict[str, list[int]] = {}
        for (speed, _), name in zip(items, choice, strict=True):
            plan.setdefault(name, [0, 0, 0])[task.types.index(speed)] += 1
        yield {k: tuple(v) for k, v in plan.items()}


@pytest.mark.parametrize(
    ("balance", "peak"),
    [(False, False), (True, False), (False, True)],
    ids=["drain", "two_stage", "blast_radius"],
)
def test_pack_is_the_best_of_every_assignment(balance, peak):
    rng = random.Random(f"pack/{balance}/{peak}")
    feasible = 0
    for _ in range(CASES):
        task = pack_task(rng, balance, peak)
        feasible += check(task, pack_plans(task))
    assert 8 <= feasible < CASES  # both outcomes were exercised


def cover_task(rng, blocks):
    speeds = (10 * G, 40 * G, 100 * G)
    costs = sorted(rng.sample(range(2, 20), 3))
    faster = zip((100 * G, 200 * G, 400 * G), costs, strict=True)
    optics = tuple((s, c) for s, c in faster if rng.random() < 0.8)
    optics = optics or ((400 * G, 9),)
    made = []
    for b in range(blocks):
        sws = []
        for s in range(rng.randint(1, 2)):
            ports = [
                (f"b{b}s{s}p{p}", rng.choice(speeds)) for p in range(rng.randint(1, 4 - blocks))
            ]
            sws.append((f"b{b}s{s}", tuple(ports)))
        made.append(CoverBlock(f"b{b}", G * rng.randint(30, 700), tuple(sws)))
    stock = ((optics[-1][0], rng.randint(0, 3)),) if rng.random() < 0.6 else ()
    return CoverTask(tuple(made), optics, stock, per_switch=rng.randint(1, 3))


def cover_plans(task):
    ports = [(p, s) for b in task.blocks for _, ps in b.switches for p, s in ps]
    menus = [[None] + [o for o, _ in task.optics if o > s] for _, s in ports]
    for choice in itertools.product(*menus):
        yield {p: o for (p, _), o in zip(ports, choice, strict=True) if o is not None}


@pytest.mark.parametrize("blocks", [1, 2])
def test_cover_is_the_cheapest_of_every_upgrade_set(blocks):
    rng = random.Random(f"cover/{blocks}")
    feasible = 0
    for _ in range(CASES):
        task = cover_task(rng, blocks)
        feasible += check(task, cover_plans(task))
    assert 8 <= feasible < CASES


def fill_task(rng):
    optics = tuple(
        sorted(
            (s, rng.randint(1, 12), rng.randint(2, 9))
            for s in rng.sample([40 * G, 100 * G, 200 * G, 400 * G], 2)
        )
    )
    watts = {10 * G: 2, **{s: w for s, _, w in optics}}
    return FillTask(
        block="b",
        stage=2,
        need=G * rng.randint(40, 1200),
        optics=optics,
        existing=switches(rng, rng.randint(1, 2), watts),
        names=("n1", "n2"),
        max_ports=rng.randint(2, 3),
        max_watts=rng.randint(8, 30),
    )


def fill_plans(task):
    bins = [s.name for s in task.existing] + list(task.names)
    # Vectors past the port limit break a rule whatever else: every other plan is tried.
    each = [
        v
        for v in itertools.product(range(task.max_ports + 1), repeat=len(task.optics))
        if sum(v) <= task.max_ports
    ]
    for choice in itertools.product(each, repeat=len(bins)):
        yield {
            name: vector
            for name, vector in zip(bins, choice, strict=True)
            if any(vector) or name not in task.names
        }


def test_fill_is_fewest_new_switches_then_cheapest_then_fewest_ports():
    rng = random.Random("fill")
    feasible = 0
    for _ in range(CASES // 2):
        task = fill_task(rng)
        feasible += check(task, fill_plans(task))
    assert 5 <= feasible < CASES // 2


def test_a_search_past_its_budget_raises_overflow():
    counts, bins, loads = (6, 6), [(6, (60,), 0)] * 6, ((3, 5),)
    assert cs.pack(counts, bins, loads)[0] == 2
    with pytest.raises(OverflowError, match="budget"):
        cs.pack(counts, bins, loads, budget=[100])
