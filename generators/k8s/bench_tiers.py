"""Levels 6-8 measured (part of `python -m pipeline.bench --only k8s_levels`): per tier and
task, the generation of `count` queries with the pure evaluator (wall and CPU seconds),
their variety (distinct keys and prompts, strata, the commonest stratum's and kind's
share, the share of queries holding the commonest size x kind x placement, healthy
share), prompt sizes (tokens ~ characters / 4), the oracle's commands
against the budget; and the oracle played on the first `live` of them on live clusters
(root): correct and safe, seconds per episode, turns and bytes read against half the
tier's budgets.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from typing import Any

from generators.k8s.app import K8sApp
from generators.k8s.config import K8sConfig
from generators.k8s.generator6 import query_places
from generators.k8s.tiers import TIERS
from pipeline.api import TASKS, play_oracle


def _share(counts: Counter[str], total: int) -> float:
    return round(counts.most_common(1)[0][1] / total, 4) if counts else 0.0


def _generated(level: int, task: str, count: int) -> tuple[K8sApp, list[Any], dict[str, Any]]:
    app = K8sApp(K8sConfig(task=task))
    wall, cpu = time.perf_counter(), time.process_time()
    queries = list(app.generate(level, 0, count))
    tokens = sorted((len(q.prompt) + 3) // 4 for q in queries)
    strata = Counter(q.stratum for q in queries)
    kinds = Counter(f["kind"] for q in queries for f in q.ground_truth["faults"])
    # the measure: the share of queries holding the commonest size x kind x placement
    placed = Counter(key for q in queries for key in query_places(q))
    faults = sum(len(q.ground_truth["faults"]) for q in queries) or 1
    tier = TIERS[level]
    figures = {
        "generate_s": round(time.perf_counter() - wall, 1),
        "generate_cpu_s": round(time.process_time() - cpu, 1),
        "queries": len(queries),
        "distinct_keys": len({q.key for q in queries}),
        "distinct_prompts": len({q.prompt for q in queries}),
        "strata": len(strata),
        "top_stratum_share": _share(strata, len(queries)),
        "top_size_kind_placement_share": _share(placed, len(queries)),
        "top_size_kind_placement": placed.most_common(1)[0][0] if placed else "",
        "top_kind_share_of_faults": round(kinds.most_common(1)[0][1] / faults, 4) if kinds else 0,
        "kinds_drawn": len(kinds),
        "healthy_share": round(sum(q.ground_truth["healthy"] for q in queries) / len(queries), 3),
        "prompt_tokens_median": tokens[len(tokens) // 2],
        "prompt_tokens_max": tokens[-1],
        "oracle_commands_max": max(
            len(q.ground_truth["oracle"] if task == "mitigate" else q.ground_truth["evidence"])
            + (task != "mitigate")
            for q in queries
        ),
        "turn_budget": tier.turns,
    }
    figures["distinct_prompts_per_query"] = round(
        figures["distinct_prompts"] / figures["distinct_keys"], 3
    )
    return app, queries, figures


def _played(app: K8sApp, queries: list[Any]) -> dict[str, Any]:
    seconds, turns, read, ok = [], [], [], 0
    with app.environment() as env:
        for query in queries:
            started = time.perf_counter()
            loop = play_oracle(app, env, query)
            seconds.append(time.perf_counter() - started)
            verdict = app.score(query, loop.steps)
            ok += verdict.correct and verdict.safe
            turns.append(loop.turn)
            read.append(loop.bytes_read)
    return {
        "live_played": len(queries),
        "live_oracle_correct_and_safe": ok,
        "live_episode_s_median": round(statistics.median(seconds), 2),
        "live_turns_max": max(turns),
        "live_bytes_read_max": max(read),
    }


def run_tiers(count: int = 1000, live: int = 20, levels: tuple[int, ...] = (6, 7, 8)) -> dict:
    figures: dict[str, Any] = {"tier_queries": count, "tier_live": live}
    for level in levels:
        tier = TIERS[level]
        figures[f"L{level}_read_budget_kib"] = tier.read_kib
        for task in TASKS:
            app, queries, found = _generated(level, task, count)
            if live:
                found.update(_played(app, queries[:live]))
            figures.update({f"L{level}_{task}_{k}": v for k, v in found.items()})
    return figures
