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
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

from emulators.base import EMULATORS
from emulators.netcmd.sandbox import CommandSandbox
from generators.netllmbench.config import NetLLMBenchConfig
from generators.netllmbench.environment import TaskChain
from generators.netllmbench.generator import PAPER_PING
from generators.netllmbench.lab import paper_network
from generators.netllmbench.tasks import observe, tasks_of
from pipeline.core import Query

BACKENDS = ("mininet", "kathara")
REPEATS = 5


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


if __name__ == "__main__":
    json.dump(run_all(), sys.stdout, indent=2)
    print()
