"""Figures of MALT's coupled-constraint levels (6, 7, 8) at scale: 1,000 queries per level.

`python -m pipeline.bench --only malt_coupled`, for malt (its default synthetic topology),
malt_google and malt with `app.size=small`. Per app and level, on seed 0:

- `generate_s`, `generate_cpu_s`: wall and CPU seconds to generate and validate the
  queries (indices built beforehand, as a DAG job builds them once); `stopped`: where and
  why a seed ran out of queries of the level before `count` (a small topology);
- `kept_share`: queries kept / draws validated (the rest rejected by the checks of
  generator.py: mostly by the greedy filter); `rejected_by`: the reasons, counted;
  `redraws_max`: the most validations one query needed (generator.py: CAP_DRAWS, COUPLED_DRAWS);
- `oracle_s`, `oracle_correct_and_safe`, `oracle_exec_s_{median,max}`: the oracle's reply
  played in the real sandbox and scored, and its code's run time there; `null_correct`:
  the empty reply scored;
- variety: `distinct_keys`, `distinct_prompts`, `operations`, and `top_stratum_share`, the
  share of the commonest `queries.stratum` (operation x size x the block or blocks the task
  sits in);
- `capacity`: distinct queries the level holds on the topology (capacity.py's measure).
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from emulators.pysandbox.sandbox import GraphSandbox
from generators.malt.app import MaltEpisode
from generators.malt.capacity import measure
from generators.malt.config import SIZES, TopologyConfig
from generators.malt.generator import COUPLED_LEVELS, MaltQueryGenerator
from generators.malt.scoring import score
from generators.malt.topology import load_topology
from pipeline.api import SHARED_DATA, Query, QueryGenerationError

COUNT = 1_000


class _Redraws(logging.Handler):
    """Counts pipeline.querygen's "redrawing <query>: <reason>" lines."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.reasons: Counter[str] = Counter()
        self.per_query: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("redrawing"):
            where, reason = record.args  # type: ignore[misc]
            self.per_query[str(where)] += 1
            self.reasons[_kind(str(reason))] += 1


def _kind(reason: str) -> str:
    if reason.startswith("the greedy rule"):
        return "greedy: " + reason.split()[3]
    return reason[:50]


def bench_level(gen: MaltQueryGenerator, box: Any, level: int, count: int) -> dict[str, Any]:
    counter = _Redraws()
    log = logging.getLogger("pipeline.querygen")
    before = log.level
    log.setLevel(logging.INFO)
    log.addHandler(counter)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        queries: list[Query] = []
        out: dict[str, Any] = {}
        try:
            queries.extend(gen.generate(level, 0, count))
        except QueryGenerationError as err:  # the seed's share of the level is used up
            out["stopped"] = f"after {len(queries)} queries: {str(err)[:300]}"
        out["generate_s"] = round(time.perf_counter() - start, 1)
        out["generate_cpu_s"] = round(time.process_time() - cpu, 1)
    finally:
        log.removeHandler(counter)
        log.setLevel(before)
    rejected = sum(counter.reasons.values())
    out["kept_share"] = round(len(queries) / (len(queries) + rejected), 4)
    out["rejected_by"] = dict(counter.reasons.most_common())
    out["redraws_max"] = max(counter.per_query.values(), default=0)
    oracle = null = 0
    exec_s = []
    start = time.perf_counter()
    for query in queries:
        step = MaltEpisode(query, box, 1).step(f"```python\n{query.ground_truth['oracle_code']}```")
        exec_s.append(step.exec_s or 0.0)
        verdict = score(query, [step], gen.checker)
        oracle += verdict.correct and verdict.safe
    out["oracle_s"] = round(time.perf_counter() - start, 1)
    out["oracle_correct_and_safe"] = oracle
    out["oracle_exec_s_median"] = round(statistics.median(exec_s), 4)
    out["oracle_exec_s_max"] = round(max(exec_s), 4)
    for query in queries:
        null += score(query, [MaltEpisode(query, box, 1).step("")], gen.checker).correct
    out["null_correct"] = null
    strata = Counter(q.stratum for q in queries)
    out["queries"] = len(queries)
    out["distinct_keys"] = len({q.key for q in queries})
    out["distinct_prompts"] = len({q.prompt for q in queries})
    out["operations"] = dict(Counter(q.operation for q in queries).most_common())
    out["strata"] = len(strata)
    out["top_stratum_share"] = round(strata.most_common(1)[0][1] / len(queries), 4)
    out["top_stratum"] = strata.most_common(1)[0][0]
    out["prompt_chars_median"] = statistics.median(len(q.prompt) for q in queries)
    capacity = measure(gen, level)
    out["capacity"] = capacity.total
    out["capacity_by_operation"] = dict(capacity.by_operation)
    return out


def run_coupled(shared_data_dir: Path, count: int = COUNT) -> dict[str, Any]:
    """`bench_level` for every coupled level of malt, malt_google and malt small."""
    sources = [("malt", TopologyConfig(source="synthetic"))]
    if (shared_data_dir / "malt").exists():
        sources.append(("malt_google", TopologyConfig(source="file")))
    sources.append(("malt_small", TopologyConfig(source="synthetic", **SIZES["small"])))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cache:
        for name, cfg in sources:
            graph, topology_id = load_topology(cfg, Path(cache), shared_data_dir)
            gen = MaltQueryGenerator(graph, topology_id, app_name=name)
            with GraphSandbox(graph) as box:
                for level in COUPLED_LEVELS:
                    results[f"{name}_L{level}"] = bench_level(gen, box, level, count)
    return results


def bench(data: Path) -> dict[str, Any]:
    """`python -m pipeline.bench --only malt_coupled` (generators/malt/__init__.py)."""
    return run_coupled(SHARED_DATA)
