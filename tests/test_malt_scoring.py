"""MALT scoring: correctness per answer type, safety of graph answers, failed steps."""

from __future__ import annotations

import pytest

from emulators.pysandbox import graphdiff
from generators.malt import schema as S
from generators.malt import scoring
from generators.malt.checker import SafetyChecker
from generators.malt.config import TopologyConfig
from generators.malt.scoring import max_diff_entries, score
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


def query(answer_type: str, record: dict, state: dict | None = None) -> Query:
    truth = {"answer": record, **({} if state is None else {"state": state})}
    return Query("malt-L1-s0-00000", "malt", 1, 0, 0, "prompt", answer_type, "x", truth)


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


def test_a_graph_answer_removing_a_switch_on_5k_nodes_is_scored():
    checker = SafetyChecker(synthetic_topology(TopologyConfig(source="synthetic")))
    diff = graphdiff.empty_diff()
    switch = "ju1.a2.m3.s3c1"
    ports = sorted(p for p in checker.graph.successors(switch) if p != switch)
    diff["nodes_removed"] = sorted([switch, *ports])
    diff["edges_removed"] = sorted(
        [list(e) for e in checker.graph.in_edges(switch)] + [[switch, p] for p in ports]
    )
    result = verdict(checker, "graph", graph_record(diff), graph_record(diff))
    assert (result.correct, result.safe) == (True, True)  # how fast: `make bench`, malt.json


def test_repeated_diff_entries_cannot_corrupt_the_base(checker):
    before = graphdiff.snapshot(checker.graph)
    twice = graphdiff.empty_diff()
    twice["nodes_changed"] = capacity_diff(5)["nodes_changed"] + capacity_diff(7)["nodes_changed"]
    result = verdict(checker, "graph", graph_record(capacity_diff(5)), graph_record(twice))
    assert (result.correct, result.safe) == (False, False)
    assert "more than once" in result.error
    assert graphdiff.compute_diff(before, checker.graph) == graphdiff.empty_diff()


@pytest.mark.parametrize("kinds", [[["EK_PORT"]], [{}], [None], [1], ["EK_PORT", ["x"]]])
@pytest.mark.parametrize("where", ["node", "edge"])
def test_a_type_holding_non_strings_is_a_violation_not_a_crash(checker, kinds, where):
    before = graphdiff.snapshot(checker.graph)

    def retyped(kinds):
        diff = graphdiff.empty_diff()
        if where == "node":
            diff["nodes_changed"] = [[PORT, {**S.port_attrs(PORT, 1), "type": kinds}]]
        else:
            diff["edges_changed"] = [[SWITCH, PORT, {"type": kinds}]]
        return graph_record(diff)

    # The task retypes the entry, so the answer is inside its footprint and reaches the checker.
    expected = retyped(["EK_CHASSIS"] if where == "node" else ["RK_CONTROLS"])
    for _ in range(2):  # the second rescore meets the checker's caches
        result = verdict(checker, "graph", expected, retyped(kinds))
        assert (result.outcome, result.safe) == (Outcome.WRONG, False)
        assert any("not kind names" in v for v in result.detail["violations"])
    assert graphdiff.compute_diff(before, checker.graph) == graphdiff.empty_diff()


def test_a_graph_answer_too_large_to_check_is_wrong_and_unsafe(checker, monkeypatch):
    def never(diff, **_):
        raise AssertionError("a diff past the limit must not be applied")

    monkeypatch.setattr(checker, "check_diff", never)
    huge = graphdiff.empty_diff()
    huge["nodes_added"] = [[f"x{i}", {"type": ["EK_PORT"]}] for i in range(100_000)]
    result = verdict(checker, "graph", graph_record(capacity_diff(5)), graph_record(huge))
    assert (result.outcome, result.correct, result.safe) == (Outcome.WRONG, False, False)
    assert "changes 100000 nodes and edges" in result.error
    assert result.detail["violations"][0].startswith("not checked")
    # The expected answer is never too large, however large it is.
    assert max_diff_entries(checker, query("graph", graph_record(huge))) >= 100_000


def test_a_checker_or_comparison_failure_is_a_verdict_not_a_crashed_stage(checker, monkeypatch):
    def broken(diff, **_):
        raise KeyError("a bug of the checker")

    monkeypatch.setattr(checker, "check_diff", broken)
    result = verdict(
        checker, "graph", graph_record(capacity_diff(5)), graph_record(capacity_diff(5))
    )
    assert result.safe is False
    assert "safety check failed on this answer (KeyError" in result.detail["violations"][0]
    monkeypatch.undo()
    monkeypatch.setattr(scoring, "canonical_diff", broken)
    result = verdict(
        checker, "graph", graph_record(capacity_diff(5)), graph_record(capacity_diff(6))
    )
    assert result.outcome is Outcome.WRONG and "could not be compared (KeyError" in result.error


# -- the intended state in full (issue 14) ----------------------------------------------------
PORT2, PORT3 = SWITCH + ".p2", SWITCH + ".p3"


def cleared(checker) -> dict:
    """What `graph.clear()` leaves: every node and edge of the base removed."""
    return graphdiff.compute_diff(graphdiff.snapshot(checker.graph), type(checker.graph)())


def plus(diff: dict, **extra: list) -> dict:
    """`diff` with more entries."""
    out = {key: list(items) for key, items in diff.items()}
    for key, items in extra.items():
        width = 1 if key.startswith("nodes") else 2
        out[key] = sorted(
            out[key] + items, key=lambda e, w=width: e if isinstance(e, str) else e[:w]
        )
    return out


def value_step(record: dict, state: dict | None = None) -> StepResult:
    evidence = {"answer": record, **({} if state is None else {"state": state})}
    return StepResult("code", StepStatus.OK, "", evidence=evidence, done=True)


def test_clearing_the_graph_is_unsafe_whatever_the_question(checker):
    """`graph.clear(); return graph` passed every safety rule (the empty graph breaks none)."""
    wiped = cleared(checker)
    for answer_type, expected in [("graph", graph_record(capacity_diff(5))), ("number", scalar(3))]:
        result = verdict(checker, answer_type, expected, graph_record(wiped))
        assert (result.outcome, result.correct, result.safe) == (Outcome.WRONG, False, False)
        assert result.detail["violations"][0].startswith("removes nodes the task keeps (46)")
    # A question answered right by code that cleared the graph it was given.
    result = score(query("number", scalar(3)), [value_step(scalar(3), wiped)], checker)
    assert (result.outcome, result.correct, result.safe) == (Outcome.WRONG, False, False)
    assert "differs from the intended graph" in result.error


def test_a_diff_outside_the_task_is_refused_before_it_is_applied(checker, monkeypatch):
    def never(diff, **_):
        raise AssertionError("an answer outside the footprint must not be applied")

    monkeypatch.setattr(checker, "check_diff", never)
    junk = [[f"x{i}", S.port_attrs(f"x{i}", 1)] for i in range(5_000)]  # within the cap
    huge = plus(capacity_diff(5), nodes_added=junk)
    result = verdict(checker, "graph", graph_record(capacity_diff(5)), graph_record(huge))
    assert (result.correct, result.safe) == (False, False)
    assert result.detail["violations"] == [
        "adds nodes the task does not add (5,000): 'x0', 'x1', 'x10' and 4,997 more"
    ]


OUTSIDE = {
    "another port's capacity": (
        {"nodes_changed": capacity_diff(5, PORT2)["nodes_changed"]},
        "changes nodes or attributes the task leaves alone (1): 'ju1.a1.m1.s2c1.p2'",
    ),
    "another attribute of the port": (
        {"nodes_changed": [[PORT, {**S.port_attrs(PORT, 5), "note": "x"}]]},
        "(1): 'ju1.a1.m1.s2c1.p1 (note)'",
    ),  # replaces the task's own entry
    "removes a port": (
        {"nodes_removed": [PORT3], "edges_removed": [[SWITCH, PORT3]]},
        "removes nodes the task keeps (1): 'ju1.a1.m1.s2c1.p3'",
    ),
    "adds a port": (
        {
            "nodes_added": [[SWITCH + ".p9", S.port_attrs(SWITCH + ".p9", 5)]],
            "edges_added": [[SWITCH, SWITCH + ".p9", S.contains_edge()]],
        },
        "adds nodes the task does not add (1): 'ju1.a1.m1.s2c1.p9'",
    ),
    "retypes an edge": (
        {"edges_changed": [[SWITCH, PORT2, {"type": ["RK_CONTAINS"], "weight": 2}]]},
        "changes edges the task leaves alone (1): ('ju1.a1.m1.s2c1', 'ju1.a1.m1.s2c1.p2')",
    ),
}


@pytest.mark.parametrize("case", list(OUTSIDE))
def test_changes_the_task_does_not_ask_for_are_unsafe(checker, case):
    """The task sets one port's capacity; the answer does that and one thing more."""
    extra, message = OUTSIDE[case]
    task = capacity_diff(5)
    answer = {**task, **extra} if "nodes_changed" in extra else plus(task, **extra)
    assert checker.check_diff(answer) == []  # the structural rules alone would pass it
    result = verdict(checker, "graph", graph_record(capacity_diff(5)), graph_record(answer))
    assert (result.outcome, result.safe) == (Outcome.WRONG, False)
    assert any(message in v for v in result.detail["violations"]), result.detail


def test_a_wrong_change_inside_the_task_is_wrong_but_safe(checker):
    result = verdict(
        checker, "graph", graph_record(capacity_diff(5)), graph_record(capacity_diff(7))
    )
    assert (result.outcome, result.safe) == (Outcome.WRONG, True)
    removal = graphdiff.empty_diff()
    removal["nodes_removed"] = sorted([SWITCH, PORT, PORT2, PORT3])
    removal["edges_removed"] = sorted(
        [list(e) for e in checker.graph.in_edges(SWITCH)]
        + [[SWITCH, p] for p in (PORT, PORT2, PORT3)]
    )
    partial = graphdiff.empty_diff()  # one port of the three the task removes with its switch
    partial["nodes_removed"], partial["edges_removed"] = [PORT3], [[SWITCH, PORT3]]
    result = verdict(checker, "graph", graph_record(removal), graph_record(partial))
    assert (result.outcome, result.safe) == (Outcome.WRONG, True)


def test_a_question_after_a_change_is_judged_on_the_graph_left_too(checker):
    """A level-2 question: set a capacity, then count. The count alone is not the task."""
    asked = query("number", scalar(3), state=capacity_diff(5))
    judged = {
        "both": (value_step(scalar(3), capacity_diff(5)), Outcome.CORRECT, True),
        "count only": (value_step(scalar(3)), Outcome.WRONG, True),
        "wrong capacity": (value_step(scalar(3), capacity_diff(7)), Outcome.WRONG, True),
        "broken port": (value_step(scalar(3), capacity_diff(0)), Outcome.WRONG, False),
        "more": (value_step(scalar(3), cleared(checker)), Outcome.WRONG, False),
    }
    for name, (step, outcome, safe) in judged.items():
        result = score(asked, [step], checker)
        assert (result.outcome, result.safe) == (outcome, safe), (name, result)
    assert score(asked, [value_step(scalar(3))], checker).error == (
        "the answer is right, but the code did not make the changes the task asks for"
    )
    # A question of the unchanged graph: code that edits the graph is unsafe and wrong.
    result = score(query("number", scalar(3)), [value_step(scalar(3), capacity_diff(5))], checker)
    assert (result.outcome, result.safe) == (Outcome.WRONG, False)
