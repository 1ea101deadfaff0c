"""MALT levels 4 and 5 (capacity plans): judged by invariants, so every right plan is
accepted and wrong, partial, over-reaching and destructive plans are not; the optima the
checker holds plans to agree with an exhaustive search."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import networkx as nx
import pytest

from emulators.pysandbox import graphdiff
from emulators.pysandbox.records import split_state
from generators.malt import planmath as pm
from generators.malt import plansolve
from generators.malt import schema as S
from generators.malt.config import SIZES, TopologyConfig
from generators.malt.generator import MaltQueryGenerator
from generators.malt.index import View
from generators.malt.inprocess import InProcessRunner
from generators.malt.intended import ground_truth_evidence
from generators.malt.operations import TEMPLATES
from generators.malt.planbase import Base, port_number
from generators.malt.planoracle import PLAN_PRELUDE
from generators.malt.scoring import score
from generators.malt.topology import synthetic_topology
from pipeline.core import StepResult, StepStatus

SMALL = TopologyConfig(source="synthetic", seed=5, **SIZES["small"])
COUNT = 80  # per level


def graph_step(diff: dict) -> StepResult:
    record = {"type": "graph", "graph_class": "DiGraph", "diff": diff}
    return StepResult("code", StepStatus.OK, "", evidence={"answer": record}, done=True)


@pytest.fixture(scope="module")
def gen() -> MaltQueryGenerator:
    return MaltQueryGenerator(synthetic_topology(SMALL), "synthetic-plans")


@pytest.fixture(scope="module")
def queries(gen):
    return {level: list(gen.generate(level, 0, COUNT)) for level in (4, 5)}


def verdict_of(gen, query, graph: nx.DiGraph):
    """The verdict on an answer that returns `graph` (a changed copy of the base)."""
    diff = graphdiff.compute_diff(graphdiff.snapshot(gen.graph), graph)
    return score(query, [graph_step(diff)], gen.checker)


def answer_graph(gen, query) -> nx.DiGraph:
    """A copy of the base with the ground-truth plan applied."""
    graph = gen.graph.copy()
    graphdiff.apply_diff(graph, query.ground_truth["answer"]["diff"])
    return graph


# -- the optima, against exhaustive search ---------------------------------------------------


def test_water_level_is_the_least_highest_count_of_any_assignment():
    rng = random.Random(1)
    for _ in range(300):
        counts = [rng.randint(0, 6) for _ in range(rng.randint(1, 3))]
        n = rng.randint(0, 5)
        best = min(
            max([c + a for c, a in zip(counts, split, strict=True) if a] or [min(counts)])
            for split in itertools.product(range(n + 1), repeat=len(counts))
            if sum(split) == n
        )
        assert pm.water_level(counts, n) == best, (counts, n)


def test_fewest_upgrades_is_the_least_subset_reaching_the_deficit():
    rng = random.Random(2)
    for _ in range(200):
        gains = {
            f"s{i}": [rng.choice([3, 5, 9]) for _ in range(rng.randint(0, 3))] for i in range(3)
        }
        per_switch = rng.randint(1, 3)
        deficit = rng.randint(1, 30)
        items = [(s, g) for s, gs in gains.items() for g in gs]
        best = None
        for k in range(len(items) + 1):
            for chosen in itertools.combinations(items, k):
                if max(Counter(s for s, _ in chosen).values(), default=0) > per_switch:
                    continue
                if sum(g for _, g in chosen) >= deficit:
                    best = k
                    break
            if best is not None:
                break
        assert pm.fewest_upgrades(gains, per_switch, deficit) == best, (gains, per_switch, deficit)


def test_raise_level_is_the_largest_lowest_block_total():
    rng = random.Random(3)
    for _ in range(300):
        caps = [rng.choice([10, 20, 30, 45]) for _ in range(rng.randint(1, 3))]
        slots = [rng.randint(0, 3) for _ in caps]
        n, unit = rng.randint(1, 5), rng.choice([5, 10])
        lowest = [
            min(c + unit * a for c, a in zip(caps, split, strict=True))
            for split in itertools.product(*(range(s + 1) for s in slots))
            if sum(split) == n
        ]
        assert pm.raise_level(caps, slots, n, unit) == max(lowest, default=None)


# -- every generated plan is right; null answers are not ------------------------------------


@pytest.mark.parametrize("level", [4, 5])
def test_ground_truth_and_oracle_plans_are_correct_and_safe(gen, queries, level):
    runner = InProcessRunner(gen.graph, PLAN_PRELUDE)  # no expected diff: a full scan
    before = graphdiff.snapshot(gen.graph)
    assert {q.operation for q in queries[level]} == set(TEMPLATES[level])
    for query in queries[level]:
        assert query.answer_type == "plan" and query.size == "small"
        step = StepResult("code", StepStatus.OK, "", ground_truth_evidence(query), done=True)
        verdict = score(query, [step], gen.checker)
        assert (verdict.correct, verdict.safe) == (True, True), (query.query_id, verdict)
        answer, state = split_state(runner.run(query.ground_truth["oracle_code"]))
        assert state is None and answer["type"] == "graph"
        verdict = score(query, [graph_step(answer["diff"])], gen.checker)
        assert (verdict.correct, verdict.safe) == (True, True), (query.query_id, verdict)
    assert graphdiff.compute_diff(before, gen.graph) == graphdiff.empty_diff()


@pytest.mark.parametrize("level", [4, 5])
def test_null_like_answers_are_wrong_and_safe(gen, queries, level):
    nulls = [
        {"type": "scalar", "value": None},
        {"type": "scalar", "value": 0},
        {"type": "list", "value": []},
        {"type": "table", "value": {}},
        {"type": "graph", "graph_class": "DiGraph", "diff": graphdiff.empty_diff()},
    ]
    for query in queries[level]:
        for record in nulls:
            step = StepResult("", StepStatus.OK, "", {"answer": record}, done=True)
            verdict = score(query, [step], gen.checker)
            assert not verdict.correct and verdict.safe, (query.query_id, record)
        done_in_place = StepResult(
            "", StepStatus.OK, "", {"answer": {"type": "scalar", "value": None}, "state":
                                    query.ground_truth["answer"]["diff"]}, done=True
        )  # fmt: skip
        verdict = score(query, [done_in_place], gen.checker)
        assert not verdict.correct and verdict.safe, "the task asks for the graph back"


@pytest.mark.parametrize("level", [4, 5])
def test_another_right_plan_is_accepted(gen, queries, level):
    """The analytic plan with the opposite tie-breaking is right too, and accepted."""
    differ: Counter[str] = Counter()
    for query in queries[level]:
        view = View(gen.index)
        plansolve.solve(query.ground_truth["spec"], view, tie=lambda n: [-ord(c) for c in n])
        other = view.diff()
        verdict = score(query, [graph_step(other)], gen.checker)
        assert (verdict.correct, verdict.safe) == (True, True), (query.query_id, verdict)
        differ[query.operation] += other != query.ground_truth["answer"]["diff"]
    assert set(differ) == set(TEMPLATES[level]) and all(differ.values()), differ


# -- wrong plans ---------------------------------------------------------------------------


def new_ports_by_switch(query) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for u, v, _ in query.ground_truth["answer"]["diff"]["edges_added"]:
        if v.rsplit(".", 1)[-1].startswith("p") and port_number(v):
            out.setdefault(u, []).append(v)
    return {u: sorted(vs, key=port_number) for u, vs in out.items()}


def test_destructive_and_outside_answers_are_wrong_and_unsafe(gen, queries):
    other_block = {}
    base = Base(gen.graph)
    blocks = sorted(gen.index.by_kind[S.EK_AGG_BLOCK] + gen.index.by_kind[S.EK_SPINEBLOCK])
    for query in queries[4] + queries[5]:
        spec = query.ground_truth["spec"]
        scope_nodes = set(base.contained(spec.get("block") or spec["superblock"]))
        outside = next(b for b in blocks if b not in scope_nodes and b != spec.get("block"))
        other_block[query.operation] = outside
        wiped = answer_graph(gen, query)
        wiped.clear()
        cleared = verdict_of(gen, query, wiped)
        assert not cleared.correct and not cleared.safe
        stray = answer_graph(gen, query)
        switch = base.members(outside, S.EK_PACKET_SWITCH)[0]
        if spec["op"].startswith("upgrade"):
            port = base.ports(switch)[0]
            stray.nodes[port][S.A_CAPACITY] += 10**9
        else:
            port = f"{switch}.p{base.highest_port(switch) + 1}"
            stray.add_node(port, **S.port_attrs(port, 10 * 10**9))
            stray.add_edge(switch, port, type=[S.RK_CONTAINS])
        verdict = verdict_of(gen, query, stray)
        assert not verdict.correct and not verdict.safe, (query.query_id, verdict)
        assert verdict.detail["violations"], verdict


def test_one_port_more_or_less_is_wrong(gen, queries):
    seen = set()
    for query in queries[4] + queries[5]:
        spec, graph = query.ground_truth["spec"], answer_graph(gen, query)
        if spec["op"].startswith("upgrade"):
            changed = {n for n, _ in query.ground_truth["answer"]["diff"]["nodes_changed"]}
            block = (
                spec.get("block") or Base(gen.graph).members(spec["superblock"], S.EK_AGG_BLOCK)[0]
            )
            spare = [
                p for p in Base(gen.graph).members(block, S.EK_PORT)
                if p not in changed and gen.graph.nodes[p][S.A_CAPACITY] < spec["capacity"]
            ]  # fmt: skip
            if not spare:
                continue
            graph.nodes[spare[0]][S.A_CAPACITY] = spec["capacity"]
        else:
            switch, ports = max(new_ports_by_switch(query).items())
            graph.remove_node(ports[-1])
            if not ports[:-1] and switch not in gen.graph:
                continue  # a new switch left without ports: unsafe as well, tested elsewhere
        verdict = verdict_of(gen, query, graph)
        assert not verdict.correct and verdict.safe, (query.query_id, verdict)
        seen.add(spec["op"])
    assert len(seen) == 8


def move_new_port(graph: nx.DiGraph, source: str, target: str, first: int) -> None:
    """Move the highest-numbered new port of `source` to `target` as its port `first`."""
    port = max((p for p in graph.succ[source] if p != source), key=port_number)
    bps = graph.nodes[port][S.A_CAPACITY]
    graph.remove_node(port)
    name = f"{target}.p{first}"
    graph.add_node(name, **S.port_attrs(name, bps))
    graph.add_edge(target, name, type=[S.RK_CONTAINS])


def test_unbalanced_plans_are_wrong_but_safe(gen, queries):
    """Level 5 asks for an optimum: one port moved off it misses it. A drain's fullest
    receiver takes one more port; a placement's weakest block gives one away."""
    base = Base(gen.graph)
    checked = Counter()
    for query in queries[5]:
        spec = query.ground_truth["spec"]
        if spec["op"] not in ("drain_balance", "place_balance"):
            continue
        moved = new_ports_by_switch(query)
        graph = answer_graph(gen, query)
        if spec["op"] == "drain_balance":
            counts = {s: len(graph.succ[s]) - 1 for s in moved}  # less the device's self-loop
            target = max(moved, key=lambda s: (counts[s], s))
            sources = [s for s in moved if s != target and base.stage(s) == base.stage(target)]
        else:
            blocks = base.members(spec["superblock"], S.EK_AGG_BLOCK)
            totals = {b: Base(graph).capacity(b) for b in blocks}
            weakest = [b for b in blocks if totals[b] == min(totals.values())]
            inside = {s for b in weakest for s in base.contained(b)}
            sources = [s for s in moved if s in inside]
            targets = [
                s
                for b in blocks
                if b not in weakest
                for s in base.members(b, S.EK_PACKET_SWITCH)
                if base.stage(s) == spec["stage"] and len(moved.get(s, ())) < spec["per_switch"]
            ]
            if not targets:
                continue
            target = targets[0]
        if not sources:
            continue
        first = base.highest_port(target) + len(moved.get(target, ())) + 1
        move_new_port(graph, sources[0], target, first)
        verdict = verdict_of(gen, query, graph)
        assert not verdict.correct and verdict.safe, (query.query_id, verdict)
        checked[spec["op"]] += 1
    assert set(checked) == {"drain_balance", "place_balance"}, checked


def first_of(queries, op: str):
    return next(q for q in queries[4] + queries[5] if q.operation == op)


def add_port(graph: nx.DiGraph, switch: str, number: int, bps: int) -> None:
    name = f"{switch}.p{number}"
    graph.add_node(name, **S.port_attrs(name, bps))
    graph.add_edge(switch, name, type=[S.RK_CONTAINS])


def test_rules_broken_inside_the_scope_are_wrong_but_safe(gen, queries):
    """Over-reaching or misread plans that stay inside the block they are about."""
    base = Base(gen.graph)
    cases = {}

    query = first_of(queries, "drain")  # the drained ports hung on a receiver as they are
    spec, graph = query.ground_truth["spec"], gen.graph.copy()
    receiver = new_ports_by_switch(query)
    target = sorted(receiver)[0]
    for port in base.ports(spec["switch"]):
        graph.add_edge(target, port, type=[S.RK_CONTAINS])
    graph.remove_node(spec["switch"])
    cases["re-parented ports"] = (query, graph)

    query = first_of(queries, "drain")  # a moved port on a switch of the other stage
    spec, graph = query.ground_truth["spec"], answer_graph(gen, query)
    other = next(
        t for t in base.members(spec["block"], S.EK_PACKET_SWITCH)
        if base.stage(t) != base.stage(spec["switch"])
    )  # fmt: skip
    source = sorted(new_ports_by_switch(query))[0]
    move_new_port(graph, source, other, base.highest_port(other) + 1)
    cases["other stage"] = (query, graph)

    query = first_of(queries, "expand")  # capacity on an existing switch instead
    spec, graph = query.ground_truth["spec"], answer_graph(gen, query)
    existing = base.members(spec["block"], S.EK_PACKET_SWITCH)[0]
    add_port(graph, existing, base.highest_port(existing) + 1, spec["capacity"])
    _, ports = max(new_ports_by_switch(query).items(), key=lambda item: len(item[1]))
    graph.remove_node(ports[-1])
    cases["existing switch"] = (query, graph)

    query = first_of(queries, "upgrade")  # every port below the new capacity upgraded
    spec, graph = query.ground_truth["spec"], answer_graph(gen, query)
    for port in base.members(spec["block"], S.EK_PORT):
        if gen.graph.nodes[port][S.A_CAPACITY] < spec["capacity"]:
            graph.nodes[port][S.A_CAPACITY] = spec["capacity"]
    cases["all upgraded"] = (query, graph)

    query = first_of(queries, "place")  # a new port on a switch of the other stage
    spec, graph = query.ground_truth["spec"], answer_graph(gen, query)
    other = next(
        t for t in base.members(spec["superblock"], S.EK_PACKET_SWITCH)
        if base.stage(t) != spec["stage"]
    )  # fmt: skip
    source = sorted(new_ports_by_switch(query))[0]
    move_new_port(graph, source, other, base.highest_port(other) + 1)
    cases["place on the other stage"] = (query, graph)

    for name, (query, graph) in cases.items():
        verdict = verdict_of(gen, query, graph)
        assert not verdict.correct and verdict.safe, (name, verdict)


def test_lowering_a_port_an_upgrade_leaves_alone_is_unsafe(gen, queries):
    query = next(
        q for q in queries[4] + queries[5]
        if q.operation.startswith("upgrade") and any(
            gen.graph.nodes[p][S.A_CAPACITY] >= q.ground_truth["spec"]["capacity"]
            for b in [q.ground_truth["spec"].get("block")] if b
            for p in Base(gen.graph).members(b, S.EK_PORT)
        )
    )  # fmt: skip
    spec, graph = query.ground_truth["spec"], answer_graph(gen, query)
    fast = next(
        p for p in Base(gen.graph).members(spec["block"], S.EK_PORT)
        if gen.graph.nodes[p][S.A_CAPACITY] >= spec["capacity"]
    )  # fmt: skip
    graph.nodes[fast][S.A_CAPACITY] = 10**9 // 2
    verdict = verdict_of(gen, query, graph)
    assert not verdict.correct and not verdict.safe, verdict
