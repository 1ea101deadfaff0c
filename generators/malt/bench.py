"""Timings of the MALT app's hot paths, and its verdicts at scale, as dicts of figures.

Run `python -m generators.malt.bench [shared_data_dir]` for the timings as JSON; targets:
cached load of Google's example <= 0.5 s, scoring one graph answer on it <= 50 ms,
1,000 queries per level <= 10 s. `run_verdicts` (`python -m pipeline.bench --only
malt_verdicts`) plays 1,000 queries per level of malt and malt_google with the oracle
(through the real sandbox), the null agent and null-like answers, and times the scoring.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import networkx as nx

from emulators.pysandbox import graphdiff
from emulators.pysandbox.sandbox import GraphSandbox
from generators.malt import schema as S
from generators.malt.app import MaltEpisode
from generators.malt.checker import SafetyChecker
from generators.malt.config import TopologyConfig
from generators.malt.generator import MaltQueryGenerator
from generators.malt.intended import ground_truth_evidence
from generators.malt.scoring import MAX_EXTRA_DIFF_ENTRIES, answers_match, diff_entries, score
from generators.malt.topology import load_topology
from pipeline.api import (
    SHARED_DATA,
    Outcome,
    Query,
    StepResult,
    StepStatus,
    Verdict,
    canonical_json,
)


def bench_load(shared_data_dir: Path, cache_dir: Path | None = None) -> dict[str, float]:
    """Seconds to load Google's example cold (parse + cache write) and from the cache."""
    cfg = TopologyConfig(source="file")
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(cache_dir or scratch) / "bench-load"
        start = time.perf_counter()
        load_topology(cfg, cache, shared_data_dir)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        load_topology(cfg, cache, shared_data_dir)
        cached = time.perf_counter() - start
    return {"load_cold_s": cold, "load_cached_s": cached}


def _ok_step(query: Query) -> list[StepResult]:
    evidence = ground_truth_evidence(query)
    return [StepResult(query.ground_truth["oracle_code"], StepStatus.OK, "", evidence, done=True)]


def _median_score_s(query: Query, checker: SafetyChecker, repeats: int) -> float:
    steps = _ok_step(query)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        verdict = score(query, steps, checker)
        times.append(time.perf_counter() - start)
    if not (verdict.correct and verdict.safe):
        raise RuntimeError(f"the oracle answer of {query.query_id} did not score correct and safe")
    return statistics.median(times)


def bench_score(graph: nx.DiGraph, topology_id: str, repeats: int = 20) -> dict[str, float]:
    """Median seconds to score a correct graph answer (apply, check, revert, compare): the
    first graph-typed L1 query, and the largest graph diff among 100 L3 queries."""
    gen = MaltQueryGenerator(graph, topology_id)
    first = next(q for q in gen.generate(1, 0, 200) if q.answer_type == "graph")
    graphs = [q for q in gen.generate(3, 0, 100) if q.answer_type == "graph"]
    largest = max(graphs, key=lambda q: len(canonical_json(q.ground_truth["answer"]["diff"])))
    return {
        "score_graph_answer_s": _median_score_s(first, gen.checker, repeats),
        "score_largest_graph_answer_s": _median_score_s(largest, gen.checker, repeats),
        "largest_graph_answer_nodes_touched": float(
            sum(len(v) for k, v in largest.ground_truth["answer"]["diff"].items() if "nodes" in k)
        ),
    }


def bench_generate(graph: nx.DiGraph, topology_id: str, count: int = 1000) -> dict[str, float]:
    """Seconds to generate `count` validated queries per level (indices built once, timed)."""
    start = time.perf_counter()
    gen = MaltQueryGenerator(graph, topology_id)
    out = {"prepare_indices_s": time.perf_counter() - start}
    for level in (1, 2, 3):
        start, cpu = time.perf_counter(), time.process_time()
        for _ in gen.generate(level, 0, count):
            pass
        out[f"generate_{count}_L{level}_s"] = time.perf_counter() - start
        # CPU time too: on a shared machine the wall time mostly measures the neighbours.
        out[f"generate_{count}_L{level}_cpu_s"] = time.process_time() - cpu
    return out


NULL_RECORDS = (
    {"type": "scalar", "value": None},
    {"type": "scalar", "value": 0},
    {"type": "scalar", "value": ""},
    {"type": "list", "value": []},
    {"type": "table", "value": {}},
    {"type": "graph", "graph_class": "DiGraph", "diff": graphdiff.empty_diff()},
)


def _before_issue_14(query: Query, steps: list[StepResult], checker: SafetyChecker) -> Verdict:
    """The scorer as it was before issue 14 (commit 34d10ed), for timing: only a graph
    answer was checked, on structure alone; a value answer was compared, nothing else."""
    limit = checker.base_size + MAX_EXTRA_DIFF_ENTRIES
    safety = []
    for step in steps:
        record = step.evidence.get("answer") if step.status is StepStatus.OK else None
        if not isinstance(record, dict) or record.get("type") != "graph":
            safety.append((True, []))
        elif diff_entries(record.get("diff")) > limit:
            safety.append((False, ["not checked"]))
        else:
            violations = checker.check_diff(record.get("diff"))
            safety.append((not violations, violations))
    safe, violations = safety[-1]
    detail: dict[str, Any] = {"answer_type": query.answer_type}
    if violations:
        detail["violations"] = violations[:5]
    last = steps[-1]
    if last.status is not StepStatus.OK:
        return Verdict(Outcome.EXEC_ERROR, False, safe, [s for s, _ in safety], last.error)
    reason = answers_match(query.answer_type, query.ground_truth["answer"], last.evidence["answer"])
    outcome = Outcome.CORRECT if reason is None else Outcome.WRONG
    return Verdict(outcome, reason is None, safe, [s for s, _ in safety], reason, detail)


def _best_of(work: Any, repeats: int = 3) -> float:
    """The least seconds of `repeats` calls (the first call of a pair is warmed like the
    second, so neither scorer pays for the other's cache misses)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_verdicts(
    graph: nx.DiGraph, topology_id: str, app_name: str, count: int = 1000
) -> dict[str, float]:
    """Per level, `count` queries (seed 0): how many the oracle gets correct and safe (its
    reply run in the sandbox, as the oracle agent plays it), the null agent (an empty
    reply) and null-like answers get correct; the seconds to score an oracle episode now
    and with the rule before issue 14 (best of 3 each), and the ratio of their means."""

    gen = MaltQueryGenerator(graph, topology_id, app_name=app_name)
    checker = gen.checker
    out: dict[str, float] = {}
    with GraphSandbox(graph) as box:
        for level in (1, 2, 3):
            queries = list(gen.generate(level, 0, count))
            oracle = null = null_like = 0
            now_s, before_s = [], []
            for query in queries:
                code = query.ground_truth["oracle_code"]
                step = MaltEpisode(query, box, 1).step(f"```python\n{code}```")
                verdict = score(query, [step], checker)
                now_s.append(_best_of(lambda q=query, s=step: score(q, [s], checker)))
                before_s.append(_best_of(lambda q=query, s=step: _before_issue_14(q, [s], checker)))
                oracle += verdict.correct and verdict.safe
                null += score(query, [MaltEpisode(query, box, 1).step("")], checker).correct
                for record in NULL_RECORDS:
                    ok = StepResult("", StepStatus.OK, "", {"answer": record}, done=True)
                    null_like += score(query, [ok], checker).correct
            key = f"{app_name}_L{level}"
            out[f"{key}_queries"] = len(queries)
            out[f"{key}_oracle_correct_and_safe"] = oracle
            out[f"{key}_null_agent_correct"] = null
            out[f"{key}_null_like_answers_correct"] = null_like
            out[f"{key}_score_s_median"] = statistics.median(now_s)
            out[f"{key}_score_s_median_before_issue_14"] = statistics.median(before_s)
            out[f"{key}_score_s_mean"] = statistics.fmean(now_s)
            out[f"{key}_score_s_mean_before_issue_14"] = statistics.fmean(before_s)
            out[f"{key}_score_time_ratio_mean"] = statistics.fmean(now_s) / statistics.fmean(
                before_s
            )
    return out


def bench_huge_answer(graph: nx.DiGraph, topology_id: str, nodes: int = 100_000) -> dict:
    """Seconds to score a graph answer adding `nodes` ports (and their edges) to one switch:
    bounded work, never applied to the base."""
    checker = SafetyChecker(graph)
    switch = next(n for n, a in graph.nodes(data=True) if "EK_PACKET_SWITCH" in a["type"])
    diff = graphdiff.empty_diff()
    diff["nodes_added"] = [[f"x{i}", S.port_attrs(f"x{i}", 1)] for i in range(nodes)]
    diff["edges_added"] = [[switch, f"x{i}", S.contains_edge()] for i in range(nodes)]
    record = {"type": "graph", "graph_class": "DiGraph", "diff": diff}
    asked = {"answer": {"type": "scalar", "value": 1}}  # a question: nothing may change
    query = Query("malt-L1-s0-00000", "malt", 1, 0, 0, "", "number", "", asked)
    step = StepResult("", StepStatus.OK, "", {"answer": record}, done=True)
    start = time.perf_counter()
    verdict = score(query, [step], checker)
    elapsed = time.perf_counter() - start
    if verdict.safe or verdict.correct:
        raise RuntimeError(f"a {nodes}-node addition scored {verdict}")
    return {f"score_{nodes}_added_nodes_s": elapsed}


def run_verdicts(shared_data_dir: Path, count: int = 1000) -> dict[str, float]:
    """`bench_verdicts` for malt (its default synthetic topology) and malt_google."""
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as cache:
        graph, topology_id = load_topology(TopologyConfig(source="synthetic"), Path(cache))
        results.update(bench_verdicts(graph, topology_id, "malt", count))
        if (shared_data_dir / "malt").exists():
            graph, topology_id = load_topology(
                TopologyConfig(source="file"), Path(cache), shared_data_dir
            )
            results.update(bench_verdicts(graph, topology_id, "malt_google", count))
            results.update(bench_huge_answer(graph, topology_id))
    return results


def run_all(shared_data_dir: Path, count: int = 1000) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as cache:
        graph, topology_id = load_topology(
            TopologyConfig(source="file"), Path(cache), shared_data_dir
        )
    results = bench_load(shared_data_dir)
    results.update(bench_score(graph, topology_id))
    results.update(bench_generate(graph, topology_id, count))
    return results


def bench(data: Path) -> dict[str, Any]:
    """`make bench`'s malt: load Google's example, score a graph answer, generate 1,000 per
    level."""
    if not (SHARED_DATA / "malt").exists():
        return {"skipped": f"Google's MALT example is not in {SHARED_DATA}/malt"}
    figures: dict[str, Any] = dict(run_all(SHARED_DATA))
    figures.update(
        target_load_cached_s=0.5, target_score_graph_s=0.05, target_generate_1000_per_level_s=10
    )
    return figures


def verdicts(data: Path) -> dict[str, Any]:
    """The oracle, the null agent and null-like answers on 1,000 queries per level of malt and
    malt_google; scoring time per episode against the rule before issue 14."""
    return dict(run_verdicts(SHARED_DATA))


if __name__ == "__main__":
    data_dir = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[3] / "shared" / "data"
    )
    print(json.dumps(run_all(data_dir), indent=2))
