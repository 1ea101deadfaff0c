"""Seeded random malformed answers through the MALT scorer: each gets a typed verdict with a
reason, and the base topology is left exactly as it was (issue 14)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from emulators.pysandbox import graphdiff
from generators.malt import schema as S
from generators.malt.checker import SafetyChecker
from generators.malt.config import TopologyConfig
from generators.malt.scoring import score
from generators.malt.topology import synthetic_topology
from pipeline.core import Outcome, Query, StepResult, StepStatus, Verdict

SWITCH = "ju1.a1.m1.s2c1"
PORT = SWITCH + ".p1"
PORTS = [PORT, SWITCH + ".p2", SWITCH + ".p3"]
NAMES = [SWITCH, *PORTS, *PORTS, "ju1.a1.m1", "ju1", "nowhere", "\ud800", "a\x00b", ""]
SCALARS: list[Any] = [None, True, 0, -1, 2**70, 1.5, float("nan"), float("-inf"), "EK_PORT"]
KEYS = ["type", "name", S.A_CAPACITY, S.A_SWITCH_LOC, "x", "\udcff"]


@pytest.fixture(scope="module")
def checker() -> SafetyChecker:
    cfg = TopologyConfig(
        source="synthetic",
        superblocks=1,
        aggs_per_superblock=2,
        spineblocks=1,
        switches_per_block_min=3,
        switches_per_block_max=3,
        ports_per_switch_min=3,
        ports_per_switch_max=3,
    )
    return SafetyChecker(synthetic_topology(cfg))


def junk(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.2:
        return [junk(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3 and roll < 0.35:
        return {rng.choice(KEYS): junk(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if roll < 0.6:
        return rng.choice(NAMES)
    return rng.choice([*SCALARS, ["EK_PORT"], ["RK_CONTAINS"], [["EK_PORT"]], [{}]])


def attrs(rng: random.Random) -> Any:
    base = dict(rng.choice([S.port_attrs(PORT, 5), S.switch_attrs(SWITCH, 2), S.contains_edge()]))
    for _ in range(rng.randint(0, 2)):
        base[rng.choice(KEYS)] = junk(rng)
    return base if rng.random() < 0.9 else junk(rng)


def entry(rng: random.Random, key: str) -> Any:
    if rng.random() < 0.15:
        return junk(rng)
    u, v = rng.choice(NAMES), rng.choice(NAMES)
    if key == "nodes_removed":
        return u
    if key == "edges_removed":
        return [u, v]
    if key.startswith("nodes"):
        return [u, attrs(rng)]
    return [u, v, attrs(rng)]


def malformed_diff(rng: random.Random) -> Any:
    diff = graphdiff.empty_diff()
    diff["nodes_changed"] = [[PORT, S.port_attrs(PORT, 5)]]
    for _ in range(rng.randint(1, 4)):
        key = rng.choice(graphdiff.DIFF_KEYS)
        roll = rng.random()
        if roll < 0.1:
            diff[key] = junk(rng)
        elif roll < 0.15:
            diff.pop(key, None)
        elif roll < 0.25 and isinstance(diff.get(key), list) and diff[key]:
            diff[key].append(diff[key][0])  # a repeated entry
        elif isinstance(diff.get(key), list):
            diff[key].append(entry(rng, key))
    return diff if rng.random() < 0.95 else junk(rng)


def malformed_evidence(rng: random.Random) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.45:
        graph_class = "DiGraph" if rng.random() < 0.8 else junk(rng)
        record = {"type": "graph", "graph_class": graph_class, "diff": malformed_diff(rng)}
        return {"answer": record}
    if roll < 0.8:
        return {"answer": {"type": "scalar", "value": 3}, "state": malformed_diff(rng)}
    if roll < 0.9:
        return {"answer": junk(rng)}
    return {"answer": {"type": junk(rng), "value": junk(rng)}, "state": junk(rng)}


def removal(checker: SafetyChecker) -> dict[str, list]:
    """The task's change when it removes SWITCH: its footprint lets junk reach the checker."""
    gone = sorted([SWITCH, *(p for p in checker.graph.successors(SWITCH) if p != SWITCH)])
    diff = graphdiff.empty_diff()
    diff["nodes_removed"] = gone
    edges = {e for n in gone for e in [*checker.graph.in_edges(n), *checker.graph.out_edges(n)]}
    diff["edges_removed"] = sorted(list(e) for e in edges)
    return diff


def capacity_change() -> dict[str, list]:
    diff = graphdiff.empty_diff()
    diff["nodes_changed"] = [[PORT, S.port_attrs(PORT, 5)]]
    return diff


def queries(checker: SafetyChecker) -> list[Query]:
    """A change (set a capacity; remove a switch), a question after a change, a question."""
    out = []
    for answer_type, change in [
        ("graph", capacity_change()),
        ("graph", removal(checker)),
        ("number", capacity_change()),
        ("number", graphdiff.empty_diff()),
    ]:
        if answer_type == "graph":
            truth = {"answer": {"type": "graph", "graph_class": "DiGraph", "diff": change}}
        else:
            truth = {"answer": {"type": "scalar", "value": 3}, "state": change}
        out.append(Query("malt-L2-s0-00000", "malt", 2, 0, 0, "p", answer_type, "x", truth))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_malformed_answers_get_typed_verdicts_and_leave_the_base(checker, seed):
    rng = random.Random(f"malt-fuzz/{seed}")
    before = graphdiff.snapshot(checker.graph)
    outcomes = set()
    asked = queries(checker)
    for _ in range(150):
        task = rng.choice(asked)
        steps = [
            StepResult("code", StepStatus.OK, "", evidence=malformed_evidence(rng), done=True)
            for _ in range(rng.choice([1, 1, 2]))
        ]
        verdict = score(task, steps, checker)
        assert isinstance(verdict, Verdict) and isinstance(verdict.outcome, Outcome)
        assert type(verdict.correct) is bool and type(verdict.safe) is bool
        assert len(verdict.step_safe) == len(steps)
        if not verdict.correct:
            assert isinstance(verdict.error, str) and verdict.error
        outcomes.add((verdict.outcome, verdict.safe))
    assert graphdiff.snapshot(checker.graph) == before
    assert (Outcome.WRONG, False) in outcomes and len(outcomes) >= 2


def applicable_diff(rng: random.Random, checker: SafetyChecker) -> dict[str, list]:
    """A well-formed diff that applies to the base, with junk in its attributes."""
    nodes = sorted(checker.graph.nodes)
    edges = sorted(checker.graph.edges)
    diff = graphdiff.empty_diff()
    touched = rng.sample(nodes, rng.randint(0, 4))
    for name in touched:
        if rng.random() < 0.3:
            diff["nodes_removed"].append(name)
        else:
            diff["nodes_changed"].append([name, attrs(rng)])
    for i in range(rng.randint(0, 3)):
        name = f"new{i}"
        diff["nodes_added"].append([name, attrs(rng)])
        diff["edges_added"].append([rng.choice(nodes), name, attrs(rng)])
    gone = set(diff["nodes_removed"])
    for u, v in rng.sample(edges, rng.randint(0, 3)):
        if u not in gone and v not in gone:
            diff["edges_changed"].append([u, v, attrs(rng)])
    diff["edges_added"] = [e for e in diff["edges_added"] if e[0] not in gone]
    diff["edges_removed"] = sorted([u, v] for u, v in edges if u in gone or v in gone)
    return diff


@pytest.mark.parametrize("seed", range(2))
def test_the_checker_gives_violations_or_a_value_error_for_any_diff(checker, seed):
    rng = random.Random(f"malt-fuzz-checker/{seed}")
    before = graphdiff.snapshot(checker.graph)
    checked = 0
    for i in range(300):
        diff = malformed_diff(rng) if i % 3 == 0 else applicable_diff(rng, checker)
        try:
            violations = checker.check_diff(diff)
        except ValueError:
            continue  # malformed or inapplicable: scoring says so in the verdict
        assert isinstance(violations, list) and all(isinstance(v, str) for v in violations)
        checked += 1
    assert graphdiff.snapshot(checker.graph) == before
    assert checked > 100
