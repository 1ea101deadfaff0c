"""MALT query generation: oracle == analytic answer, safe ground truth, null answers fail,
seeded and prefix-stable output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from emulators.pysandbox import graphdiff
from emulators.pysandbox.records import split_state
from generators.malt import generator as generator_module
from generators.malt.actions import evaluate, metric_value
from generators.malt.capacity import cached_measure, measure
from generators.malt.checker import check_graph
from generators.malt.config import TopologyConfig
from generators.malt.generator import MaltQueryGenerator, spec_key
from generators.malt.index import Redraw, View
from generators.malt.inprocess import InProcessRunner
from generators.malt.intended import ground_truth_evidence, intended_diff, judge
from generators.malt.scoring import answers_match, score
from generators.malt.topology import synthetic_topology
from pipeline import querygen
from pipeline.config import compose
from pipeline.core import Outcome, StepResult, StepStatus, canonical_json
from pipeline.errors import ConfigError, QueryGenerationError
from pipeline.querygen import SEED_SLOTS, CapacityExhausted, key_slot, seed_slot

SMALL = TopologyConfig(
    source="synthetic",
    seed=3,
    superblocks=2,
    aggs_per_superblock=2,
    spineblocks=2,
    switches_per_block_min=3,
    switches_per_block_max=6,
    ports_per_switch_min=2,
    ports_per_switch_max=5,
)
NULL_RECORDS = [
    {"type": "scalar", "value": None},
    {"type": "scalar", "value": 0},
    {"type": "scalar", "value": ""},
    {"type": "list", "value": []},
    {"type": "table", "value": {}},
    {"type": "graph", "graph_class": "DiGraph", "diff": graphdiff.empty_diff()},
]
ROOT = Path(__file__).resolve().parents[1]


def ok_step(record: dict) -> StepResult:
    return StepResult("code", StepStatus.OK, "", evidence={"answer": record}, done=True)


def query_bytes(queries) -> list[str]:
    return [
        canonical_json(
            [q.query_id, q.prompt, q.answer_type, q.operation, q.ground_truth, q.env_key]
        )
        for q in queries
    ]


def uninformative(gen: MaltQueryGenerator, query) -> str | None:
    """Why a query's ranking or filtered list asks nothing the names do not answer, or None:
    a ranking whose kept places all tie, a filter every member passes (issue 14)."""
    spec = query.ground_truth["spec"]
    steps = spec["steps"] if spec["op"] == "seq" else [spec]
    view = View(gen.index)
    for step in steps[:-1]:
        evaluate(step, view)
    last, answer = steps[-1], query.ground_truth["answer"].get("value")
    if last["op"] == "rank" and len({metric_value(view, last["metric"], n) for n in answer}) < 2:
        return f"{query.query_id}: every kept place ties"
    members = view.members(last["scope"], last["kind"]) if last["op"] == "list" else ()
    if last.get("where") and len(answer) == len(members):
        return f"{query.query_id}: every member passes the filter"
    return None


@pytest.fixture(scope="module")
def gen():
    return MaltQueryGenerator(synthetic_topology(SMALL), "synthetic-test")


@pytest.fixture(scope="module")
def queries(gen):
    return {level: list(gen.generate(level, 11, 60)) for level in (1, 2, 3)}


@pytest.mark.parametrize("level", [1, 2, 3])
def test_oracle_code_returns_the_analytic_answer_and_is_safe(gen, queries, level):
    before = graphdiff.snapshot(gen.graph)
    runner = InProcessRunner(gen.graph)  # no expected diff: a full scan of what changed
    for query in queries[level]:
        truth = query.ground_truth
        answer, state = split_state(runner.run(truth["oracle_code"]))
        assert answers_match(query.answer_type, truth["answer"], answer) is None, query.query_id
        evidence = {"answer": answer, **({"state": state} if state else {})}
        assert evidence == ground_truth_evidence(query)
        step = StepResult("code", StepStatus.OK, "", evidence=evidence, done=True)
        verdict = score(query, [step], gen.checker)
        assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.CORRECT, True, True)
        intended = intended_diff(query)
        assert judge(gen.checker, intended, intended) == []
        after = gen.graph.copy()  # the full check agrees with the incremental one
        graphdiff.apply_diff(after, intended)
        assert check_graph(after) == [], query.query_id
    assert graphdiff.compute_diff(before, gen.graph) == graphdiff.empty_diff()


@pytest.mark.parametrize("level", [1, 2, 3])
def test_every_ground_truth_is_correct_and_safe_by_the_intended_state_rule(gen, level):
    """Issue 14: the ground truth must pass the scorer's own rule, always (many seeds)."""
    changed_before_a_question = 0
    for seed in range(4):
        for query in gen.generate(level, seed, 50):
            step = StepResult("code", StepStatus.OK, "", ground_truth_evidence(query), done=True)
            verdict = score(query, [step], gen.checker)
            assert (verdict.correct, verdict.safe) == (True, True), (query.query_id, verdict)
            if "state" in step.evidence:  # a question after a change: the change is asked too
                changed_before_a_question += 1
                answer_only = ok_step(query.ground_truth["answer"])
                assert not score(query, [answer_only], gen.checker).correct
    assert changed_before_a_question > 0 if level == 2 else changed_before_a_question == 0


@pytest.mark.parametrize("level", [1, 2, 3])
def test_null_like_answers_are_wrong(gen, queries, level):
    for query in queries[level]:
        for record in NULL_RECORDS:
            verdict = score(query, [ok_step(record)], gen.checker)
            assert verdict.outcome is Outcome.WRONG and not verdict.correct, (
                query.query_id,
                record,
            )
            assert verdict.safe  # doing nothing breaks nothing


def test_levels_cover_every_answer_type_and_control_flow(queries):
    types = Counter(q.answer_type for level in queries.values() for q in level)
    assert set(types) == {"number", "text", "list", "ranking", "table", "graph"}
    assert all(q.operation.count(">") == 1 for q in queries[2])
    shapes = {q.operation.split("(")[0] for q in queries[3]}
    assert shapes == {"if", "for", "for_if"}
    assert {q.ground_truth["spec"]["op"] for q in queries[1]} >= {
        "count", "list", "rank", "table", "find", "remove", "add_port", "set_capacity",
    }  # fmt: skip


def test_rankings_and_filters_are_decided_by_the_metric(gen, queries):
    found = [uninformative(gen, q) for level in (1, 2) for q in queries[level]]
    assert [why for why in found if why] == []


def test_query_fields(queries):
    query = queries[2][7]
    assert query.query_id == "malt-L2-s11-00007"
    assert (query.app, query.level, query.seed, query.index) == ("malt", 2, 11, 7)
    assert query.env_key == "synthetic-test" == query.ground_truth["topology_id"]
    assert "def process_graph(graph):" in query.ground_truth["oracle_code"]
    assert "process_graph(graph)" in query.prompt and "Task:\n" in query.prompt
    json.loads(query.ground_truth_json())


def test_removing_a_switch_removes_its_ports_and_stays_safe(gen, queries):
    removals = [
        q
        for q in queries[1]
        if q.ground_truth["spec"]["op"] == "remove"
        and "EK_PACKET_SWITCH" in gen.graph.nodes[q.ground_truth["spec"]["node"]]["type"]
    ]
    assert removals
    for query in removals:
        switch = query.ground_truth["spec"]["node"]
        ports = {p for p in gen.graph.successors(switch) if p != switch}
        diff = query.ground_truth["answer"]["diff"]
        assert set(diff["nodes_removed"]) == {switch} | ports
        assert gen.checker.check_diff(diff) == []


def test_same_seed_same_queries_and_prefix_stability(gen):
    fresh = MaltQueryGenerator(synthetic_topology(SMALL), "synthetic-test")
    for level in (1, 2, 3):
        twenty = query_bytes(gen.generate(level, 5, 20))
        assert twenty == query_bytes(fresh.generate(level, 5, 50))[:20]
        assert twenty != query_bytes(gen.generate(level, 6, 20))


def test_generation_does_not_depend_on_hash_seed():
    script = (
        "import hashlib, sys\n"
        "from tests.test_malt_queries import SMALL, query_bytes\n"
        "from generators.malt.generator import MaltQueryGenerator\n"
        "from generators.malt.topology import synthetic_topology\n"
        "gen = MaltQueryGenerator(synthetic_topology(SMALL), 't')\n"
        "data = [b for level in (1, 2, 3) for b in query_bytes(gen.generate(level, 9, 15))]\n"
        "print(hashlib.sha256('\\n'.join(data).encode()).hexdigest())\n"
    )
    digests = set()
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        digests.add(out.stdout.strip())
    assert len(digests) == 1 and len(digests.pop()) == 64


def test_level_and_count_are_validated(gen):
    # The level is the pipeline's to check (AppSpec.levels), once, for every app.
    with pytest.raises(
        ConfigError,
        match="level=9 is not defined for app kind 'malt'; choose one of 1, 2, 3, 4, 5, 6, 7, 8",
    ):
        compose(["app=malt", "level=9"])
    with pytest.raises(ConfigError, match="count must be a non-negative int"):
        list(gen.generate(1, 0, -1))


def test_exhausted_draws_raise_a_clear_error(gen, monkeypatch):
    def never(level, rng):
        raise Redraw("node 'x' does not exist at this point")

    monkeypatch.setattr(gen.drawer, "draw", never)
    with pytest.raises(
        QueryGenerationError, match=r"no valid malt query malt-L1-s0-00000 .* 100 draws"
    ):
        gen.query(1, 0, 0)


def test_an_oracle_disagreeing_with_the_analytic_answer_is_a_bug(gen, monkeypatch):
    monkeypatch.setattr(
        generator_module, "program", lambda spec: "def process_graph(graph):\n    return 12345\n"
    )
    with pytest.raises(QueryGenerationError, match="oracle program and analytic answer disagree"):
        gen.query(1, 0, 0)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_keys_are_distinct_within_and_across_seed_slots(gen, level):
    seen: dict[str, str] = {}
    for seed in range(SEED_SLOTS):
        for query in gen.generate(level, seed, 80):
            assert query.key == spec_key(gen.topology_id, query.ground_truth["spec"])
            assert key_slot(query.key) == seed_slot(seed)
            assert query.key not in seen, (query.query_id, seen.get(query.key))
            seen[query.key] = query.query_id


def test_capacity_is_measured_and_a_seed_reaches_it(gen, tmp_path, monkeypatch):
    cap = measure(gen, 1, draws=4000)
    assert cap.total and cap.per_seed and not cap.exact and "Chao1" in cap.how
    assert sum(cap.by_operation.values()) == cap.total
    assert cached_measure(gen, 1, tmp_path, draws=4000) == cap
    assert cached_measure(gen, 1, tmp_path, draws=4000) == cap  # from the file
    assert list(tmp_path.glob("capacity-*-L1.json"))
    # What the measurement counted, one seed draws: a per-seed count is never an overstatement.
    assert len({q.key for q in gen.generate(1, 3, cap.per_seed)}) == cap.per_seed


def test_asking_for_more_than_a_topology_holds_is_a_capacity_error(monkeypatch):
    tiny = TopologyConfig(
        source="synthetic", seed=1, superblocks=1, aggs_per_superblock=1, spineblocks=1,
        switches_per_block_min=2, switches_per_block_max=2, ports_per_switch_min=2,
        ports_per_switch_max=2,
    )  # fmt: skip
    monkeypatch.setattr(querygen, "MAX_KEY_REJECTIONS", 2000)
    small = MaltQueryGenerator(
        synthetic_topology(tiny), "tiny", capacity=lambda level: measure(small, level, 2000)
    )
    with pytest.raises(CapacityExhausted) as err:
        list(small.generate(1, 2, 2000))
    text = str(err.value)
    assert "malt level 1, seed 2: query malt-L1-s2-" in text and "Capacity: " in text
    assert f"found {err.value.found} distinct queries" in text and "per seed" in text
    assert err.value.found > 0


def test_allow_repeats_keeps_the_old_draws_and_marks_repeats():
    tiny = TopologyConfig(
        source="synthetic", seed=1, superblocks=1, aggs_per_superblock=1, spineblocks=1,
        switches_per_block_min=2, switches_per_block_max=2, ports_per_switch_min=2,
        ports_per_switch_max=2,
    )  # fmt: skip
    small = MaltQueryGenerator(synthetic_topology(tiny), "tiny")
    queries = list(small.generate(1, 0, 300, allow_repeats=True))
    by_id = {q.query_id: q for q in queries}
    repeats = [q for q in queries if "repeat_of" in q.ground_truth]
    assert repeats and all(by_id[q.ground_truth["repeat_of"]].key == q.key for q in repeats)
    assert len({q.key for q in queries}) + len(repeats) == 300
