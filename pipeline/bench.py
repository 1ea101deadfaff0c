"""`make bench`: the speed figures the issues name, measured and written to data/bench/.

    python -m pipeline.bench                 # the default set (`make bench`)
    python -m pipeline.bench --only smoke    # one of them
    python -m pipeline.bench --list          # every benchmark, where it is declared
    NETGAUGE_BENCH_QUERIES=200 python -m pipeline.bench --only validity   # not in `make bench`
    python -m pipeline.bench --only sweep    # the default grid from empty (~10 min; not in it)
    python -m pipeline.bench --only bounds   # kernel memory a lab can be made to hold (~10 min)

A benchmark is declared where its code lives (`BenchSpec` in pipeline/registry.py): an app's
in its `AppSpec.benches`, any other package's in its `BENCHES`; the pipeline's own (the smoke
and default sweeps, Gymnasium, validity, decoding) are below. Each returns a flat dict of
measurements (seconds unless named otherwise) and the targets it is held to; the results
land in <data>/bench/<name>.json with the machine and code version, and a table is
printed. Benchmarks measure; they do not assert.
"""

from __future__ import annotations

import argparse
import inspect
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

import gymnasium as gym

import pipeline.gym  # noqa: F401 (registers the ids bench_gym makes)
from pipeline import decoding_bench, sweep_bench
from pipeline.build import make_app
from pipeline.cells import data_root
from pipeline.config import ROOT, compose
from pipeline.errors import RegistryError
from pipeline.records import code_version
from pipeline.registry import BENCHES, BenchSpec
from pipeline.run import run_cell
from pipeline.views import connect

Bench = Callable[[Path], dict[str, Any]]


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
    return sweep_bench.run("default", log_to=data / "bench" / "sweep.snakemake.log")


def bench_gym(data: Path) -> dict[str, Any]:
    """Gymnasium: seconds from gym.make to the first observation (routing and netllmbench
    level 3, queries=100), the next four resets, and whether the five queries served are
    the generate stage's first five for the same seed."""
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


def bench_validity(data: Path) -> dict[str, Any]:
    """Every app and level: the oracle correct and safe, the null agent never correct, on
    min(N, what one seed can get) queries of seed 0 (N: $NETGAUGE_BENCH_QUERIES, 1,000;
    apps: $NETGAUGE_BENCH_APPS, levels: $NETGAUGE_BENCH_LEVELS). Hours for the lab apps at
    N = 1,000 (each query is validated on a live lab): run it on its own, `--only validity`.
    What the lab apps' intended-state checks cost is the `checks` benchmark
    (generators/benches/checks.py)."""
    wanted = int(os.environ.get("NETGAUGE_BENCH_QUERIES", "1000"))
    apps = os.environ.get("NETGAUGE_BENCH_APPS", "malt,malt_google,k8s,routing,netllmbench")
    levels = [int(v) for v in os.environ.get("NETGAUGE_BENCH_LEVELS", "1,2,3").split(",")]
    figures: dict[str, Any] = {"queries_asked": wanted}
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
    return figures


def bench_decoding(data: Path) -> dict[str, Any]:
    """The embedded model on malt L1 and netllmbench L1, the same queries in each decoding
    mode: parse errors, correctness, and the act calls' latency as ratios to free text
    (pipeline/decoding_bench.py). Needs root (netllmbench)."""
    return decoding_bench.run()


# The pipeline's own benchmarks; every other one is found through the registry.
OWN = (
    BenchSpec("smoke", "pipeline.bench:bench_smoke", default=True),
    BenchSpec("sweep", "pipeline.bench:bench_sweep"),
    BenchSpec("gym", "pipeline.bench:bench_gym", default=True),
    BenchSpec("validity", "pipeline.bench:bench_validity"),
    BenchSpec("decoding", "pipeline.bench:bench_decoding"),
)


def benchmarks() -> dict[str, BenchSpec]:
    """Every benchmark by name: the pipeline's own and every declared one."""
    found = {spec.name: spec for spec in OWN}
    for name in BENCHES.names():
        if name in found:
            raise RegistryError(
                f"benchmark '{name}' is declared twice: by the pipeline and by a package"
            )
        found[name] = BENCHES.get(name)
    return dict(sorted(found.items()))


def run_bench(spec: BenchSpec, data: Path) -> dict[str, Any]:
    """The benchmark's figures; a target without parameters is called without the data
    directory."""
    func = spec.load()
    return func(data) if inspect.signature(func).parameters else func()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    found = benchmarks()
    parser.add_argument(
        "--only",
        choices=sorted(found),
        action="append",
        help="run only these benchmarks (repeatable)",
    )
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    parser.add_argument("--data-dir", default="data", help="data directory (default: data)")
    args = parser.parse_args(argv)
    if args.list:
        for name, spec in found.items():
            default = " (make bench)" if spec.default else ""
            where = f"{spec.package}{spec.target}" if spec.target.startswith(".") else spec.target
            print(f"{name}: {where}{default}")
        return 0
    data = data_root(args.data_dir)
    out_dir = data / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "code_version": code_version(),
    }
    for name in args.only or [n for n, spec in found.items() if spec.default]:
        print(f"== {name}", flush=True)
        figures = run_bench(found[name], data)
        record = {"benchmark": name, "machine": machine, "figures": figures}
        (out_dir / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
        width = max(len(k) for k in figures)
        for key, value in figures.items():
            print(f"  {key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
