"""Figures of the FRR levels (4, 5): prompt sizes, generation and oracle time, validity.

`python -m pipeline.bench --only routing_levels` (needs root, Mininet and FRR). Per level,
in one thread per level ($NETGAUGE_BENCH_FRR_LEVELS, default "4,5"): generate N queries of
seed 0 ($NETGAUGE_BENCH_FRR_QUERIES, default 20; each validated on live FRR labs), then
play the oracle and the null agent on every one of them. Reported: prompt tokens (mean,
max; ceil(chars / 4)), generation seconds per query, oracle seconds per episode, oracle
correct-and-safe and null correct counts, draws rejected by validation.
"""

from __future__ import annotations

import math
import os
import statistics
import threading
import time
from typing import Any

from generators.routing.app import RoutingApp
from generators.routing.config import RoutingConfig
from pipeline.play import play_oracle


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _null_correct(app: RoutingApp, env: Any, query: Any) -> bool:
    steps = []
    with env.episode(query) as episode:
        episode.observe()
        for _ in range(episode.max_turns):
            result = episode.step("")
            steps.append(result)
            if result.done:
                break
    return app.score(query, steps).correct


def bench_level(level: int, count: int) -> dict[str, Any]:
    app = RoutingApp(RoutingConfig())
    out: dict[str, Any] = {}
    from generators.routing.generator import RoutingQueryGenerator

    generator = RoutingQueryGenerator(app.cfg, app_name=app.name)
    started = time.perf_counter()
    queries = list(generator.generate(level, 0, count, allow_repeats=True))
    generate_s = time.perf_counter() - started
    sizes = [tokens(q.prompt) for q in queries]
    out[f"L{level}_queries"] = len(queries)
    out[f"L{level}_prompt_tokens_mean"] = round(statistics.mean(sizes), 1)
    out[f"L{level}_prompt_tokens_max"] = max(sizes)
    out[f"L{level}_generate_s_per_query"] = round(generate_s / len(queries), 1)
    out[f"L{level}_rejected_draws"] = sum(generator.rejected.values())
    out[f"L{level}_operations"] = len({q.operation for q in queries})
    ok = null_correct = 0
    oracle_s = null_s = 0.0
    with app.environment() as env:
        for query in queries:
            started = time.perf_counter()
            verdict = app.score(query, play_oracle(app, env, query).steps)
            oracle_s += time.perf_counter() - started
            ok += verdict.correct and verdict.safe
            started = time.perf_counter()
            null_correct += _null_correct(app, env, query)
            null_s += time.perf_counter() - started
    out[f"L{level}_oracle_correct_and_safe"] = ok
    out[f"L{level}_null_correct"] = null_correct
    out[f"L{level}_oracle_s_per_episode"] = round(oracle_s / len(queries), 1)
    out[f"L{level}_null_s_per_episode"] = round(null_s / len(queries), 1)
    return out


def run_levels() -> dict[str, Any]:
    count = int(os.environ.get("NETGAUGE_BENCH_FRR_QUERIES", "20"))
    levels = [int(v) for v in os.environ.get("NETGAUGE_BENCH_FRR_LEVELS", "4,5").split(",")]
    figures: dict[str, Any] = {"queries_per_level": count, "token_rule": "ceil(chars / 4)"}
    results: dict[int, dict[str, Any]] = {}
    errors: list[BaseException] = []

    def worker(level: int) -> None:
        try:
            results[level] = bench_level(level, count)
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
