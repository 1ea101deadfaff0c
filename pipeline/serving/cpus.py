"""Which CPUs the CPU engine's OpenMP threads are bound to (`VLLM_CPU_OMP_THREADS_BIND`).

vLLM's automatic binding keeps one core per rank for its scheduler: on a 2-core machine
it decodes on one core ("Reducing Torch threads from 2 to 1"). NetGauge's default,
`available`, binds to every CPU this process may use, read from the kernel rather than
assumed: the affinity mask (cpusets, `taskset`, SLURM's task binding), cut to the CPU
quota of the process's cgroup (v2 `cpu.max`, v1 `cpu.cfs_quota_us`) and to the job's
thread allowance (Snakemake exports a job's `threads` as OMP_NUM_THREADS). The model
config's `cpu_bind` may instead name vLLM's own modes (`auto`, `nobind`) or a CPU list
("0-3", "0,2").
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

from pipeline.errors import ConfigError

AVAILABLE = "available"  # NetGauge's choice: every CPU the process may use
VLLM_MODES = ("auto", "nobind")  # vLLM's own: its automatic binding, or none
_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def check_cpu_bind(value: str) -> None:
    """ConfigError unless `value` is a mode or a CPU list vLLM can parse."""
    if value in (AVAILABLE, *VLLM_MODES) or _CPU_LIST.match(value):
        return
    raise ConfigError(
        f"model.cpu_bind='{value}' is not allowed; choose one of: {AVAILABLE}, "
        f"{', '.join(VLLM_MODES)}, or a CPU list such as 0-3 or 0,2"
    )


def cgroup_cpu_quota(proc_cgroup: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPU quota of this process's cgroup in CPUs, or None when there is none."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if controllers == "":  # v2: cpu.max holds "<quota|max> <period>"
            found = _read(CGROUP_ROOT / rel / "cpu.max")
            if found:
                quota, _, period = found.partition(" ")
                if quota != "max" and period:
                    return int(quota) / int(period)
        elif "cpu" in controllers.split(","):
            base = CGROUP_ROOT / controllers
            if not base.is_dir():
                base = CGROUP_ROOT / "cpu"
            quota, period = (
                _read(base / rel / "cpu.cfs_quota_us"),
                _read(base / rel / "cpu.cfs_period_us"),
            )
            if quota and period and int(quota) > 0:
                return int(quota) / int(period)
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def available_cpus(
    job_threads: str | None = None,
    affinity: set[int] | None = None,
    quota: float | None = None,
) -> list[int]:
    """The CPUs to bind to: the affinity mask (lowest first), no more than the cgroup
    quota allows (rounded down, at least one) nor than the job's threads."""
    cpus = sorted(affinity if affinity is not None else os.sched_getaffinity(0))
    limit = len(cpus)
    if quota is not None:
        limit = min(limit, max(1, math.floor(quota)))
    if job_threads and job_threads.isdigit() and int(job_threads) > 0:
        limit = min(limit, int(job_threads))
    return cpus[:limit]


def bind_env(cpu_bind: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variable that binds the engine: `VLLM_CPU_OMP_THREADS_BIND` for `cpu_bind`."""
    check_cpu_bind(cpu_bind)
    if cpu_bind != AVAILABLE:
        return {"VLLM_CPU_OMP_THREADS_BIND": cpu_bind}
    environ = os.environ if environ is None else environ
    cpus = available_cpus(environ.get("OMP_NUM_THREADS"), quota=cgroup_cpu_quota())
    return {"VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, cpus))}
