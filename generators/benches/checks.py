"""What the lab apps' intended-state checks cost: the same queries' episodes played with the
checks on (as configured) and off, wall-clock per episode, in one run.

Off is the app as judged before issue 14: routing probes ICMP only (`probe.protocols=[icmp]`),
netllmbench reads task state only (`probe.protocols=[]`). Both configurations play the same
queries (generated with the checks on), alternating query by query so that a change in the
machine's load falls on both. Each query's lab is made ready (built, or reset) before the
clock starts, so the figures are the episodes' own: the agent's commands, the probes after
each step, the evidence. `prober_vs_fping` times a healthy lab's all-pairs reachability both
ways on the same lab: the in-process prober and one `fping` per device as before.

    python -m pipeline.bench --only checks     # the `bench` below
"""

from __future__ import annotations

import os
import shlex
import shutil
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emulators.mininet.emulator import MininetEmulator
from generators.routing.topology import RoutingTopology
from pipeline.api import App, Query, load_app

OFF = {"routing": "[icmp]", "netllmbench": "[]"}


def _app(name: str, overrides: Sequence[str] = ()) -> App:
    return load_app(f"app={name}", *overrides)


def _play(app: App, env: Any, query: Query, agent: str) -> float:
    """One episode of `agent` (oracle or null); its seconds, lab made ready beforehand."""
    with env.episode(query):  # builds or resets the lab; not timed
        pass
    started = time.perf_counter()
    with env.episode(query) as episode:
        observation = episode.observe()
        for turn in range(1, episode.max_turns + 1):
            reply = app.oracle_reply(query, turn, observation) if agent == "oracle" else ""
            step = episode.step(reply)
            if step.done:
                break
            observation = step.output
    return time.perf_counter() - started


def episode_seconds(
    name: str, queries: Sequence[Query], agents: Sequence[str] = ("oracle", "null")
) -> dict[str, Any]:
    """Mean seconds per episode with the checks on and off, and their ratio, per agent."""
    on, off = _app(name), _app(name, [f"app.probe.protocols={OFF[name]}"])
    times: dict[tuple[str, str], list[float]] = {}
    with on.environment() as env_on, off.environment() as env_off:
        for query in queries:
            for agent in agents:
                times.setdefault((agent, "on"), []).append(_play(on, env_on, query, agent))
                times.setdefault((agent, "off"), []).append(_play(off, env_off, query, agent))
    figures: dict[str, Any] = {"episodes": len(queries)}
    for agent in agents:
        after, before = times[agent, "on"], times[agent, "off"]
        figures[f"{agent}_s_before"] = round(statistics.mean(before), 3)
        figures[f"{agent}_s_after"] = round(statistics.mean(after), 3)
        figures[f"{agent}_ratio"] = round(statistics.mean(after) / statistics.mean(before), 2)
    return figures


def prober_vs_fping(subnets: int = 8, hosts: int = 4, repeats: int = 10) -> dict[str, Any]:
    """All-pairs reachability of a healthy routing lab: the prober vs fping, median s."""
    if shutil.which("fping") is None:
        return {"prober_vs_fping": "skipped: fping is not installed"}
    topo = RoutingTopology(subnets, hosts)
    with MininetEmulator() as emu:
        emu.build(topo.lab())
        prober, fping = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            assert emu.reachability().full
            prober.append(time.perf_counter() - started)
            started = time.perf_counter()
            _fping_all_pairs(emu)
            fping.append(time.perf_counter() - started)
    name = f"{subnets}x{hosts}"
    return {
        f"reachability_{name}_prober_s": round(statistics.median(prober), 4),
        f"reachability_{name}_fping_s": round(statistics.median(fping), 4),
    }


def _fping_all_pairs(emu: Any) -> None:
    """Reachability as it was measured before: one fping per device, all at once, in the
    devices' shells (250 ms per try, one retry)."""
    lab = emu.lab
    scripts = {}
    for src in lab.probed:
        targets = sorted({lab.probe_address(src, d) for d in lab.probed if d != src})
        argv = ["fping", "-a", "-i", "1", "-B", "1", "-t", "250", "-r", "1", *targets]
        scripts[src] = f"{shlex.join(argv)} 2>/dev/null"
    emu._shell(scripts, 30.0)


def bench(data: Path) -> dict[str, Any]:
    """For each lab app of $NETGAUGE_BENCH_APPS (routing, netllmbench) and level of
    $NETGAUGE_BENCH_LEVELS (1,2,3): the first T queries of seed 0 ($NETGAUGE_BENCH_TIMED, 10)
    played by the oracle and the null agent with the checks on and off (`episode_seconds`);
    and for routing the prober against fping. Needs root; the queries are validated on live
    labs when drawn."""
    timed = int(os.environ.get("NETGAUGE_BENCH_TIMED", "10"))
    wanted = os.environ.get("NETGAUGE_BENCH_APPS", ",".join(OFF)).split(",")
    levels = [int(v) for v in os.environ.get("NETGAUGE_BENCH_LEVELS", "1,2,3").split(",")]
    apps = [app for app in wanted if app in OFF]
    figures: dict[str, Any] = {}
    if "routing" in apps:
        figures.update(prober_vs_fping())
    for app in apps:
        for level in levels:
            queries = list(_app(app, [f"level={level}"]).generate(level, 0, timed))
            checks = episode_seconds(app, queries)
            figures.update({f"{app}_L{level}_checks_{k}": v for k, v in checks.items()})
    return figures
