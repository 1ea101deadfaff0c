"""The whole pipeline for real: Snakemake DAG, direct Hydra runs, kill -9 and resume.

These run the real MALT app and the real sandbox on the smoke grid.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from pipeline.config import ROOT, choices, compose
from pipeline.files import TEMPORARY_GLOB
from pipeline.plan import read_plan
from pipeline.views import connect
from tests.conftest import SHARED_DATA, SLOTS, SNAKEMAKE, require, snakemake

pytestmark = pytest.mark.integration
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}|\d{2}-\d{2}-\d{2}")


def test_dry_run_lists_every_stage(tmp_path):
    done = snakemake(tmp_path, "-n", "sweep")
    assert done.returncode == 0, done.stderr
    stats = job_stats(done.stdout + done.stderr)
    assert stats == {
        "plan": 1,
        "generate": 12,
        "run": 24,
        "score": 24,
        "summarize": 1,
        "report": 1,
        "sweep": 1,
        "total": 64,
    }
    assert not (tmp_path / "results").exists()


def job_stats(out: str) -> dict[str, int]:
    """Snakemake's "Job stats" table as {rule: count}."""
    lines = out.split("Job stats:", 1)[1].splitlines()[3:]
    stats = {}
    for line in lines:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        stats[parts[0]] = int(parts[1])
    return stats


def test_bad_grid_fails_before_any_work(tmp_path):
    done = snakemake(tmp_path, "-n", "sweep", grid="smok")
    assert done.returncode != 0
    assert "unknown grid 'smok' (did you mean 'smoke'?); choose one of: " + ", ".join(
        choices("grid")
    ) in (done.stdout + done.stderr)


def test_smoke_sweep_scores_reference_agents(smoke_sweep):
    data, done = smoke_sweep
    con = connect(data)
    rows = con.execute(
        "SELECT app, agent, level, count(*), avg(correct::INT), avg(safe::INT) FROM episodes "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    planned = read_plan(data, "smoke")
    n = planned[0].queries
    apps = sorted({c.app for c in planned})
    assert apps == sorted(compose(["grid=smoke"]).grid.apps)
    assert rows == [
        (app, agent, lvl, n, correct, 1.0)
        for app in apps
        for agent, correct in (("null", 0.0), ("oracle", 1.0))
        for lvl in (1, 2, 3)
    ]
    outcomes = con.execute("SELECT DISTINCT agent, outcome FROM episodes ORDER BY ALL").fetchall()
    assert outcomes == [("null", "parse_error"), ("oracle", "correct")]
    # The sweep ends by printing the summary with both 95 % intervals.
    assert "correct [normal 95%] [wilson 95%]" in done.stderr
    assert (data / "summaries" / "smoke.md").exists()


def test_rerun_is_a_no_op(smoke_sweep):
    data, _ = smoke_sweep
    done = snakemake(data, "-n", "sweep")
    assert done.returncode == 0
    assert "Nothing to be done" in done.stdout + done.stderr


def test_direct_multirun_writes_the_same_shards(smoke_sweep, tmp_path):
    data, _ = smoke_sweep
    cmd = [
        sys.executable,
        "-m",
        "pipeline.run",
        "-m",
        "app=malt",
        "agent=oracle,null",
        "level=1,3",
        "queries=3",
        f"data_dir={tmp_path}",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for level in (1, 3):
        part = f"queries/app=malt/app_variant=base/level={level}/seed=0/part-0.parquet"
        assert (tmp_path / "results" / part).read_bytes() == (data / "results" / part).read_bytes()
        for agent in ("oracle", "null"):
            cell = f"app=malt/model=none/agent={agent}/level={level}/seed=0/queries=3/variant=base"
            part = f"episodes/{cell}/part-0.parquet"
            cols = ["query_id", "outcome", "correct", "safe", "config_hash"]
            ours = pq.read_table(tmp_path / "results" / part, columns=cols)
            theirs = pq.read_table(data / "results" / part, columns=cols)
            assert ours.equals(theirs)
    hydra_dirs = [p.relative_to(tmp_path) for p in (tmp_path / "logs" / "hydra").rglob("*")]
    assert hydra_dirs and not any(TIMESTAMP.search(str(p)) for p in hydra_dirs), hydra_dirs
    assert not any(TIMESTAMP.search(str(p)) for p in (tmp_path / "results").rglob("*"))


def test_direct_run_rejects_unknown_app(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.run", "app=mat"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert (
        "unknown app 'mat' (did you mean 'malt'?); choose one of: " + ", ".join(choices("app"))
        in done.stderr
    )


KILLED_GRID = """\
name: killed
apps: [malt, k8s]
agents: [oracle, "null"]
models: [none]
levels: [1, 2]
seeds: [0]
queries: 5
exclude: []
"""


def test_kill_9_then_rerun_loses_and_duplicates_nothing(tmp_path):
    # A grid of the two quickest apps, from a config folder on $NETGAUGE_APP_PATH.
    (tmp_path / "plugins" / "conf" / "grid").mkdir(parents=True)
    (tmp_path / "plugins" / "conf" / "grid" / "killed.yaml").write_text(KILLED_GRID)
    env = {**os.environ, "NETGAUGE_APP_PATH": str(tmp_path / "plugins")}
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [SNAKEMAKE, "--cores", SLOTS, "sweep", "--config", "grid=killed", f"data_dir={data}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    episodes = data / "results" / "episodes"
    while time.monotonic() < deadline and not any(episodes.glob("**/*.parquet")):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and every job it started
    proc.wait()
    done = snakemake(data, "sweep", grid="killed", env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    con = connect(data)
    n, distinct = con.execute(
        "SELECT count(*), count(DISTINCT (query_id, agent)) FROM episodes"
    ).fetchone()
    cells = read_plan(data, "killed")
    assert len(cells) == 8
    assert n == distinct == sum(c.queries for c in cells)
    assert not list((data / "results").rglob(TEMPORARY_GLOB))


def run_direct(*overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.run", *overrides],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_missing_malt_file_is_a_clear_error(tmp_path):
    done = run_direct(
        "app=malt_google",
        "app.topology.path=/nonexistent/malt.textproto",
        f"data_dir={tmp_path}",
        "queries=2",
    )
    assert done.returncode == 2
    assert (
        done.stderr.count(
            "MALT topology file not found: /nonexistent/malt.textproto; "
            "set app.topology.path=<file.textproto> or "
            "app.topology.source=synthetic"
        )
        == 1
    )
    assert not (tmp_path / "results").exists()


def test_cell_on_googles_malt_example(tmp_path):
    require(
        (SHARED_DATA / "malt" / "malt-example-final.textproto").exists(),
        f"Google's MALT example is not in {SHARED_DATA}/malt",
    )
    done = run_direct(
        "app=malt_google",
        "agent=oracle",
        "level=3",
        "queries=4",
        f"data_dir={tmp_path}",
        f"shared_data_dir={SHARED_DATA}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        "app=malt_google/model=none/agent=oracle/level=3/seed=0/queries=4/variant=base: "
        "n=4 correct=100.0%" in done.stdout
    )
    ids = connect(tmp_path).execute("SELECT DISTINCT app, query_id[:14] FROM episodes").fetchall()
    assert ids == [("malt_google", "malt_google-L3")]
