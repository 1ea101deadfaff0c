"""Warm FRR labs against the cold path (issue 29): the same queries, their cost and verdicts.

`python -m pipeline.bench --only routing_warm` (needs root, Mininet and FRR). For each
restore mode, cold first (`app.frr_restore=restart`: a used lab's daemons restarted, its
kernel reset, convergence awaited) then warm (`diff`: its configuration restored by
difference, daemons kept), and per level ($NETGAUGE_BENCH_WARM_LEVELS, default "4,5"):
generate N queries of seed 0 ($NETGAUGE_BENCH_WARM_QUERIES, default 6; each validated on
live labs), then play the oracle and the null agent on each, one level after the other so
the two modes see the same machine. Reported per mode and level: generate+validate
seconds per query (mean; median, which leaves the first query's lab build out), oracle
and null seconds per episode (mean, median), labs built and restarts, the load average
before and after; the warm/cold ratios; whether both modes drew the same queries and gave
each the same verdict (outcome, correct, safe) for oracle and null; then seconds from
gym.make to the first observation at level 5, in a fresh process's worth of labs (none
warm: the figure a new user sees).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from typing import Any

from generators.routing.app import RoutingApp
from generators.routing.bench_levels import _null_verdict
from generators.routing.config import RoutingConfig
from pipeline.api import play_oracle

MODES = ("restart", "diff")  # cold, then warm


def _spread(values: list[float]) -> dict[str, float]:
    return {
        "mean": round(statistics.mean(values), 2),
        "median": round(statistics.median(values), 2),
    }


def _mode_level(mode: str, level: int, count: int) -> tuple[dict[str, Any], list[tuple]]:
    app = RoutingApp(RoutingConfig(frr_restore=mode))
    out: dict[str, Any] = {"load_before": round(os.getloadavg()[0], 1)}
    generate_s: list[float] = []
    queries = []
    stream = app.generate(level, 0, count)
    while True:
        started = time.perf_counter()
        query = next(stream, None)
        if query is None:
            break
        generate_s.append(time.perf_counter() - started)
        queries.append(query)
    verdicts = []
    oracle_s: list[float] = []
    null_s: list[float] = []
    with app.environment() as env:
        for query in queries:
            started = time.perf_counter()
            oracle = app.score(query, play_oracle(app, env, query).steps)
            oracle_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            null = _null_verdict(app, env, query)
            null_s.append(time.perf_counter() - started)
            verdicts.append(
                (
                    query.query_id,
                    query.prompt,
                    (oracle.outcome.value, oracle.correct, oracle.safe),
                    (null.outcome.value, null.correct, null.safe),
                )
            )
    out["generate_s_per_query"] = _spread(generate_s)
    out["oracle_s_per_episode"] = _spread(oracle_s)
    out["null_s_per_episode"] = _spread(null_s)
    out["oracle_correct_and_safe"] = sum(v[2][1] and v[2][2] for v in verdicts)
    out["null_correct"] = sum(v[3][1] for v in verdicts)
    out["load_after"] = round(os.getloadavg()[0], 1)
    return out, verdicts


def first_observation(level: int = 5) -> float:
    """Seconds from gym.make to the first observation of `level` (queries=100), made as a
    user makes it: the `module:id` form has Gymnasium import pipeline.gym (an app reaches
    pipeline/ only through the app API)."""
    import gymnasium as gym

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        env = gym.make(
            "pipeline.gym:NetGauge/Routing-v0", levels=(level,), queries=100, data_dir=tmp
        )
        try:
            env.reset(seed=0)
            return round(time.perf_counter() - started, 2)
        finally:
            env.close()


def run_warm() -> dict[str, Any]:
    count = int(os.environ.get("NETGAUGE_BENCH_WARM_QUERIES", "6"))
    levels = [int(v) for v in os.environ.get("NETGAUGE_BENCH_WARM_LEVELS", "4,5").split(",")]
    figures: dict[str, Any] = {"queries_per_level": count, "seed": 0, "cpus": os.cpu_count()}
    verdicts: dict[tuple[str, int], list[tuple]] = {}
    started = time.perf_counter()
    for mode in MODES:
        for level in levels:
            row, verdicts[(mode, level)] = _mode_level(mode, level, count)
            name = "cold" if mode == "restart" else "warm"
            figures.update({f"L{level}_{name}_{k}": v for k, v in row.items()})
    for level in levels:
        for what in ("generate_s_per_query", "oracle_s_per_episode"):
            cold, warm = figures[f"L{level}_cold_{what}"], figures[f"L{level}_warm_{what}"]
            figures[f"L{level}_warm_over_cold_{what}"] = {
                k: round(warm[k] / cold[k], 3) for k in ("mean", "median")
            }
        cold, warm = verdicts[("restart", level)], verdicts[("diff", level)]
        figures[f"L{level}_same_queries"] = [v[:2] for v in cold] == [v[:2] for v in warm]
        figures[f"L{level}_same_verdicts"] = cold == warm
        figures[f"L{level}_differing"] = [c[0] for c, w in zip(cold, warm, strict=True) if c != w]
    figures["L5_first_observation_s"] = first_observation(5)
    figures["load_end"] = round(os.getloadavg()[0], 1)
    figures["targets_s"] = {"generate": 5, "oracle_episode": 5, "L5_first_observation": 10}
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    return figures
