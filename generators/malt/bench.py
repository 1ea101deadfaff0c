"""Timings of the MALT app's hot paths, as dicts of measured seconds.

Run `python -m generators.malt.bench [shared_data_dir]` for all of them as JSON; targets:
cached load of Google's example <= 0.5 s, scoring one graph answer on it <= 50 ms,
1,000 queries per level <= 10 s.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx

from generators.malt.checker import SafetyChecker
from generators.malt.config import TopologyConfig
from generators.malt.generator import MaltQueryGenerator
from generators.malt.scoring import score
from generators.malt.topology import load_topology
from pipeline.core import Query, StepResult, StepStatus, canonical_json


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
    evidence = {"answer": query.ground_truth["answer"]}
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


def run_all(shared_data_dir: Path, count: int = 1000) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as cache:
        graph, topology_id = load_topology(
            TopologyConfig(source="file"), Path(cache), shared_data_dir
        )
    results = bench_load(shared_data_dir)
    results.update(bench_score(graph, topology_id))
    results.update(bench_generate(graph, topology_id, count))
    return results


if __name__ == "__main__":
    data_dir = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[3] / "shared" / "data"
    )
    print(json.dumps(run_all(data_dir), indent=2))
