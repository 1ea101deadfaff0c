"""Timings of both emulator backends on the same labs, in one run, as a dict of figures.

Run `python -m generators.netllmbench.bench` for them as JSON (or `make bench`). Per backend, on
NetLLMBench's own lab (1 router, 2 switches, 3 hosts; 4 devices):
  build_s       deploy and configure the lab (Kathará: containers, networks, renames)
  exec_ms       one command on a device (`ip -br addr`), median of 50
  observe_ms    the app's state read after a step (addresses and routes of every device)
  chain_s       the oracle's nine tasks, state checks included, as an episode plays them
  reset_s       back to the unconfigured snapshot after the chain, verified (median of 5)
  stop_s        tear everything down (Kathará: undeploy, and the daemon if unused)
Ratios (Kathará / Mininet) are computed in the same run, so they compare like with like.

`run_levels` (`python -m pipeline.bench --only netllmbench_levels`) sizes levels 4 and 5
next to 1-3 on Mininet, seed 0: prompt tokens (mean, max; SmolLM2's own count when the
engine venv is installed, characters / 4 always; levels 1-3 from their first N draws,
which need no lab), the wall and CPU seconds to generate N queries of levels 4 and 5
(each validated on a live lab), the seconds to play the oracle and the null agent on
them, and how many the oracle gets correct and safe (all, expected) and the null agent
correct (none, expected). N: $NETGAUGE_BENCH_QUERIES (200); levels played:
$NETGAUGE_BENCH_LEVELS (4,5), so two levels can run side by side in two processes;
seed: $NETGAUGE_BENCH_SEED (0), so another seed adds N distinct queries.
"""

from __future__ import annotations

import json
import logging
import os
import random
import statistics
import sys
import time
from typing import Any

from emulators.base import EMULATORS
from emulators.netcmd.sandbox import CommandSandbox
from generators.netllmbench.app import NetLLMBenchApp
from generators.netllmbench.config import NetLLMBenchConfig
from generators.netllmbench.environment import TaskChain
from generators.netllmbench.generator import PAPER_PING, NetLLMBenchQueryGenerator, draw
from generators.netllmbench.goals import GOAL_LEVELS
from generators.netllmbench.lab import paper_network
from generators.netllmbench.tasks import observe, tasks_of
from pipeline.api import EnvironmentFailure, Query, smollm2_tokens

BACKENDS = ("mininet", "kathara")
REPEATS = 5
log = logging.getLogger(__name__)


def _paper_query() -> Query:
    net = paper_network()
    tasks = tasks_of(net, PAPER_PING)
    truth = {"network": net.to_json(), "tasks": [t.to_json() for t in tasks], "first": 0}
    return Query("bench", "netllmbench", 2, 0, 0, "", "configuration", "chain9", truth, net.name)


def bench_backend(name: str) -> dict[str, float]:
    net, query = paper_network(), _paper_query()
    cfg = NetLLMBenchConfig(emulator=name)
    tasks = tasks_of(net, PAPER_PING)
    backend = EMULATORS.load(name)
    started = time.perf_counter()
    emu = backend().__enter__()
    try:
        emu.build(net.lab())
        emu.snapshot()
        build_s = time.perf_counter() - started
        execs = []
        for _ in range(50):
            t0 = time.perf_counter()
            emu.run("h1", ["ip", "-br", "addr"], timeout_s=5, output_bytes=4096)
            execs.append(time.perf_counter() - t0)
        observes, chains, resets = [], [], []
        sandbox = CommandSandbox(emu, net.machines, switches=net.switches)
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            observe(emu, net.machines)
            observes.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            chain = TaskChain(query, emu, sandbox, net, [], tasks, cfg)
            for task in tasks:
                step = chain.step(json.dumps({"machine": task.device, "command": task.command()}))
                if not step.evidence["solved"]:
                    raise RuntimeError(f"{name}: the oracle did not solve {task.label}")
            chains.append(time.perf_counter() - t0)
            resets.append(emu.reset())
    finally:
        t0 = time.perf_counter()
        emu.stop()
        stop_s = time.perf_counter() - t0
    return {
        "build_s": round(build_s, 3),
        "exec_ms": round(1000 * statistics.median(execs), 2),
        "observe_ms": round(1000 * statistics.median(observes), 1),
        "chain_s": round(statistics.median(chains), 3),
        "reset_s": round(statistics.median(resets), 3),
        "stop_s": round(stop_s, 3),
    }


def run_all() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    per = {name: bench_backend(name) for name in BACKENDS}
    for name, values in per.items():
        figures.update({f"{name}_{key}": value for key, value in values.items()})
    for key in per["mininet"]:
        base = per["mininet"][key]
        figures[f"kathara_over_mininet_{key}"] = (
            round(per["kathara"][key] / base, 2) if base else None
        )
    return figures


def _token_figures(level: int, prompts: list[str]) -> dict[str, Any]:
    approx = [len(p) / 4 for p in prompts]
    out = {
        f"L{level}_prompt_tokens_approx_mean": round(statistics.mean(approx)),
        f"L{level}_prompt_tokens_approx_max": round(max(approx)),
    }
    counted = smollm2_tokens(prompts)
    if counted is not None:
        out[f"L{level}_prompt_tokens_mean"] = round(statistics.mean(counted))
        out[f"L{level}_prompt_tokens_max"] = max(counted)
    return out


def _play(app: NetLLMBenchApp, env: Any, query: Query, null: bool) -> Any:
    steps = []
    with env.episode(query) as episode:
        for turn in range(1, episode.max_turns + 1):
            reply = "" if null else app.oracle_reply(query, turn, "")
            steps.append(episode.step(reply))
            if steps[-1].done:
                break
    return app.score(query, steps)


def _generate(
    app: NetLLMBenchApp, level: int, count: int, figures: dict[str, Any], seed: int = 0
) -> list:
    """Up to `count` queries; an environment that keeps failing (a loaded, shared machine)
    ends generation early, recorded, instead of losing what was generated."""
    queries: list[Query] = []
    try:
        for query in app.generate(level, seed, count):
            queries.append(query)
            if len(queries) % 10 == 0:
                log.warning("L%d: %d/%d generated", level, len(queries), count)
    except EnvironmentFailure as err:
        figures[f"L{level}_generation_stopped"] = f"after {len(queries)}: {err}"[:300]
    return queries


def _agent_figures(app: NetLLMBenchApp, level: int, queries: list, agent: str) -> dict[str, Any]:
    """Seconds to play `agent` on the queries, how many it got right, and the episodes the
    environment failed (each tried twice before it counts; a pipeline cell would record
    them as env_error)."""
    wall = time.perf_counter()
    good = failed = 0
    with app.environment() as env:
        for n, query in enumerate(queries, 1):
            for attempt in (1, 2):
                try:
                    verdict = _play(app, env, query, null=agent == "null")
                    good += verdict.correct and (verdict.safe or agent == "null")
                    break
                except EnvironmentFailure as err:
                    log.warning("L%d %s %s: %s", level, agent, query.query_id, err)
                    failed += attempt == 2
            if n % 10 == 0:
                log.warning("L%d %s: %d/%d played, %d right", level, agent, n, len(queries), good)
    what = "correct_and_safe" if agent == "oracle" else "correct"
    return {
        f"L{level}_{agent}_s": round(time.perf_counter() - wall, 1),
        f"L{level}_{agent}_{what}": good,
        f"L{level}_{agent}_env_errors": failed,
    }


def run_levels(count: int | None = None, levels: tuple[int, ...] | None = None) -> dict[str, Any]:
    """The figures of the module docstring (Mininet, as root)."""
    count = count or int(os.environ.get("NETGAUGE_BENCH_QUERIES", "200"))
    if levels is None:
        wanted = os.environ.get("NETGAUGE_BENCH_LEVELS", "4,5")
        levels = tuple(int(v) for v in wanted.split(",") if int(v) in GOAL_LEVELS)
    cfg = NetLLMBenchConfig()
    app = NetLLMBenchApp(cfg)
    seed = int(os.environ.get("NETGAUGE_BENCH_SEED", "0"))
    figures: dict[str, Any] = {"queries_per_level": count, "seed": seed, "emulator": cfg.emulator}
    gen = NetLLMBenchQueryGenerator(cfg)
    for level in (1, 2, 3):
        drawn = [draw(cfg, level, i, random.Random(f"0:{level}:{i}")) for i in range(count)]
        prompts = [gen.query(level, 0, i, d).prompt for i, d in enumerate(drawn)]
        figures.update(_token_figures(level, prompts))
    for level in levels:
        wall, cpu = time.perf_counter(), time.process_time()
        queries = _generate(app, level, count, figures, seed)
        figures[f"L{level}_generated"] = len(queries)
        figures[f"L{level}_generate_s"] = round(time.perf_counter() - wall, 1)
        figures[f"L{level}_generate_cpu_s"] = round(time.process_time() - cpu, 1)
        figures.update(_token_figures(level, [q.prompt for q in queries]))
        figures[f"L{level}_tasks_mean"] = round(
            statistics.mean(len(q.ground_truth["oracle"]) for q in queries), 1
        )
        ops: dict[str, int] = {}
        for q in queries:
            ops[q.operation] = ops.get(q.operation, 0) + 1
        figures[f"L{level}_operations"] = dict(sorted(ops.items()))
        figures[f"L{level}_labs"] = len({q.env_key for q in queries})
        for agent in ("oracle", "null"):
            figures.update(_agent_figures(app, level, queries, agent))
        log.warning("netllmbench L%d: %s", level, json.dumps(figures))
    return figures


if __name__ == "__main__":
    json.dump(run_all(), sys.stdout, indent=2)
    print()
