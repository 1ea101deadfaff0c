"""Figures of the FRR levels (4, 5): prompt sizes, generation and oracle time, validity.

`python -m pipeline.bench --only routing_levels` (needs root, Mininet and FRR). Per level,
in one thread per level ($NETGAUGE_BENCH_FRR_LEVELS, default "4,5"): generate N queries
($NETGAUGE_BENCH_FRR_QUERIES, default 20; each validated on live FRR labs), split evenly
over the seeds $NETGAUGE_BENCH_FRR_SEEDS (default "0"; level 4 has 66 distinct queries per
seed), then play the oracle and the null agent on every one of them. Reported: prompt
tokens (mean, max; ceil(chars / 4)), generation seconds per query, oracle seconds per
episode, oracle correct-and-safe and null correct counts, draws rejected by validation,
distinct query ids, and every query the oracle failed or the null agent solved (id,
outcome, the verdict's detail), so a miss can be explained.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import threading
import time
from typing import Any

from generators.routing.app import RoutingApp
from generators.routing.config import RoutingConfig
from generators.routing.generator import RoutingQueryGenerator
from pipeline.api import Query, Verdict, play_oracle


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _null_verdict(app: RoutingApp, env: Any, query: Any) -> Verdict:
    steps = []
    with env.episode(query) as episode:
        episode.observe()
        for _ in range(episode.max_turns):
            result = episode.step("")
            steps.append(result)
            if result.done:
                break
    return app.score(query, steps)


def _miss(query: Query, agent: str, verdict: Verdict) -> dict[str, Any]:
    return {
        "query_id": query.query_id,
        "agent": agent,
        "outcome": verdict.outcome.value,
        "safe": verdict.safe,
        "faults": [f"{f['type']}/{f['variant']}" for f in query.ground_truth["faults"]],
        "detail": json.dumps(verdict.detail, default=str)[:600],
    }


def bench_level(level: int, count: int, seeds: list[int]) -> dict[str, Any]:
    app = RoutingApp(RoutingConfig())
    out: dict[str, Any] = {}

    generator = RoutingQueryGenerator(app.cfg, app_name=app.name)
    started = time.perf_counter()
    queries = []
    for n, seed in enumerate(seeds):
        share = count // len(seeds) + (n < count % len(seeds))
        queries += generator.generate(level, seed, share, allow_repeats=True)
    generate_s = time.perf_counter() - started
    sizes = [tokens(q.prompt) for q in queries]
    out[f"L{level}_queries"] = len(queries)
    out[f"L{level}_distinct_queries"] = len({q.query_id for q in queries})
    out[f"L{level}_prompt_tokens_mean"] = round(statistics.mean(sizes), 1)
    out[f"L{level}_prompt_tokens_max"] = max(sizes)
    out[f"L{level}_generate_s_per_query"] = round(generate_s / len(queries), 1)
    out[f"L{level}_rejected_draws"] = sum(generator.rejected.values())
    out[f"L{level}_operations"] = len({q.operation for q in queries})
    ok = null_correct = 0
    oracle_s = null_s = 0.0
    misses: list[dict[str, Any]] = []
    with app.environment() as env:
        for query in queries:
            started = time.perf_counter()
            verdict = app.score(query, play_oracle(app, env, query).steps)
            oracle_s += time.perf_counter() - started
            ok += verdict.correct and verdict.safe
            if not (verdict.correct and verdict.safe):
                misses.append(_miss(query, "oracle", verdict))
            started = time.perf_counter()
            null = _null_verdict(app, env, query)
            null_correct += null.correct
            if null.correct:
                misses.append(_miss(query, "null", null))
            null_s += time.perf_counter() - started
    out[f"L{level}_misses"] = misses
    out[f"L{level}_oracle_correct_and_safe"] = ok
    out[f"L{level}_null_correct"] = null_correct
    out[f"L{level}_oracle_s_per_episode"] = round(oracle_s / len(queries), 1)
    out[f"L{level}_null_s_per_episode"] = round(null_s / len(queries), 1)
    return out


def run_levels() -> dict[str, Any]:
    count = int(os.environ.get("NETGAUGE_BENCH_FRR_QUERIES", "20"))
    levels = [int(v) for v in os.environ.get("NETGAUGE_BENCH_FRR_LEVELS", "4,5").split(",")]
    seeds = [int(v) for v in os.environ.get("NETGAUGE_BENCH_FRR_SEEDS", "0").split(",")]
    figures: dict[str, Any] = {
        "queries_per_level": count,
        "seeds": seeds,
        "token_rule": "ceil(chars / 4)",
    }
    results: dict[int, dict[str, Any]] = {}
    errors: list[BaseException] = []

    def worker(level: int) -> None:
        try:
            results[level] = bench_level(level, count, seeds)
        except BaseException as err:  # reported below; a thread must not die silently
            errors.append(err)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(level,)) for level in levels]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    for level in levels:
        figures.update(results[level])
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    figures["levels_in_parallel"] = len(levels)
    return figures
