"""The local SLURM cluster leaves nothing running, however its users die (pipeline/cluster/).

A test that starts a cluster and is killed by `kill -9` takes the cluster with it (its
keeper sees the owner pipe close); a keeper killed by `kill -9` leaves at most the job it
was running, which the next start of the same state directory stops. Each case runs a job
(`srun sleep`), so job steps and job processes are part of what must go.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cluster import daemons
from pipeline.cluster.layout import Layout, private_state_dir
from pipeline.config import ROOT
from pipeline.procs import alive
from tests.conftest import require, require_root

pytestmark = pytest.mark.integration

_OWNER = """
import json, sys, time
from pipeline.cluster.keeper import LocalCluster
cluster = LocalCluster(sys.argv[1]).__enter__()
print(json.dumps(cluster.ready), flush=True)
time.sleep(600)
"""


@pytest.fixture
def installed() -> None:
    require_root("the local SLURM cluster runs as root")
    require(
        all(Path(p).exists() for p in daemons.BINARIES.values()),
        f"SLURM is not installed; {daemons.SETUP_HINT}",
    )


def _cli(layout: Layout, command: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pipeline.cluster", command, "--state-dir", str(layout.root)]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _running_job(layout: Layout, tmp_path: Path) -> str:
    """Submit `srun sleep 300` and wait until it runs; its job id."""
    env = layout.client_env()
    job = subprocess.run(
        ["sbatch", "--parsable", "-o", str(tmp_path / "job.out"), "--wrap", "srun sleep 300"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any("sleep 300" in cmd for cmd in daemons.leftovers(layout).values()):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job} did not start: {(tmp_path / 'job.out').read_text()}")


def _gone(layout: Layout, pids: list[int], within_s: float) -> dict[int, str]:
    deadline = time.monotonic() + within_s
    while (left := daemons.leftovers(layout)) or any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return left or {p: "(daemon)" for p in pids if alive(p)}
        time.sleep(0.2)
    return {}


def test_a_killed_owner_takes_its_cluster_along(installed, tmp_path: Path) -> None:
    layout = Layout(private_state_dir("test-owner"))
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(layout.root)], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        ready = json.loads(owner.stdout.readline())
        _running_job(layout, tmp_path)
    finally:
        owner.kill()  # kill -9: no finally, no atexit in the owner
        owner.wait()
    assert _gone(layout, [ready["keeper"], *ready["daemons"].values()], 120) == {}
    assert "stopping (owner gone)" in layout.keeper_log.read_text()


def test_the_next_start_stops_what_a_killed_keeper_left(installed, tmp_path: Path) -> None:
    layout = Layout(private_state_dir("test-keeper"))
    started = _cli(layout, "start")
    assert started.returncode == 0, started.stderr
    assert f"export SLURM_CONF={layout.slurm_conf}" in started.stdout
    ready = json.loads(layout.ready.read_text())
    try:
        _running_job(layout, tmp_path)
        subprocess.run(["kill", "-9", str(ready["keeper"])], check=True)
        # The kernel sends the daemons SIGTERM; the job's step daemon (and, depending on
        # timing, its processes) outlive them.
        daemon_pids = list(ready["daemons"].values())
        deadline = time.monotonic() + 60
        while any(alive(p) for p in daemon_pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in daemon_pids if alive(p)]
        left = daemons.leftovers(layout)
        assert any(cmd.startswith("slurmstepd") for cmd in left.values()), left
        restarted = _cli(layout, "start")
        assert restarted.returncode == 0, restarted.stderr
        log = layout.keeper_log.read_text()
        assert "stopped what an earlier cluster left" in log and "slurmstepd" in log
        assert not [p for p in left if alive(p)]
    finally:
        stopped = _cli(layout, "stop")
    assert stopped.returncode == 0 and "keeper" in stopped.stdout, stopped.stdout
    assert daemons.leftovers(layout) == {}
    assert _cli(layout, "status").returncode == 1  # nothing running
