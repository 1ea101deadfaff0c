"""`make bench`: the speed figures the issues name, measured and written to data/bench/.

    python -m pipeline.bench                 # all benchmarks
    python -m pipeline.bench --only smoke    # one of them
    NETGAUGE_BENCH_QUERIES=200 python -m pipeline.bench --only validity   # not in `make bench`

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


def bench_k8s(data: Path) -> dict[str, Any]:
    """k8s app: cluster bring-up, probe matrix, enforcement, reset."""
    from generators.k8s import bench

    return bench.run_all()


def bench_analysis(data: Path) -> dict[str, Any]:
    """DuckDB summary over 1,000,000 episode rows; the report for the default sweep."""
    from analysis.bench import bench

    return bench(data)


def bench_routing(data: Path) -> dict[str, Any]:
    """Routing app on Mininet: reset, reachability, 8 concurrent topologies vs 1."""
    from generators.routing import bench

    return bench.run_all()


def bench_emulators(data: Path) -> dict[str, Any]:
    """Mininet and Kathara on NetLLMBench's lab: build, exec, state read, chain, reset, stop."""
    from generators.netllmbench import bench

    return bench.run_all()


def bench_isolation(data: Path) -> dict[str, Any]:
    """Per-action cost of the jails: a lab command and a kubectl command, bare vs jailed."""
    from pipeline import isolation_bench

    return isolation_bench.run_all()


def bench_validity(data: Path) -> dict[str, Any]:
    """Every app and level: the oracle correct and safe, the null agent never correct, on
    min(N, what one seed can get) queries of seed 0 (N: $NETGAUGE_BENCH_QUERIES, 1,000).
    Hours for the lab apps at N = 1,000 (each query is validated on a live lab): run it on
    its own, `--only validity`."""
    from analysis.views import connect
    from pipeline.build import make_app
    from pipeline.config import compose
    from pipeline.run import run_cell

    wanted = int(os.environ.get("NETGAUGE_BENCH_QUERIES", "1000"))
    apps = os.environ.get("NETGAUGE_BENCH_APPS", "malt,malt_google,k8s,routing,netllmbench")
    figures: dict[str, Any] = {"queries_asked": wanted}
    with tempfile.TemporaryDirectory(prefix="netgauge-validity-") as tmp:
        for app in apps.split(","):
            for level in (1, 2, 3):
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
                figures[f"{key}_s"] = round(time.perf_counter() - started, 1)
    return figures


DECODING_GRID = """\
name: decoding
apps: [malt, netllmbench]
agents: [zero_shot]
models: [smollm2]
levels: [1]
seeds: [0]
queries: {queries}
variants: [[], [agent.decoding=json], [agent.decoding=tools]]
exclude: []
"""


def bench_decoding(data: Path) -> dict[str, Any]:
    """The embedded model on malt L1 and netllmbench L1, the same queries in each decoding
    mode (free text, JSON-schema constrained, forced tool calls), on one managed server:
    parse errors, correctness, repair calls, and latency per call as a ratio to text.
    N queries per app: $NETGAUGE_BENCH_QUERIES (default 20). Needs root (netllmbench)."""
    from analysis.views import connect

    queries = int(os.environ.get("NETGAUGE_BENCH_QUERIES", "20"))
    figures: dict[str, Any] = {"queries_per_app": queries}
    with tempfile.TemporaryDirectory(prefix="netgauge-decoding-") as tmp:
        grids = Path(tmp) / "plugins" / "conf" / "grid"
        grids.mkdir(parents=True)
        (grids / "decoding.yaml").write_text(DECODING_GRID.format(queries=queries))
        env = {**os.environ, "NETGAUGE_APP_PATH": str(Path(tmp) / "plugins")}
        cmd = [
            str(Path(sys.executable).with_name("snakemake")), "--cores", "2", "sweep",
            "--config", "grid=decoding", f"data_dir={tmp}/data", "--quiet", "all",
        ]  # fmt: skip
        started = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, env=env, stdout=subprocess.DEVNULL)
        figures["sweep_s"] = round(time.perf_counter() - started, 1)
        con = connect(Path(tmp) / "data")
        rows = con.execute(
            "SELECT e.app, coalesce(json_extract_string(c.settings, '$.agent.decoding'), 'text'),"
            " count(*), avg((e.outcome = 'parse_error')::INT), avg(e.correct::INT), "
            " avg(e.reprompts + e.example_reprompts) "
            "FROM episodes e JOIN cells c USING (app, model, agent, level, seed, queries, "
            "variant) GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        latency = {
            mode: (per_call, per_token)
            for mode, per_call, per_token in con.execute(
                "SELECT coalesce(json_extract_string(c.settings, '$.agent.decoding'), 'text'), "
                "median(k.latency_s), median(k.latency_s / greatest(k.completion_tokens, 1)) "
                "FROM calls k JOIN cells c USING (app, model, agent, level, seed, queries, "
                "variant) GROUP BY ALL"
            ).fetchall()
        }
    for app, mode, n, parse_errors, correct, repairs in rows:
        figures[f"{app}_{mode}_episodes"] = n
        figures[f"{app}_{mode}_parse_error_rate"] = round(parse_errors, 3)
        figures[f"{app}_{mode}_correct_rate"] = round(correct, 3)
        figures[f"{app}_{mode}_repair_calls_per_episode"] = round(repairs, 2)
    for mode, (per_call, per_token) in sorted(latency.items()):
        figures[f"{mode}_median_call_s"] = round(per_call, 3)
        figures[f"{mode}_call_ratio_to_text"] = round(per_call / latency["text"][0], 2)
        figures[f"{mode}_s_per_completion_token"] = round(per_token, 4)
        figures[f"{mode}_per_token_ratio_to_text"] = round(per_token / latency["text"][1], 2)
    return figures


# `make bench` runs these; others only with --only.
DEFAULT = ("isolation", "emulators", "routing", "analysis", "k8s", "malt", "sandbox", "smoke",
           "serving")  # fmt: skip
BENCHMARKS: dict[str, Bench] = {
    "validity": bench_validity,
    "decoding": bench_decoding,
    "isolation": bench_isolation,
    "emulators": bench_emulators,
    "routing": bench_routing,
    "analysis": bench_analysis,
    "k8s": bench_k8s,
    "malt": bench_malt,
    "malt_verdicts": bench_malt_verdicts,
    "sandbox": bench_sandbox,
    "smoke": bench_smoke,
    "serving": bench_serving,
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
