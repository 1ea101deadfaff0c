"""`make bench`: the speed figures the issues name, measured and written to data/bench/.

    python -m pipeline.bench                 # all benchmarks
    python -m pipeline.bench --only smoke    # one of them
    NETGAUGE_BENCH_QUERIES=200 python -m pipeline.bench --only validity   # not in `make bench`
    python -m pipeline.bench --only sweep    # the default grid from empty (~10 min; not in it)

Each benchmark returns a flat dict of measurements (seconds unless named otherwise) and
the target it is held to; the results land in <data>/bench/<name>.json with the machine
and code version, and a table is printed. Benchmarks measure; they do not assert.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline.cells import data_root
from pipeline.config import ROOT
from pipeline.records import code_version

Bench = Callable[[Path], dict[str, Any]]


def bench_malt(data: Path) -> dict[str, Any]:
    """MALT app: load Google's example, score a graph answer, generate 1,000 per level."""
    from generators.malt import bench

    shared = ROOT.parent / "shared" / "data"
    if not (shared / "malt").exists():
        return {"skipped": f"Google's MALT example is not in {shared}/malt"}
    figures = bench.run_all(shared)
    figures.update(
        target_load_cached_s=0.5, target_score_graph_s=0.05, target_generate_1000_per_level_s=10
    )
    return figures


def bench_malt_verdicts(data: Path) -> dict[str, Any]:
    """MALT app: oracle, null agent and null-like answers on 1,000 queries per level of
    malt and malt_google; scoring time per episode against the rule before issue 14."""
    from generators.malt import bench

    return bench.run_verdicts(ROOT.parent / "shared" / "data")


def bench_malt_plans(data: Path) -> dict[str, Any]:
    """MALT levels 4 and 5 (next to 1-3): prompt sizes in tokens; seconds to generate 100
    queries and to play the oracle on them in the sandbox, per level of malt and malt_google."""
    from generators.malt import planbench

    return planbench.run_plans(ROOT.parent / "shared" / "data")


def bench_malt_coupled(data: Path) -> dict[str, Any]:
    """MALT levels 6-8 (coupled constraints): 1,000 queries per level of malt, malt_google
    and malt small: generation time and the greedy filter's rejections, the oracle and the
    null agent through the sandbox, variety, capacity (generators/malt/coupledbench.py)."""
    from generators.malt import coupledbench

    return coupledbench.run_coupled(ROOT.parent / "shared" / "data")


def bench_sandbox(data: Path) -> dict[str, Any]:
    """Per-run overhead of the agent-code sandbox on a ~5.5k-node graph."""
    from emulators.pysandbox import bench

    return bench.run_all()


def bench_smoke(data: Path) -> dict[str, Any]:
    """The smoke grid through `snakemake --cores 2 sweep`: from empty, then a no-op rerun."""
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="netgauge-bench-") as tmp:
        cmd = [
            str(Path(sys.executable).with_name("snakemake")),
            "--cores",
            "2",
            "sweep",
            "--config",
            "grid=smoke",
            f"data_dir={tmp}",
            "--quiet",
            "all",
        ]
        for name in ("smoke_sweep_s", "smoke_noop_rerun_s"):
            started = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            figures[name] = round(time.perf_counter() - started, 2)
    figures["target_smoke_sweep_s"] = 120
    return figures


def bench_sweep(data: Path) -> dict[str, Any]:
    """`make sweep`'s default grid from empty: wall-clock, per rule, and inside the LLM
    job (server start, prefill, decode, sandbox); pipeline/sweep_bench.py."""
    from pipeline import sweep_bench

    return sweep_bench.run("default", log_to=data / "bench" / "sweep.snakemake.log")


def bench_slurm(data: Path) -> dict[str, Any]:
    """The smoke grid local vs through SLURM on a local cluster with the same 2 slots:
    wall-clock of each and the ratio (pipeline/cluster/bench.py). Needs root and SLURM."""
    from pipeline.cluster import bench

    return bench.run_all(data)


def bench_serving(data: Path) -> dict[str, Any]:
    """CPU vLLM with the embedded model: start-to-ready, 8 concurrent vs 1 at a time."""
    from pipeline.serving import bench
    from pipeline.serving.models import vllm_python

    if not vllm_python().exists():
        return {"skipped": "the CPU vLLM engine is not installed (make setup)"}
    return bench.run_all(data)


def bench_binding(data: Path) -> dict[str, Any]:
    """CPU vLLM: generated tokens/s at 1 and 8 in flight on MALT-sized prompts, with vLLM's
    automatic thread binding and with NetGauge's (every available CPU), in one run."""
    from pipeline.serving import bench
    from pipeline.serving.models import vllm_python

    if not vllm_python().exists():
        return {"skipped": "the CPU vLLM engine is not installed (make setup)"}
    return bench.run_binding(data)


def bench_gym(data: Path) -> dict[str, Any]:
    """Gymnasium: seconds from gym.make to the first observation (routing and netllmbench
    level 3, queries=100), the next four resets, and whether the five queries served are
    the generate stage's first five for the same seed."""
    import gymnasium as gym

    import pipeline.gym  # noqa: F401 (registers the ids)
    from pipeline.build import make_app
    from pipeline.config import compose

    figures: dict[str, Any] = {}
    for app, ident in (
        ("routing", "NetGauge/Routing-v0"),
        ("netllmbench", "NetGauge/Netllmbench-v0"),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            env = gym.make(ident, levels=(3,), queries=100, data_dir=tmp)
            try:
                env.reset(seed=0)  # the RNG's seed; the queries are seed 2's (train)
                figures[f"{app}_L3_first_observation_s"] = round(time.perf_counter() - started, 2)
                served = [env.unwrapped.current_query.prompt]
                started = time.perf_counter()
                for _ in range(4):
                    env.reset()
                    served.append(env.unwrapped.current_query.prompt)
                figures[f"{app}_L3_next_4_resets_s"] = round(time.perf_counter() - started, 2)
            finally:
                env.close()
            pipeline_app = make_app(compose([f"app={app}", f"data_dir={tmp}"]))
            first = [q.prompt for q in pipeline_app.generate(3, 2, 5)]
            figures[f"{app}_L3_first_5_equal_pipeline"] = served == first
    figures["target_first_observation_s"] = 15
    return figures


def bench_k8s(data: Path) -> dict[str, Any]:
    """k8s app: cluster bring-up, probe matrix, enforcement, reset."""
    from generators.k8s import bench

    return bench.run_all()


def bench_k8s_levels(data: Path) -> dict[str, Any]:
    """k8s levels: prompt tokens per level; generating 100 queries of levels 4 and 5 and
    playing the oracle on them (live clusters; needs root). Not in `make bench`."""
    from generators.k8s import bench

    return bench.run_levels()


def bench_analysis(data: Path) -> dict[str, Any]:
    """DuckDB summary over 1,000,000 episode rows; the report for the default sweep."""
    from analysis.bench import bench

    return bench(data)


def bench_routing(data: Path) -> dict[str, Any]:
    """Routing app on Mininet: reset, reachability, 8 concurrent topologies vs 1."""
    from generators.routing import bench

    return bench.run_all()


def bench_routing_levels(data: Path) -> dict[str, Any]:
    """Routing levels 4-5 (FRR): prompt tokens, generation and oracle time, oracle and null
    validity on $NETGAUGE_BENCH_FRR_QUERIES queries per level (needs root). Not in `make bench`."""
    from generators.routing import bench_levels

    return bench_levels.run_levels()


def bench_emulators(data: Path) -> dict[str, Any]:
    """Mininet and Kathara on NetLLMBench's lab: build, exec, state read, chain, reset, stop."""
    from generators.netllmbench import bench

    return bench.run_all()


def bench_netllmbench_levels(data: Path) -> dict[str, Any]:
    """netllmbench levels 4 and 5 next to 1-3: prompt tokens; generating N queries of levels
    4 and 5, validating each on a live lab, and playing the oracle and the null agent on
    them (N: $NETGAUGE_BENCH_QUERIES, 200; Mininet, needs root). Not in `make bench`."""
    from generators.netllmbench import bench

    return bench.run_levels()


def bench_isolation(data: Path) -> dict[str, Any]:
    """Per-action cost of the jails: a lab command and a kubectl command, bare vs jailed."""
    from pipeline import isolation_bench

    return isolation_bench.run_all()


def bench_validity(data: Path) -> dict[str, Any]:
    """Every app and level: the oracle correct and safe, the null agent never correct, on
    min(N, what one seed can get) queries of seed 0 (N: $NETGAUGE_BENCH_QUERIES, 1,000;
    apps: $NETGAUGE_BENCH_APPS). For routing and netllmbench also what their intended-state
    checks cost: the first T of those queries ($NETGAUGE_BENCH_TIMED, 10) played by the
    oracle and the null agent with the checks on and off, seconds per episode and the ratio
    (generators/lab/bench_checks.py). Hours for the lab apps at N = 1,000 (each query is
    validated on a live lab): run it on its own, `--only validity`."""
    from analysis.views import connect
    from generators.lab import bench_checks
    from pipeline.build import layout, make_app
    from pipeline.cells import cell_from_config
    from pipeline.config import compose
    from pipeline.generate import read_queries
    from pipeline.run import run_cell

    wanted = int(os.environ.get("NETGAUGE_BENCH_QUERIES", "1000"))
    timed = int(os.environ.get("NETGAUGE_BENCH_TIMED", "10"))
    apps = os.environ.get("NETGAUGE_BENCH_APPS", "malt,malt_google,k8s,routing,netllmbench")
    levels = [int(v) for v in os.environ.get("NETGAUGE_BENCH_LEVELS", "1,2,3").split(",")]
    figures: dict[str, Any] = {"queries_asked": wanted}
    if "routing" in apps.split(","):
        figures.update(bench_checks.prober_vs_fping())
    with tempfile.TemporaryDirectory(prefix="netgauge-validity-") as tmp:
        for app in apps.split(","):
            for level in levels:
                base = [f"app={app}", f"level={level}", f"data_dir={tmp}"]
                per_seed = make_app(compose(base)).capacity(level).per_seed
                n = wanted if per_seed is None else min(wanted, per_seed)
                started = time.perf_counter()
                for agent in ("oracle", "null"):
                    run_cell(compose([*base, f"agent={agent}", f"queries={n}"]))
                row = (
                    connect(tmp)
                    .execute(
                        "SELECT count(*) FILTER (WHERE agent = 'oracle'), "
                        "count(*) FILTER (WHERE agent = 'oracle' AND correct AND safe), "
                        "count(*) FILTER (WHERE agent = 'null' AND correct), "
                        "count(DISTINCT query_key) FROM episodes "
                        "WHERE app = $app AND level = $level AND queries = $n",
                        {"app": app, "level": level, "n": n},
                    )
                    .fetchone()
                )
                key = f"{app}_L{level}"
                figures[f"{key}_queries"] = row[0]
                figures[f"{key}_distinct"] = row[3]
                figures[f"{key}_oracle_correct_and_safe"] = row[1]
                figures[f"{key}_null_correct"] = row[2]
                failed = connect(tmp).execute(
                    "SELECT query_id, agent, outcome, safe, error FROM episodes WHERE app = $app "
                    "AND level = $level AND queries = $n AND ((agent = 'oracle' AND NOT (correct "
                    "AND safe)) OR (agent = 'null' AND correct)) LIMIT 5",
                    {"app": app, "level": level, "n": n},
                )
                misses = [" ".join(map(str, r)) for r in failed.fetchall()]
                if misses:  # what the oracle got wrong or null got right, for the record
                    figures[f"{key}_unexpected"] = misses
                figures[f"{key}_s"] = round(time.perf_counter() - started, 1)
                if app in bench_checks.OFF and timed:
                    cfg = compose([*base, f"queries={n}"])
                    queries = read_queries(layout(cfg).queries(cell_from_config(cfg)), timed)
                    checks = bench_checks.episode_seconds(app, queries)
                    figures.update({f"{key}_checks_{k}": v for k, v in checks.items()})
    return figures


def bench_decoding(data: Path) -> dict[str, Any]:
    """The embedded model on malt L1 and netllmbench L1, the same queries in each decoding
    mode: parse errors, correctness, and the act calls' latency as ratios to free text
    (pipeline/decoding_bench.py). Needs root (netllmbench)."""
    from pipeline import decoding_bench

    return decoding_bench.run()


# `make bench` runs these; others only with --only.
DEFAULT = ("isolation", "emulators", "routing", "analysis", "k8s", "malt", "malt_plans",
           "sandbox", "smoke", "serving", "binding", "gym")  # fmt: skip
BENCHMARKS: dict[str, Bench] = {
    "validity": bench_validity,
    "decoding": bench_decoding,
    "isolation": bench_isolation,
    "emulators": bench_emulators,
    "netllmbench_levels": bench_netllmbench_levels,
    "routing": bench_routing,
    "routing_levels": bench_routing_levels,
    "analysis": bench_analysis,
    "k8s": bench_k8s,
    "k8s_levels": bench_k8s_levels,
    "malt": bench_malt,
    "malt_verdicts": bench_malt_verdicts,
    "malt_plans": bench_malt_plans,
    "malt_coupled": bench_malt_coupled,
    "sandbox": bench_sandbox,
    "smoke": bench_smoke,
    "serving": bench_serving,
    "sweep": bench_sweep,
    "binding": bench_binding,
    "gym": bench_gym,
    "slurm": bench_slurm,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--only",
        choices=sorted(BENCHMARKS),
        action="append",
        help="run only these benchmarks (repeatable)",
    )
    parser.add_argument("--data-dir", default="data", help="data directory (default: data)")
    args = parser.parse_args(argv)
    data = data_root(args.data_dir)
    out_dir = data / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "code_version": code_version(),
    }
    for name in args.only or list(DEFAULT):
        print(f"== {name}", flush=True)
        figures = BENCHMARKS[name](data)
        record = {"benchmark": name, "machine": machine, "figures": figures}
        (out_dir / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
        width = max(len(k) for k in figures)
        for key, value in figures.items():
            print(f"  {key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
