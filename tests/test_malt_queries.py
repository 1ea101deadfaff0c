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

from generators.malt import generator as generator_module
from generators.malt import graphdiff
from generators.malt.checker import check_graph
from generators.malt.config import TopologyConfig
from generators.malt.generator import MaltQueryGenerator
from generators.malt.index import Redraw
from generators.malt.inprocess import InProcessRunner
from generators.malt.scoring import answers_match, score
from generators.malt.topology import synthetic_topology
from pipeline.core import Outcome, StepResult, StepStatus, canonical_json
from pipeline.errors import ConfigError, QueryGenerationError

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
        got = runner.run(truth["oracle_code"])
        assert answers_match(query.answer_type, truth["answer"], got) is None, query.query_id
        verdict = score(query, [ok_step(truth["answer"])], gen.checker)
        assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.CORRECT, True, True)
        if query.answer_type == "graph":
            assert gen.checker.check_diff(truth["answer"]["diff"]) == []
            after = gen.graph.copy()  # the full check agrees with the incremental one
            graphdiff.apply_diff(after, truth["answer"]["diff"])
            assert check_graph(after) == [], query.query_id
    assert graphdiff.compute_diff(before, gen.graph) == graphdiff.empty_diff()


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
    with pytest.raises(ConfigError, match=r"level must be one of \[1, 2, 3\], got 4"):
        list(gen.generate(4, 0, 1))
    with pytest.raises(ConfigError, match="count must be a non-negative int"):
        list(gen.generate(1, 0, -1))


def test_exhausted_draws_raise_a_clear_error(gen, monkeypatch):
    def never(level, rng):
        raise Redraw("node 'x' does not exist at this point")

    monkeypatch.setattr(gen.drawer, "draw", never)
    with pytest.raises(QueryGenerationError, match=r"no valid query malt-L1-s0-00000 .* 100 draws"):
        gen.query(1, 0, 0)


def test_an_oracle_disagreeing_with_the_analytic_answer_is_a_bug(gen, monkeypatch):
    monkeypatch.setattr(
        generator_module, "program", lambda spec: "def process_graph(graph):\n    return 12345\n"
    )
    with pytest.raises(QueryGenerationError, match="oracle program and analytic answer disagree"):
        gen.query(1, 0, 0)
