"""MALT safety checker: each violation type, and incremental == full check on random diffs."""

from __future__ import annotations

import random

import pytest

from emulators.pysandbox import graphdiff
from generators.malt import schema as S
from generators.malt.checker import SafetyChecker, check_graph
from generators.malt.config import TopologyConfig
from generators.malt.topology import synthetic_topology

SMALL = TopologyConfig(
    source="synthetic",
    seed=5,
    superblocks=1,
    aggs_per_superblock=2,
    spineblocks=1,
    switches_per_block_min=2,
    switches_per_block_max=3,
    ports_per_switch_min=1,
    ports_per_switch_max=3,
)
SWITCH = "ju1.a1.m1.s2c1"
PORT = SWITCH + ".p1"


@pytest.fixture
def graph():
    g = synthetic_topology(SMALL)
    assert check_graph(g) == []
    return g


def only(violations: list[str]) -> str:
    assert len(violations) == 1, violations
    return violations[0]


def test_invalid_node_types(graph):
    graph.nodes[PORT]["type"] = "EK_PORT"
    assert "type must be a list of kinds" in only(check_graph(graph))
    graph.nodes[PORT]["type"] = ["EK_TOASTER"]
    assert "unknown kinds ['EK_TOASTER']" in only(check_graph(graph))
    graph.nodes[PORT]["type"] = []
    assert "type is an empty list" in only(check_graph(graph))


def test_invalid_edge_type(graph):
    graph.edges[SWITCH, PORT]["type"] = ["RK_OWNS"]
    edge_msg, port_msg, *rest = check_graph(graph)
    assert edge_msg.startswith(f"edge {SWITCH!r}->{PORT!r}: type holds unknown kinds ['RK_OWNS']")
    # An edge of unknown type contains nothing, so the port also lost its container.
    assert port_msg.startswith(f"node {PORT!r}: its EK_PORT has no container")
    assert all("contains no port" in msg for msg in rest)


def test_contains_edge_against_the_hierarchy(graph):
    graph.add_edge("ju1.a1.m1rack", PORT, type=[S.RK_CONTAINS])
    msg = only(check_graph(graph))
    assert "RK_CONTAINS from EK_RACK to EK_PORT breaks the hierarchy" in msg
    assert "EK_RACK -> ['EK_CHASSIS']" in msg


def test_controls_edge_must_go_from_control_point_to_switch(graph):
    graph.add_edge("ju1.a1", SWITCH, type=[S.RK_CONTROLS])
    assert "RK_CONTROLS must go from an EK_CONTROL_POINT" in only(check_graph(graph))


def test_missing_container(graph):
    graph.remove_edge("ju1.a1.m1", SWITCH)
    msg = only(check_graph(graph))
    assert msg.startswith(f"node {SWITCH!r}: its EK_PACKET_SWITCH has no container")


def test_self_loop_is_not_a_container(graph):
    graph.remove_edge("ju1.a1.dom", SWITCH)  # the chassis self-loop must not stand in
    assert "its EK_CONTROL_POINT has no container" in only(check_graph(graph))


def test_isolated_node(graph):
    graph.add_node("ju1.x9rack", name="ju1.x9rack", type=[S.EK_RACK])
    assert only(check_graph(graph)) == "node 'ju1.x9rack' (EK_RACK) is isolated"


@pytest.mark.parametrize("capacity", [0, -5, True, None, float("nan"), "10G"])
def test_port_capacity_must_be_positive(graph, capacity):
    graph.nodes[PORT]["physical_capacity_bps"] = capacity
    assert f"port {PORT!r} has physical_capacity_bps=" in only(check_graph(graph))


def test_switch_needs_a_port(graph):
    ports = [p for p in graph.successors(SWITCH) if p != SWITCH]
    graph.remove_nodes_from(ports)
    assert only(check_graph(graph)) == (
        f"packet switch {SWITCH!r} contains no port; expected at least one"
    )


def _random_mutation(graph, rng: random.Random) -> None:
    nodes = sorted(graph.nodes)
    kinds = [*S.NODE_KINDS, "EK_BOGUS"]
    for _ in range(rng.randint(1, 4)):
        action = rng.randrange(7)
        node = rng.choice(nodes)
        if not graph.has_node(node):
            continue
        if action == 0:
            graph.remove_node(node)
        elif action == 1 and graph.out_degree(node):
            graph.remove_edge(node, rng.choice(sorted(graph.successors(node))))
        elif action == 2:
            other = rng.choice(nodes)
            if graph.has_node(other):
                graph.add_edge(node, other, type=[rng.choice([S.RK_CONTAINS, S.RK_CONTROLS])])
        elif action == 3:
            graph.nodes[node]["type"] = sorted(rng.sample(kinds, rng.randint(1, 2)))
        elif action == 4 and "physical_capacity_bps" in graph.nodes[node]:
            graph.nodes[node]["physical_capacity_bps"] = rng.choice([0, -1, 7, 10**9])
        elif action == 5:
            new = f"new{rng.randrange(1000)}"
            graph.add_node(new, name=new, type=[rng.choice(kinds)], physical_capacity_bps=1)
            if rng.random() < 0.7:
                graph.add_edge(node, new, type=[S.RK_CONTAINS])
        elif action == 6 and graph.out_degree(node):
            succ = rng.choice(sorted(graph.successors(node)))
            graph.edges[node, succ]["type"] = [rng.choice([S.RK_CONTAINS, S.RK_CONTROLS, "X"])]


@pytest.mark.parametrize("seed", range(60))
def test_incremental_check_equals_full_check(seed):
    base = synthetic_topology(SMALL)
    checker = SafetyChecker(base)
    before = graphdiff.snapshot(base)
    mutated = base.copy()
    _random_mutation(mutated, random.Random(seed))
    diff = graphdiff.compute_diff(before, mutated)
    assert checker.check_diff(diff) == check_graph(mutated)
    assert graphdiff.compute_diff(before, base) == graphdiff.empty_diff()  # base restored


def test_check_diff_rejects_inapplicable_diffs_and_keeps_the_base(graph):
    checker = SafetyChecker(graph)
    before = graphdiff.snapshot(graph)
    bad = graphdiff.empty_diff()
    bad["edges_added"] = [["ghost", SWITCH, {"type": [S.RK_CONTAINS]}]]
    with pytest.raises(ValueError, match="node 'ghost' is absent"):
        checker.check_diff(bad)
    bad = graphdiff.empty_diff()
    bad["nodes_removed"] = ["nope"]
    with pytest.raises(ValueError, match="removes node 'nope'"):
        checker.check_diff(bad)
    assert graphdiff.compute_diff(before, graph) == graphdiff.empty_diff()


def test_inverse_of_a_device_removal_is_a_valid_diff(graph):
    before = graphdiff.snapshot(graph)
    removal = graphdiff.empty_diff()
    removal["nodes_removed"] = [SWITCH]
    inverse = graphdiff.apply_diff(graph, removal)
    graphdiff.validate_diff(inverse)  # the self-loop is restored once, not twice
    graphdiff.apply_diff(graph, inverse)
    assert graphdiff.compute_diff(before, graph) == graphdiff.empty_diff()


@pytest.mark.parametrize("kinds", [[["EK_PORT"]], [{}], [None], [b"EK_PORT"]])
def test_a_type_holding_non_strings_is_a_violation(graph, kinds):
    graph.nodes[PORT]["type"] = kinds
    graph.edges[SWITCH, PORT]["type"] = kinds
    found = check_graph(graph)
    assert any(v.startswith(f"node {PORT!r}: type holds values that are not kind") for v in found)
    assert any(v.startswith(f"edge {SWITCH!r}->{PORT!r}: type holds values") for v in found)
    assert check_graph(graph) == found  # again, through the checker's caches
