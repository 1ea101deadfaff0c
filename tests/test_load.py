"""A loaded machine changes no verdict and no query (issue 14).

The smoke grid's cells (every app, oracle and null, levels 1-3) are played again with the
CPUs oversubscribed (`stress-ng --cpu 4×cores`, scripts/setup.d/70-tests.sh), one query per
cell to keep CI short: queries are generated under the load, then played and scored under
it. Every episode's verdict must be the one the idle smoke sweep (the session's
`smoke_sweep`) gave the same query, with no env_error; and the queries generated under
load must equal, column by column, the first queries of the same seed's shards the idle
sweep generated (a shard of n queries is the prefix of a longer one: pipeline/cells.py).

Before, `make sweep` on a busy machine failed with "routing-8x4 is not fully reachable
right after it was built: 62 pairs fail" (fping gave up on replies that had arrived), and
regenerating 62 routing queries gave one different query (an environment failure counted
as a rejected draw).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.config import compose
from tests.conftest import require

pytestmark = pytest.mark.integration
APPS = tuple(compose(["grid=smoke"]).grid.apps)  # the smoke grid's, whatever apps it names
LEVELS = (1, 2, 3)
AGENTS = ("oracle", "null")
QUERIES = 1


def _config(data: Path, app: str, level: int, agent: str = "oracle"):
    settings = {"app": app, "agent": agent, "level": level, "seed": 0, "queries": QUERIES}
    return compose([*(f"{k}={v}" for k, v in settings.items()), f"data_dir={data}"])


def _shards(data: Path, rows: int | None = None) -> dict[str, list[dict]]:
    """Each queries shard's first `rows` rows (all if None), every column."""
    root = data / "results" / "queries"
    return {
        str(p.relative_to(root)): pq.read_table(p).to_pylist()[:rows]
        for p in sorted(root.rglob("*.parquet"))
    }


def _verdicts(data: Path, queries: int) -> dict[tuple[str, str], tuple]:
    from pipeline.views import connect

    rows = (
        connect(data)
        .execute(
            "SELECT query_id, agent, outcome, correct, safe, tasks_solved FROM episodes "
            "WHERE queries = $n",
            {"n": queries},
        )
        .fetchall()
    )
    return {(r[0], r[1]): r[2:] for r in rows}


@contextlib.contextmanager
def _oversubscribed():
    cpus = 4 * (os.cpu_count() or 2)
    stress = subprocess.Popen(
        ["stress-ng", "--cpu", str(cpus), "--timeout", "900s", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(1)  # the workers are running before the first query is drawn
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(stress.pid, signal.SIGKILL)
        stress.wait()


def test_the_smoke_grid_under_cpu_oversubscription_gives_the_same_verdicts_and_queries(
    smoke_sweep, tmp_path
):
    from pipeline.run import run_cell

    require(shutil.which("stress-ng") is not None, "stress-ng is not installed (scripts/setup.sh)")
    idle_data, _ = smoke_sweep
    loaded = tmp_path / "loaded"
    with _oversubscribed():
        for app in APPS:
            for level in LEVELS:
                for agent in AGENTS:
                    run_cell(_config(loaded, app, level, agent))
    shards = _shards(loaded)
    assert len(shards) == len(APPS) * len(LEVELS)
    assert all(len(rows) == QUERIES for rows in shards.values())
    assert shards == _shards(idle_data, QUERIES)
    verdicts = _verdicts(loaded, QUERIES)
    assert len(verdicts) == len(APPS) * len(LEVELS) * len(AGENTS) * QUERIES
    assert all(v[0] != "env_error" for v in verdicts.values()), verdicts
    idle = _verdicts(idle_data, 3)
    assert {k: idle[k] for k in verdicts} == verdicts
