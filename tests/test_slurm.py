"""The sweep on a live SLURM cluster (pipeline/cluster/: real slurmctld, two slurmd nodes,
munge, slurmdbd on MariaDB): the smoke grid through `snakemake --profile profiles/slurm`,
with one run job cancelled by scancel mid-run and the same command run again.

One module fixture does the whole run and stops the cluster; the tests read what it saw:
every job went through sbatch (the controller's accounting), the episodes equal the local
sweep's row for row, the cancelled cell resumed with no lost or duplicated rows, the
failure was reported with its job and log, and no process of the cluster is left.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.cluster import accounting, daemons
from pipeline.cluster.keeper import LocalCluster
from pipeline.cluster.layout import SNAKEMAKE_FLAGS, Spec, private_state_dir
from pipeline.config import ROOT
from pipeline.procs import alive
from pipeline.views import connect
from tests.conftest import SNAKEMAKE, integration_fixture, require, require_root

pytestmark = pytest.mark.integration

RUN_TIMEOUT_S = 1500
CELL_KEYS = ("app", "model", "agent", "level", "seed", "queries", "variant")
LOCAL_RULES = {"plan", "score", "summarize", "report", "sweep"}


@dataclass
class SlurmRun:
    data: Path
    first: str = ""  # Snakemake's output of the run that had a job cancelled
    first_rc: int | None = None
    second: str = ""  # ... and of the same command run again
    second_rc: int | None = None
    cancelled: tuple[str, str] | None = None  # (SLURM job id, cell path)
    records: list[accounting.JobRecord] = field(default_factory=list)
    daemon_pids: dict[str, int] = field(default_factory=dict)
    left: dict[int, str] = field(default_factory=dict)


def sweep_command(data: Path) -> list[str]:
    return [
        SNAKEMAKE,
        "--profile",
        "profiles/slurm",
        *SNAKEMAKE_FLAGS,
        "--slurm-logdir",
        str(data / "logs" / "slurm"),
        "sweep",
        "--config",
        "grid=smoke",
        f"data_dir={data}",
    ]


def _running_jobs(env: dict[str, str]) -> dict[str, str]:
    """Comment -> job id of the cluster's running jobs."""
    listed = subprocess.run(
        ["squeue", "-h", "-t", "RUNNING", "-o", "%i|%k"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return {c: j for j, _, c in (line.partition("|") for line in listed.stdout.splitlines())}


def _checkpointed(folder: Path) -> int:
    """Episodes the chunks in a cell's partial folder hold (0 if it went meanwhile)."""
    done: set[str] = set()
    for chunk in folder.glob("chunk-*.parquet"):
        with contextlib.suppress(OSError, ValueError):  # a chunk that went meanwhile
            done.update(pq.read_table(chunk, columns=["query_id"]).column(0).to_pylist())
    return len(done)


def cancel_one_mid_run(proc: subprocess.Popen, data: Path, env: dict[str, str]):
    """Wait for a run job that has checkpointed some but not all of its episodes, scancel
    it; (job id, cell path)."""
    partial = data / "work" / "partial"
    while proc.poll() is None:
        for folder in sorted({c.parent for c in partial.glob("*/*/*/*/*/*/*/chunk-*.parquet")}):
            cell = folder.relative_to(partial)
            values = [part.partition("=")[2] for part in cell.parts]
            if not 0 < _checkpointed(folder) < int(values[CELL_KEYS.index("queries")]):
                continue  # not begun, or every episode played (the job is finishing)
            job = _running_jobs(env).get("rule_run_wildcards_" + "_".join(values))
            if job is None:
                continue
            done = subprocess.run(["scancel", job], env=env, capture_output=True, timeout=30)
            if done.returncode == 0:
                return job, str(cell)
        time.sleep(0.2)
    return None


@pytest.fixture(scope="module")
@integration_fixture
def slurm_run(tmp_path_factory) -> SlurmRun:
    require_root("the local SLURM cluster runs as root, and the run jobs need namespaces")
    require(
        all(Path(p).exists() for p in daemons.BINARIES.values()),
        f"SLURM is not installed; {daemons.SETUP_HINT}",
    )
    run = SlurmRun(tmp_path_factory.mktemp("slurm"))
    since = datetime.now() - timedelta(minutes=1)
    # Two CPUs per node: four job slots, twice the machine's CPUs as `make sweep` gives
    # Snakemake (the lab jobs mostly wait on their networks).
    cluster = LocalCluster(private_state_dir("test"), Spec(nodes=2, cpus=2))
    with cluster:
        env = cluster.env()
        run.daemon_pids = cluster.daemon_pids
        with (run.data / "first.log").open("w+") as log:
            proc = subprocess.Popen(
                sweep_command(run.data),
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
            try:
                run.cancelled = cancel_one_mid_run(proc, run.data, env)
                run.first_rc = proc.wait(timeout=RUN_TIMEOUT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
            run.first = (run.data / "first.log").read_text()
        second = subprocess.run(
            sweep_command(run.data),
            cwd=ROOT,
            env=env,
            text=True,
            capture_output=True,
            timeout=RUN_TIMEOUT_S,
        )
        run.second, run.second_rc = second.stdout + second.stderr, second.returncode
        run.records = accounting.jobs(env, since)
    run.left = daemons.leftovers(cluster.layout)
    return run


def _submitted(output: str) -> dict[str, str]:
    """SLURM job id -> rule, from Snakemake's 'submitted with SLURM jobid' lines."""
    out = {}
    for line in output.splitlines():
        if "has been submitted with SLURM jobid" in line:
            job = line.split("SLURM jobid ", 1)[1].split()[0]
            out[job] = line.split("/rule_", 1)[1].split("/", 1)[0]
    return out


def test_the_cancelled_run_failed_and_the_rerun_completed(slurm_run: SlurmRun) -> None:
    assert slurm_run.cancelled is not None, (
        "no run job was caught mid-run:\n" + slurm_run.first[-3000:]
    )
    job, cell = slurm_run.cancelled
    assert slurm_run.first_rc == 1, slurm_run.first[-3000:]
    # What a user sees: the job, its state, the rule's log and SLURM's log of the job.
    assert f"SLURM-job '{job}' failed, SLURM status is: 'CANCELLED'" in slurm_run.first
    values = "_".join(part.partition("=")[2] for part in Path(cell).parts)
    assert f"/logs/slurm/rule_run/{values}/{job}.log" in slurm_run.first
    assert f"/logs/run/{cell.replace('/', '_')}.log" in slurm_run.first
    assert slurm_run.second_rc == 0, slurm_run.second[-3000:]


def _own_lines(output: str) -> list[str]:
    """Snakemake's own lines, without the failed jobs' logs it quotes between ==== rules."""
    lines, quoting = [], False
    for line in output.splitlines():
        if line.startswith("=" * 20):
            quoting = not quoting
        elif not quoting:
            lines.append(line)
    return lines


def _failure(output: str, job: str) -> str:
    """What Snakemake printed about the failed SLURM job `job` (its logs' tails included)."""
    return output.partition(f"SLURM-job '{job}' failed")[2].partition("Error in rule")[0]


def test_every_job_went_through_sbatch(slurm_run: SlurmRun) -> None:
    records = slurm_run.records
    done = Counter((r.rule, r.wildcards) for r in records if r.state == "COMPLETED")
    # 4 apps x 3 levels of queries; 4 apps x 3 levels x 2 agents cells run (and scored
    # locally); each exactly once.
    assert Counter(rule for rule, _ in done) == {"generate": 12, "run": 24}
    assert set(done.values()) == {1}
    cancelled = [r for r in records if r.state == "CANCELLED"]
    assert [(r.job_id, r.rule) for r in cancelled] == [(slurm_run.cancelled[0], "run")]
    # A job may also have failed in the first run the way it can in a local one (a lab that
    # a loaded machine could not build in time): the rerun redid it.
    first = _submitted(slurm_run.first)
    for r in records:
        if r.state not in ("COMPLETED", "CANCELLED"):
            assert r.state == "FAILED" and r.job_id in first, r
            assert "hit an environment error" in _failure(slurm_run.first, r.job_id), r
    # Snakemake's own account agrees job by job, and ran only the local rules itself.
    submitted = {**first, **_submitted(slurm_run.second)}
    assert submitted == {r.job_id: r.rule for r in records}
    local = {
        line.split()[1].rstrip(":")
        for line in _own_lines(slurm_run.first) + _own_lines(slurm_run.second)
        if line.startswith("localrule ")
    }
    assert local == LOCAL_RULES
    assert {r.nodes for r in records} == {"ng1", "ng2"}


def _episodes(data: Path) -> list[tuple]:
    con = connect(data)
    return con.execute(
        "SELECT app, model, agent, level, seed, queries, variant, query_id, correct, safe "
        "FROM episodes ORDER BY ALL"
    ).fetchall()


def test_episodes_equal_the_local_sweep_row_for_row(slurm_run: SlurmRun, smoke_sweep) -> None:
    local_data, _ = smoke_sweep
    ours, local = _episodes(slurm_run.data), _episodes(local_data)
    assert len(ours) == len(local) == 24 * 3
    assert ours == local


def test_cancelled_cell_resumed_without_lost_or_duplicated_rows(slurm_run: SlurmRun) -> None:
    _, cell = slurm_run.cancelled
    wildcards = dict(part.split("=", 1) for part in Path(cell).parts)
    rows = [
        r
        for r in _episodes(slurm_run.data)
        if dict(zip(CELL_KEYS, map(str, r[:7]), strict=True)) == wildcards
    ]
    query_ids = [r[7] for r in rows]
    assert len(query_ids) == 3 and len(set(query_ids)) == 3
    log = (slurm_run.data / "logs" / "run" / (cell.replace("/", "_") + ".log")).read_text()
    assert "resuming" in log and "episodes already done" in log, log[-2000:]
    assert not (slurm_run.data / "work" / "partial" / cell).exists()


def test_no_process_of_the_cluster_is_left(slurm_run: SlurmRun) -> None:
    assert slurm_run.left == {}
    assert set(slurm_run.daemon_pids) == {
        "munged",
        "mariadbd",
        "slurmdbd",
        "slurmctld",
        "slurmd ng1",
        "slurmd ng2",
    }
    assert not [name for name, pid in slurm_run.daemon_pids.items() if alive(pid)]
