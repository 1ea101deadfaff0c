"""Timings of the routing app on real Mininet, as a dict of figures.

Run `python -m generators.routing.bench` for all of them as JSON. Targets (issue 4):
reset of a 4x4 topology <= 0.3 s, healthy reachability check <= 0.3 s, episodes per
minute with 8 topologies at once >= 4x sequential (oracle agent, one environment per
thread). Topology builds happen before the clocks start.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import threading
import time
from typing import Any

from generators.lab.pool import LabPool
from generators.routing.app import RoutingApp
from generators.routing.config import LevelSize, RoutingConfig
from generators.routing.environment import RoutingEnvironment, inject
from generators.routing.faults import DRAW, TYPES
from generators.routing.topology import RoutingTopology
from pipeline.api import Query, play_oracle


def bench_reset(repeats: int = 12) -> dict[str, float]:
    """Reset after each fault type (seeded variants) and healthy / faulty reachability, 4x4."""
    topo = RoutingTopology(4, 4)
    pool = LabPool.from_config(RoutingConfig())
    try:
        started = time.perf_counter()
        emu, _ = pool.get(topo)
        build_s = time.perf_counter() - started
        resets, healthy, faulty = [], [], []
        for i in range(repeats):
            rng = random.Random(i)
            inject(emu, [DRAW[TYPES[i % len(TYPES)]](rng, topo, set())])
            started = time.perf_counter()
            faulty.append(emu.reachability())
            faulty_s = time.perf_counter() - started
            resets.append(emu.reset())
            started = time.perf_counter()
            check = emu.reachability()
            healthy.append(time.perf_counter() - started)
            if not check.full:
                raise RuntimeError(f"4x4 not healthy after reset {i}: {check.failed[:3]}")
            faulty[-1] = faulty_s
    finally:
        pool.close()
    return {
        "build_4x4_s": round(build_s, 3),
        "reset_4x4_median_s": round(statistics.median(resets), 3),
        "reset_4x4_max_s": round(max(resets), 3),
        "reachability_healthy_4x4_median_s": round(statistics.median(healthy), 3),
        "reachability_healthy_4x4_max_s": round(max(healthy), 3),
        "reachability_faulty_4x4_median_s": round(statistics.median(faulty), 3),
    }


def oracle_solves(app: RoutingApp, env: RoutingEnvironment, query: Query) -> bool:
    """One oracle episode; True when it scored correct and safe."""
    verdict = app.score(query, play_oracle(app, env, query).steps)
    return verdict.correct and verdict.safe


def _warm(env: RoutingEnvironment, queries: list[Query]) -> None:
    assert env.pool is not None
    for name in {q.env_key for q in queries}:
        env.pool.get(RoutingTopology.from_name(name))


def bench_episodes(concurrency: int = 8, per_env: int = 3, level: int = 1) -> dict[str, Any]:
    """Oracle episodes per minute on 4x4 topologies: one environment vs `concurrency`."""
    size = LevelSize([4, 4], [4, 4])
    app = RoutingApp(RoutingConfig(sizes=[size, size, size]))
    started = time.perf_counter()
    queries = list(app.generate(level, 0, concurrency * per_env))
    generate_s = time.perf_counter() - started
    with app.environment() as env:
        _warm(env, queries)
        started = time.perf_counter()
        ok = sum(oracle_solves(app, env, q) for q in queries)
        sequential_s = time.perf_counter() - started
    shares = [queries[i::concurrency] for i in range(concurrency)]
    envs = [app.environment() for _ in range(concurrency)]
    good: list[int] = []
    errors: list[BaseException] = []

    def worker(env: RoutingEnvironment, share: list[Query], gate: threading.Barrier) -> None:
        try:
            with env:
                _warm(env, share)
                gate.wait()
                good.append(sum(oracle_solves(app, env, q) for q in share))
                gate.wait()
        except BaseException as err:  # reported below; a thread must not die silently
            errors.append(err)
            gate.abort()

    gate = threading.Barrier(concurrency + 1)
    threads = [
        threading.Thread(target=worker, args=(e, s, gate))
        for e, s in zip(envs, shares, strict=True)
    ]
    for thread in threads:
        thread.start()
    gate.wait()  # every environment built
    started = time.perf_counter()
    gate.wait()  # every episode played
    concurrent_s = time.perf_counter() - started
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    n = len(queries)
    seq_rate, conc_rate = 60 * n / sequential_s, 60 * n / concurrent_s
    return {
        "episodes": n,
        "generate_validated_s": round(generate_s, 2),
        "oracle_correct_and_safe_sequential": ok,
        "oracle_correct_and_safe_concurrent": sum(good),
        "episodes_per_min_sequential": round(seq_rate, 1),
        f"episodes_per_min_concurrent_{concurrency}": round(conc_rate, 1),
        "concurrency_speedup": round(conc_rate / seq_rate, 2),
    }


def run_all() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    figures.update(bench_reset())
    figures.update(bench_episodes())
    figures.update(
        target_reset_4x4_s=0.3, target_reachability_healthy_4x4_s=0.3, target_concurrency_speedup=4
    )
    return figures


if __name__ == "__main__":
    json.dump(run_all(), sys.stdout, indent=2)
    print()
