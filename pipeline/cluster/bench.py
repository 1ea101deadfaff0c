"""What the cluster path costs: the smoke grid from empty, local and through SLURM, in one run.

    python -m pipeline.bench --only slurm      # writes <data>/bench/slurm.json

Local is `snakemake --cores 2`; SLURM is `snakemake --profile profiles/slurm` on a local
cluster of 2 nodes x 1 CPU, the same two slots on the same machine, so the ratio is the
cost of the path itself: sbatch, a Snakemake process per job (two, with the job step's
srun), and status polling. It runs twice: with the local cluster's first status check after
2 s (`SNAKEMAKE_FLAGS`) and every later one within 2 s (`$NETGAUGE_SLURM_POLL_MAX_S`), and
with the profile as it stands (the executor's 40 s, then its growing waits), which is what
a user of a real cluster waits. Needs root (the cluster, and the network apps).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pipeline.cluster import accounting
from pipeline.cluster.keeper import LocalCluster
from pipeline.cluster.layout import SNAKEMAKE_FLAGS, Spec, private_state_dir
from pipeline.config import ROOT
from pipeline.slurm_executor import POLL_MAX_ENV

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def _sweep(name: str, args: list[str], root: Path, logs: Path, env=None) -> float | None:
    """Seconds the smoke grid takes from empty with `args`, or None if it failed; either
    way Snakemake's output is in <logs>/<name>.log."""
    cmd = [SNAKEMAKE, *args, "sweep", "--config", "grid=smoke", f"data_dir={root / name}"]
    started = time.perf_counter()
    with (logs / f"{name}.log").open("w") as out:
        done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    return round(time.perf_counter() - started, 1) if done.returncode == 0 else None


def run_all(data: Path) -> dict[str, Any]:
    """The figures; Snakemake's output of each sweep is kept in <data>/bench/slurm/."""
    logs = data / "bench" / "slurm"
    logs.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="netgauge-bench-slurm-") as tmp:
        root = Path(tmp)
        figures["local_s"] = _sweep("local_s", ["--cores", "2"], root, logs)
        cluster = LocalCluster(private_state_dir("bench"), Spec(nodes=2, cpus=1))
        with cluster:
            figures["cluster_start_s"] = cluster.ready["start_s"]
            env = cluster.env()
            since = datetime.now() - timedelta(minutes=1)
            as_is = {k: v for k, v in env.items() if k != POLL_MAX_ENV}  # the plugin's own waits
            for name, flags, run_env in (
                ("slurm_s", list(SNAKEMAKE_FLAGS), env),
                ("slurm_profile_as_is_s", [], as_is),
            ):
                args = ["--profile", "profiles/slurm", *flags, "--slurm-logdir", str(logs / name)]
                figures[name] = _sweep(name, args, root, logs, run_env)
            records = [r for r in accounting.jobs(env, since) if r.rule]
            stopping = time.perf_counter()
        figures["cluster_stop_s"] = round(time.perf_counter() - stopping, 1)
    if None in (figures["local_s"], figures["slurm_s"], figures["slurm_profile_as_is_s"]):
        figures["failed"] = f"a sweep failed (None above); its output: {logs}/<name>.log"
        return figures
    jobs = len(records) // 2
    figures["slurm_jobs_per_sweep"] = jobs
    figures["slurm_jobs_completed"] = sum(r.state == "COMPLETED" for r in records)
    elapsed = sorted(r.elapsed_s for r in records)
    figures["slurm_job_median_s"] = elapsed[len(elapsed) // 2] if elapsed else None
    for name in ("slurm_s", "slurm_profile_as_is_s"):
        figures[name.removesuffix("_s") + "_over_local"] = round(
            figures[name] / figures["local_s"], 2
        )
    figures["overhead_per_job_s"] = round((figures["slurm_s"] - figures["local_s"]) / jobs, 2)
    return figures
