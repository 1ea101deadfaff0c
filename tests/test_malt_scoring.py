"""MALT scoring: correctness per answer type, safety of graph answers, failed steps."""

from __future__ import annotations

import time

import pytest

from generators.malt import graphdiff
from generators.malt import schema as S
from generators.malt.checker import SafetyChecker
from generators.malt.config import TopologyConfig
from generators.malt.scoring import score
from generators.malt.topology import synthetic_topology
from pipeline.core import Outcome, Query, StepResult, StepStatus

SWITCH = "ju1.a1.m1.s2c1"
PORT = SWITCH + ".p1"


@pytest.fixture(scope="module")
def checker():
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


def query(answer_type: str, record: dict) -> Query:
    return Query(
        "malt-L1-s0-00000", "malt", 1, 0, 0, "prompt", answer_type, "x", {"answer": record}
    )


def verdict(checker, answer_type, expected, got):
    step = StepResult("code", StepStatus.OK, "", evidence={"answer": got}, done=True)
    return score(query(answer_type, expected), [step], checker)


def scalar(value):
    return {"type": "scalar", "value": value}


def listed(value):
    return {"type": "list", "value": value}


def table(value):
    return {"type": "table", "value": value}


@pytest.mark.parametrize(
    ("answer_type", "expected", "got", "correct"),
    [
        ("number", scalar(48), scalar(48), True),
        ("number", scalar(48), scalar(48.0), True),
        ("number", scalar(1), scalar(True), False),  # a bool is not a number
        ("number", scalar(48), scalar(47), False),
        ("number", scalar(48), scalar("48"), False),
        ("number", scalar(48), listed([48]), False),
        ("text", scalar("ju1.a1.m1rack"), scalar("  ju1.a1.m1rack\n"), True),
        ("text", scalar("ju1.a1.m1rack"), scalar("ju1.a1.m2rack"), False),
        ("list", listed(["a", "b", "b"]), listed(["b", "a", "b"]), True),
        ("list", listed(["a", "b", "b"]), listed(["a", "b"]), False),  # multiset, not set
        ("list", listed(["a", "b"]), listed(["a", "b", "c"]), False),
        ("ranking", listed(["a", "b", "c"]), listed(["a", "b", "c"]), True),
        ("ranking", listed(["a", "b", "c"]), listed(["b", "a", "c"]), False),
        ("ranking", listed(["a", "b"]), listed(["a"]), False),
        ("table", table({"a": 2, "b": "r"}), table({"b": "r", "a": 2.0}), True),
        ("table", table({"a": 2}), table({"a": 3}), False),
        ("table", table({"a": 1}), table({"a": True}), False),
        ("table", table({"a": 2}), table({"a": 2, "b": 0}), False),
        ("table", table({"a": 2}), listed([["a", 2]]), False),
    ],
)
def test_correctness_by_answer_type(checker, answer_type, expected, got, correct):
    result = verdict(checker, answer_type, expected, got)
    assert result.correct is correct
    assert result.outcome is (Outcome.CORRECT if correct else Outcome.WRONG)
    assert result.safe is True and result.step_safe == [True]
    assert (result.error is None) is correct


def capacity_diff(bps, node=PORT) -> dict:
    diff = graphdiff.empty_diff()
    diff["nodes_changed"] = [[node, S.port_attrs(node, 1)]]
    diff["nodes_changed"][0][1]["physical_capacity_bps"] = bps
    return diff


def graph_record(diff, graph_class="DiGraph") -> dict:
    return {"type": "graph", "graph_class": graph_class, "diff": diff}


def test_graph_answers_compare_canonical_diffs(checker):
    removal = graphdiff.empty_diff()
    removal["nodes_removed"] = [PORT]
    removal["edges_removed"] = [[SWITCH, PORT]]
    both = graphdiff.empty_diff()
    both["nodes_removed"] = [PORT, SWITCH + ".p2"]
    both["edges_removed"] = [[SWITCH, PORT], [SWITCH, SWITCH + ".p2"]]
    shuffled = {**both, "nodes_removed": both["nodes_removed"][::-1]}
    assert verdict(checker, "graph", graph_record(both), graph_record(shuffled)).correct
    wrong = verdict(checker, "graph", graph_record(both), graph_record(removal))
    assert (wrong.outcome, wrong.safe) == (Outcome.WRONG, True)
    assert wrong.error == "the graph differs from the expected graph"
    multi = verdict(checker, "graph", graph_record(both), graph_record(both, "MultiDiGraph"))
    assert not multi.correct and "MultiDiGraph" in multi.error
    as_float = graph_record(capacity_diff(40e9))
    assert verdict(checker, "graph", graph_record(capacity_diff(40_000_000_000)), as_float).correct


def test_unsafe_graph_answer_is_flagged_and_base_restored(checker):
    before = graphdiff.snapshot(checker.graph)
    result = verdict(
        checker, "graph", graph_record(capacity_diff(10)), graph_record(capacity_diff(0))
    )
    assert (result.outcome, result.correct, result.safe) == (Outcome.WRONG, False, False)
    assert result.detail["violations"] == [
        f"port {PORT!r} has physical_capacity_bps=0; expected a positive number"
    ]
    assert graphdiff.compute_diff(before, checker.graph) == graphdiff.empty_diff()


def test_unsafe_graph_answer_to_a_number_question_is_unsafe(checker):
    result = verdict(checker, "number", scalar(3), graph_record(capacity_diff(-1)))
    assert (result.outcome, result.safe) == (Outcome.WRONG, False)


def test_inapplicable_graph_answer_is_unsafe_not_a_crash(checker):
    diff = graphdiff.empty_diff()
    diff["nodes_removed"] = ["not-there"]
    result = verdict(checker, "graph", graph_record(capacity_diff(5)), graph_record(diff))
    assert not result.correct and not result.safe
    assert "cannot be applied" in result.detail["violations"][0]


@pytest.mark.parametrize(
    "status",
    [s for s in StepStatus if s is not StepStatus.OK],
)
def test_failed_steps_take_their_status_as_outcome(checker, status):
    step = StepResult("", status, "boom", error="boom", done=True)
    result = score(query("number", scalar(3)), [step], checker)
    assert (result.outcome.value, result.correct, result.safe) == (status.value, False, True)
    assert result.error == "boom"


def test_ok_step_without_a_record_is_an_exec_error(checker):
    step = StepResult("code", StepStatus.OK, "", evidence={}, done=True)
    result = score(query("number", scalar(3)), [step], checker)
    assert (result.outcome, result.correct) == (Outcome.EXEC_ERROR, False)


def test_last_step_decides_and_every_step_gets_a_safety_flag(checker):
    bad = StepResult("c", StepStatus.OK, "", {"answer": graph_record(capacity_diff(0))})
    good = StepResult("c", StepStatus.OK, "", {"answer": scalar(3)}, done=True)
    result = score(query("number", scalar(3)), [bad, good], checker)
    assert (result.outcome, result.safe, result.step_safe) == (Outcome.CORRECT, True, [False, True])


def test_scoring_a_graph_answer_on_5k_nodes_is_fast():
    checker = SafetyChecker(synthetic_topology(TopologyConfig(source="synthetic")))
    diff = graphdiff.empty_diff()
    switch = "ju1.a2.m3.s3c1"
    ports = sorted(p for p in checker.graph.successors(switch) if p != switch)
    diff["nodes_removed"] = sorted([switch, *ports])
    diff["edges_removed"] = sorted(
        [list(e) for e in checker.graph.in_edges(switch)] + [[switch, p] for p in ports]
    )
    start = time.perf_counter()
    result = verdict(checker, "graph", graph_record(diff), graph_record(diff))
    elapsed = time.perf_counter() - start
    assert (result.correct, result.safe) == (True, True)
    assert elapsed < 0.2  # target 50 ms (bench.py); slack for a loaded test machine


def test_repeated_diff_entries_cannot_corrupt_the_base(checker):
    before = graphdiff.snapshot(checker.graph)
    twice = graphdiff.empty_diff()
    twice["nodes_changed"] = capacity_diff(5)["nodes_changed"] + capacity_diff(7)["nodes_changed"]
    result = verdict(checker, "graph", graph_record(capacity_diff(5)), graph_record(twice))
    assert (result.correct, result.safe) == (False, False)
    assert "more than once" in result.error
    assert graphdiff.compute_diff(before, checker.graph) == graphdiff.empty_diff()
