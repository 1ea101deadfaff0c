"""Figures of the incidents levels: generation, validity, episodes, prompts, variety.

`python -m pipeline.bench --only incidents_levels` (root, Mininet, FRR): per level and
task ($NETGAUGE_BENCH_INCIDENTS_LEVELS, default "6,7,8"; _TASKS, default all three),
generate N queries ($NETGAUGE_BENCH_INCIDENTS_QUERIES, default 4; seed
$NETGAUGE_BENCH_INCIDENTS_SEED, default 0; app.size $NETGAUGE_BENCH_INCIDENTS_SIZE,
default the tier's), each validated live, then play the oracle and the null agent on each.
Reported per level and task: generate+validate seconds per query (and its phases, and
the CPU seconds it cost this process and its children), draws
rejected by validation and why, oracle and null episode seconds, oracle correct-and-safe
and null correct counts, prompt tokens (ceil(chars / 4)), distinct prompts, and every
query the oracle failed or the null agent solved. Then (unless
$NETGAUGE_BENCH_INCIDENTS_STRESS=0) both play every query again with the CPUs
oversubscribed (`stress-ng --cpu` 4 per CPU): the verdicts must be the same.

`python -m pipeline.bench --only incidents_variety` (no lab): 1,000 pure draws per level
and task ($NETGAUGE_BENCH_INCIDENTS_DRAWS) through the generator's own loop (lab cycle,
stratum cap, keys), without validation: distinct keys, strata, the top stratum's share,
the top kind's and family x kind's shares. Prompts of pure draws lack the ticket (chosen
live), so their distinct-prompt ratio is a lower bound.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import signal
import statistics
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from generators.incidents.app import IncidentsApp
from generators.incidents.config import IncidentsConfig
from pipeline.api import Query, Verdict, play_oracle

TASKS = ("mitigate", "detect", "localize")


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _env_list(name: str, default: str) -> list[str]:
    return [v for v in os.environ.get(name, default).split(",") if v]


def _null(app: IncidentsApp, env: Any, query: Query) -> Verdict:
    steps = []
    with env.episode(query) as episode:
        episode.observe()
        for _ in range(episode.max_turns):
            result = episode.step("")
            steps.append(result)
            if result.done:
                break
    return app.score(query, steps)


def _outcome(verdict: Verdict) -> tuple:
    return (verdict.outcome.value, verdict.correct, verdict.safe)


@contextlib.contextmanager
def oversubscribed() -> Iterator[None]:
    """`stress-ng --cpu 4` per CPU for the block: the verdicts must not change."""
    cpus = 4 * (os.cpu_count() or 2)
    stress = subprocess.Popen(
        ["stress-ng", "--cpu", str(cpus), "--timeout", "3600s", "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        time.sleep(1)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(stress.pid, signal.SIGKILL)
        stress.wait()


def _miss(query: Query, agent: str, verdict: Verdict) -> dict[str, Any]:
    return {
        "query_id": query.query_id,
        "agent": agent,
        "outcome": verdict.outcome.value,
        "safe": verdict.safe,
        "operation": query.operation,
        "detail": json.dumps(verdict.detail, default=str)[:600],
    }


def cpu_s() -> float:
    """CPU seconds of this process and its reaped children (vtysh, ip, ... and the labs'
    daemons once stopped): what a query costs the machine, which wall time on a shared
    machine hides."""
    return sum(
        u.ru_utime + u.ru_stime
        for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def bench_level(level: int, task: str, count: int, seed: int, size: str | None) -> dict:
    app = IncidentsApp(IncidentsConfig(task=task, size=size))
    generator = app.generator()
    started, cpu = time.perf_counter(), cpu_s()
    queries = list(generator.generate(level, seed, count))
    generate_s = time.perf_counter() - started
    generate_cpu_s = cpu_s() - cpu
    key = f"L{level}_{task}"
    sizes = [tokens(q.prompt) for q in queries]
    phases: Counter[str] = Counter()
    for q in queries:
        phases.update(q.ground_truth["validation"]["seconds"])
    out: dict[str, Any] = {
        f"{key}_queries": len(queries),
        f"{key}_distinct_prompts": len({q.prompt for q in queries}),
        f"{key}_prompt_tokens_mean": round(statistics.mean(sizes), 1),
        f"{key}_prompt_tokens_max": max(sizes),
        f"{key}_generate_s_per_query": round(generate_s / len(queries), 1),
        f"{key}_generate_cpu_s_per_query": round(generate_cpu_s / len(queries), 1),
        f"{key}_validate_phases_s": {k: round(v / len(queries), 1) for k, v in phases.items()},
        f"{key}_rejected": dict(generator.rejected),
        f"{key}_oracle_turns_mean": round(
            statistics.mean(q.ground_truth["validation"]["oracle_turns"] for q in queries), 1
        ),
        f"{key}_operations": sorted({q.operation for q in queries}),
    }
    ok = null_correct = 0
    oracle_s = null_s = 0.0
    misses: list[dict[str, Any]] = []
    idle: dict[tuple[str, str], tuple] = {}
    with app.environment() as env:
        for query in queries:
            tick = time.perf_counter()
            verdict = app.score(query, play_oracle(app, env, query).steps)
            oracle_s += time.perf_counter() - tick
            ok += verdict.correct and verdict.safe
            if not (verdict.correct and verdict.safe):
                misses.append(_miss(query, "oracle", verdict))
            tick = time.perf_counter()
            null = _null(app, env, query)
            null_s += time.perf_counter() - tick
            null_correct += null.correct
            if null.correct:
                misses.append(_miss(query, "null", null))
            idle[(query.query_id, "oracle")] = _outcome(verdict)
            idle[(query.query_id, "null")] = _outcome(null)
        if os.environ.get("NETGAUGE_BENCH_INCIDENTS_STRESS", "1") == "1":
            loaded = {}
            with oversubscribed():
                for query in queries:
                    verdict = app.score(query, play_oracle(app, env, query).steps)
                    loaded[(query.query_id, "oracle")] = _outcome(verdict)
                    loaded[(query.query_id, "null")] = _outcome(_null(app, env, query))
            out[f"{key}_stressed_same_verdicts"] = sum(loaded[k] == v for k, v in idle.items())
            out[f"{key}_stressed_differ"] = [
                [*k, list(idle[k]), list(loaded[k])] for k in idle if loaded[k] != idle[k]
            ]
    out |= {
        f"{key}_oracle_correct_and_safe": ok,
        f"{key}_null_correct": null_correct,
        f"{key}_oracle_s_per_episode": round(oracle_s / len(queries), 1),
        f"{key}_null_s_per_episode": round(null_s / len(queries), 1),
        f"{key}_misses": misses,
    }
    return out


def run_levels() -> dict[str, Any]:
    levels = [int(v) for v in _env_list("NETGAUGE_BENCH_INCIDENTS_LEVELS", "6,7,8")]
    tasks = _env_list("NETGAUGE_BENCH_INCIDENTS_TASKS", ",".join(TASKS))
    count = int(os.environ.get("NETGAUGE_BENCH_INCIDENTS_QUERIES", "4"))
    seed = int(os.environ.get("NETGAUGE_BENCH_INCIDENTS_SEED", "0"))
    size = os.environ.get("NETGAUGE_BENCH_INCIDENTS_SIZE") or None
    figures: dict[str, Any] = {
        "queries": count, "seed": seed, "size": size, "token_rule": "ceil(chars / 4)",
        "load_before": os.getloadavg()[0],
    }  # fmt: skip
    started = time.perf_counter()
    for level in levels:
        for task in tasks:
            figures |= bench_level(level, task, count, seed, size)
            print(f"  L{level} {task}: {figures[f'L{level}_{task}_generate_s_per_query']} s/query",
                  flush=True)  # fmt: skip
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    figures["load_after"] = os.getloadavg()[0]
    return figures


def variety(level: int, task: str, draws: int, seed: int = 0) -> dict[str, Any]:
    """Pure draws through the generator's loop (no lab); see the module docstring."""
    app = IncidentsApp(IncidentsConfig(task=task))
    queries = list(app.generator().generate(level, seed, draws, live=False))
    strata = Counter(q.stratum for q in queries)
    kinds = Counter(k for q in queries for k in q.operation.split("+"))
    family_kind = Counter(
        (q.ground_truth["lab"]["family"], k) for q in queries for k in q.operation.split("+")
    )
    top_stratum, top_n = strata.most_common(1)[0]
    return {
        "queries": len(queries),
        "distinct_keys": len({q.key for q in queries}),
        "distinct_prompts": len({q.prompt for q in queries}),
        "strata": len(strata),
        "top_stratum": top_stratum,
        "top_stratum_share": round(top_n / len(queries), 4),
        "top_kind_share": round(kinds.most_common(1)[0][1] / len(queries), 4),
        "top_family_kind_share": round(family_kind.most_common(1)[0][1] / len(queries), 4),
        "kinds": len(kinds),
    }


def run_variety() -> dict[str, Any]:
    draws = int(os.environ.get("NETGAUGE_BENCH_INCIDENTS_DRAWS", "1000"))
    figures: dict[str, Any] = {"draws": draws}
    for level in (6, 7, 8):
        for task in TASKS:
            started = time.perf_counter()
            row = variety(level, task, draws)
            row["seconds"] = round(time.perf_counter() - started, 1)
            figures |= {f"L{level}_{task}_{k}": v for k, v in row.items()}
    return figures
