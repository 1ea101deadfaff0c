"""Timings of the k8s app's environment, as a dict of measured seconds.

Run `python -m generators.k8s.bench` (as root) for all of them as JSON; targets: cluster
bring-up <= 1 s, full probe matrix <= 0.5 s, re-applying enforcement after a policy
change <= 0.1 s, reset between episodes <= 0.3 s. `episode_s` is one oracle episode as
the pipeline plays it (reset, the check that the data plane shows the query's
mismatches, each command with the probes after it), the median over queries of every
level; `step_probe_s` is the probing of one step within it.

`run_levels` (`python -m pipeline.bench --only k8s_levels`) sizes the levels: prompt
tokens per level (≈ characters / 4, the usual rule of thumb for English text and JSON
under BPE tokenizers; the report lines dominate), and, for levels 4 and 5, the time to
generate 100 queries and to play the oracle on them on live clusters.
"""

from __future__ import annotations

import copy
import json
import math
import statistics
import time
from typing import Any

from emulators.k8s.cluster import EmulatedCluster
from generators.k8s import boutique
from generators.k8s.app import K8sApp
from generators.k8s.config import K8sConfig
from pipeline.api import play_oracle

TARGETS = {"bringup_s": 1.0, "probe_matrix_s": 0.5, "reapply_enforcement_s": 0.1, "reset_s": 0.3}
EPISODES_PER_LEVEL = 6


def _changed(policies: list[dict[str, Any]], port: int) -> list[dict[str, Any]]:
    out = copy.deepcopy([p for p in policies if p["metadata"]["name"] == "adservice"])
    out[0]["spec"]["ingress"][0]["ports"][0]["port"] = port
    return out


def _episodes(per_level: int) -> dict[str, float]:
    """Median seconds of an oracle episode, and of the probes of one step in it."""
    app = K8sApp(K8sConfig())
    queries = [q for level in (1, 2, 3) for q in app.generate(level, 0, per_level)]
    episodes, probes = [], []
    with app.environment() as env:
        cluster = env.cluster
        original = cluster.probe

        def timed_probe(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                probes.append(time.perf_counter() - started)

        cluster.probe = timed_probe
        for query in queries:
            started = time.perf_counter()
            play_oracle(app, env, query)
            episodes.append(time.perf_counter() - started)
    return {
        "episode_s": round(statistics.median(episodes), 4),
        "step_probe_s": round(statistics.median(probes), 4),
        "episodes_measured": len(episodes),
    }


def run_all(repeats: int = 5) -> dict[str, Any]:
    intended = boutique.intended_policies()
    started = time.perf_counter()
    cluster = EmulatedCluster(boutique.cluster_objects(), intended)
    with cluster:
        bringup = time.perf_counter() - started
        probes, applies, resets = [], [], []
        for i in range(repeats):
            started = time.perf_counter()
            cluster.apply_policies(_changed(intended, 9000 + i))
            applies.append(time.perf_counter() - started)
            started = time.perf_counter()
            cluster.probe()
            probes.append(time.perf_counter() - started)
            resets.append(cluster.reset())
        pairs = len(cluster.pairs)
    figures: dict[str, Any] = {
        "bringup_s": round(bringup, 4),
        "probe_matrix_s": round(statistics.median(probes), 4),
        "reapply_enforcement_s": round(statistics.median(applies), 4),
        "reset_s": round(statistics.median(resets), 4),
        "pairs_probed": pairs,
    }
    figures.update(_episodes(EPISODES_PER_LEVEL))
    figures.update({f"target_{k}": v for k, v in TARGETS.items()})
    return figures


def tokens(text: str) -> int:
    """An approximate token count: one token per four characters."""
    return math.ceil(len(text) / 4)


def run_levels(count: int = 100, levels: tuple[int, ...] = (4, 5)) -> dict[str, Any]:
    """Prompt sizes of every level; generation and oracle time of `count` queries of each
    of `levels` (wall and CPU seconds; the oracle on live clusters, as root)."""
    figures: dict[str, Any] = {"queries_per_level": count, "token_rule": "ceil(chars / 4)"}
    app = K8sApp(K8sConfig())
    generated: dict[int, list[Any]] = {}
    for level in (1, 2, 3, *levels):
        wall, cpu = time.perf_counter(), time.process_time()
        queries = list(app.generate(level, 0, count))
        if level in levels:
            figures[f"L{level}_generate_s"] = round(time.perf_counter() - wall, 2)
            figures[f"L{level}_generate_cpu_s"] = round(time.process_time() - cpu, 2)
            generated[level] = queries
        sizes = sorted(tokens(q.prompt) for q in queries)
        figures[f"L{level}_prompt_tokens_median"] = sizes[len(sizes) // 2]
        figures[f"L{level}_prompt_tokens_p90"] = sizes[int(len(sizes) * 0.9)]
        figures[f"L{level}_prompt_tokens_max"] = sizes[-1]
        figures[f"L{level}_probes_median"] = sorted(
            len(q.ground_truth["expected"]) for q in queries
        )[len(queries) // 2]
    for level, queries in generated.items():
        wall = time.perf_counter()
        ok = 0
        with app.environment() as env:
            for query in queries:
                verdict = app.score(query, play_oracle(app, env, query).steps)
                ok += verdict.correct and verdict.safe
        figures[f"L{level}_oracle_s"] = round(time.perf_counter() - wall, 1)
        figures[f"L{level}_oracle_correct_and_safe"] = ok
        figures[f"L{level}_clusters"] = len({q.env_key for q in queries})
    return figures


if __name__ == "__main__":
    print(json.dumps(run_all(), indent=2))
