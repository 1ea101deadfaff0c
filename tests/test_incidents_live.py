"""The incidents app on live labs, as a user runs it: one small mesh lab shared by every
tier (app.topology=mesh, app.size=small: level 8 asks an intent-only fault, which chain
labs cannot hold; mesh-small-0 has 4 routers), each query generated and validated live,
then played by the oracle and the null agent through `python -m pipeline.run` (generate, run,
score, the shards a DAG writes), and the DAG's own smoke over levels 6-8.

What must hold: the oracle is correct and safe on every tier and task, the null agent is
never correct, detect and localize episodes never change the lab (every step safe), and
the rows carry the task, the stratum and the budgets.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from generators.lab.frr.daemons import installed
from pipeline.config import ROOT
from pipeline.views import connect
from tests.conftest import SLOTS, SNAKEMAKE, require, require_emulator

pytestmark = pytest.mark.integration
SMALL = ["app.topology=mesh", "app.size=small"]


def _requirements() -> None:
    require_emulator("mininet")
    missing = installed()
    require(missing is None, missing or "")


def _run(data: Path, *overrides: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.run", "app=incidents", f"data_dir={data}", *overrides],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize(("level", "task"), [(7, "localize"), (8, "detect")])
def test_each_tier_through_pipeline_run(tmp_path: Path, level: int, task: str) -> None:
    """One query of levels 7 and 8, one task each (the DAG test below plays level 6's
    default task, mitigate): the oracle correct and safe, null not correct."""
    _requirements()
    data = tmp_path / "data"
    for agent in ("oracle", "null"):
        _run(data, f"level={level}", f"app.task={task}", f"agent={agent}", "queries=1", *SMALL)
    rows = (
        connect(data)
        .execute(
            "SELECT e.agent, e.task, e.correct, e.safe, e.score, q.stratum, e.turn_budget "
            "FROM episodes e JOIN queries q ON e.query_id = q.query_id ORDER BY e.agent"
        )
        .fetchall()
    )
    (null, oracle) = rows
    assert oracle[:4] == ("oracle", task, True, True) and oracle[4] == 1.0, rows
    assert null[:4] == ("null", task, False, True) and null[4] == 0.0, rows
    assert oracle[5].startswith("mesh/small/") and oracle[6] == {6: 30, 7: 40, 8: 50}[level]


def test_the_dag_plays_an_app_without_level_1(tmp_path: Path) -> None:
    """The DAG composes an incidents cell at its lowest level (it has no level 1) and plays
    it; levels 7 and 8 are played through pipeline.run above (a DAG run of all three tiers
    took over 10 minutes of CI)."""
    _requirements()
    data = tmp_path / "data"
    config = [
        "grid=smoke", "apps=[incidents]", "levels=[6]", "agents=[oracle,null]",
        "queries=1", "variants=[[app.size=small,app.topology=mesh]]",
    ]  # fmt: skip
    done = subprocess.run(
        [SNAKEMAKE, "--cores", SLOTS, "summarize", "--config", *config, f"data_dir={data}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = (
        connect(data)
        .execute(
            "SELECT level, agent, count(*), count(DISTINCT query_key), "
            "count(*) FILTER (WHERE correct AND safe) FROM episodes GROUP BY ALL ORDER BY ALL"
        )
        .fetchall()
    )
    assert rows == [(6, "null", 1, 1, 0), (6, "oracle", 1, 1, 1)]
