"""Results never overwrite each other: multiruns over the query count and over any result
setting leave every variant's rows, and a rerun redoes nothing (real MALT sandbox, real
k8s cluster, real Snakemake)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cells import Cell, Layout
from pipeline.config import ROOT
from pipeline.derive import DERIVED_FROM
from pipeline.records import shard_metadata
from pipeline.views import connect
from tests.conftest import SLOTS, SNAKEMAKE, require_root

pytestmark = pytest.mark.integration


def multirun(data: Path, *overrides: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.run", "-m", *overrides, f"data_dir={data}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def shard_times(data: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in (data / "results").rglob("*.parquet")}


def test_multirun_over_the_query_count_keeps_both_cells(tmp_path):
    multirun(tmp_path, "app=malt", "agent=oracle,null", "level=1", "queries=5,10")
    rows = (
        connect(tmp_path)
        .execute(
            "SELECT agent, queries, count(*), count(DISTINCT query_key) FROM episodes "
            "GROUP BY ALL ORDER BY ALL"
        )
        .fetchall()
    )
    assert rows == [
        ("null", 5, 5, 5),
        ("null", 10, 10, 10),
        ("oracle", 5, 5, 5),
        ("oracle", 10, 10, 10),
    ]
    # One queries shard serves both counts; the 5-query cell plays its first five.
    con = connect(tmp_path)
    assert con.execute("SELECT count(*) FROM queries").fetchone() == (10,)
    ids = "SELECT query_id FROM episodes WHERE queries = $n AND agent = 'oracle'"
    five = {r[0] for r in con.execute(ids, {"n": 5}).fetchall()}
    ten = {r[0] for r in con.execute(ids, {"n": 10}).fetchall()}
    assert len(five) == 5 and five < ten
    before = shard_times(tmp_path)
    again = multirun(tmp_path, "app=malt", "agent=oracle,null", "level=1", "queries=10,5")
    assert shard_times(tmp_path) == before  # nothing rewritten
    assert "run app=" not in again.stderr and "score app=" not in again.stderr


def test_multirun_over_max_turns_keeps_both_variants(tmp_path):
    require_root("the k8s app needs root")
    multirun(tmp_path, "app=k8s", "agent=oracle", "level=1", "queries=3", "app.max_turns=3,null")
    con = connect(tmp_path)
    rows = con.execute(
        "SELECT e.variant, c.variant_label, count(*), bool_and(e.correct) FROM episodes e "
        "JOIN cells c USING (app, model, agent, level, seed, queries, variant) GROUP BY ALL "
        "ORDER BY ALL"
    ).fetchall()
    # null is what conf/app/k8s.yaml says (each level's own budget): that cell is the base one.
    assert sorted((label, n, ok) for _, label, n, ok in rows) == [
        ("app.max_turns=3", 3, True),
        ("as configured", 3, True),
    ]
    # The config that produced every row is in the results.
    configs = con.execute("SELECT variant, config FROM cells").fetchall()
    assert {'"max_turns":3' in config for _, config in configs} == {True, False}
    before = shard_times(tmp_path)
    multirun(tmp_path, "app=k8s", "agent=oracle", "level=1", "queries=3", "app.max_turns=null,3")
    assert shard_times(tmp_path) == before


def test_sweep_with_a_query_count_axis_from_the_command_line(tmp_path):
    config = ["grid=smoke", "apps=[malt]", "levels=[1,2]", "queries=[5,10]", f"data_dir={tmp_path}"]
    done = subprocess.run(
        [SNAKEMAKE, "--cores", SLOTS, "sweep", "--config", *config],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    rows = (
        connect(tmp_path)
        .execute(
            "SELECT app, queries, count(*), avg(correct::INT) FILTER (WHERE agent = 'oracle') "
            "FROM episodes GROUP BY ALL ORDER BY ALL"
        )
        .fetchall()
    )
    assert rows == [("malt", 5, 20, 1.0), ("malt", 10, 40, 1.0)]
    # Each level generated once, at the larger count.
    generated = list((tmp_path / "logs" / "generate").glob("*.log"))
    assert len(generated) == 2
    summary = next((tmp_path / "summaries").glob("smoke+*.md")).read_text()
    assert " queries " in summary and " distinct " in summary
    rerun = subprocess.run(
        [SNAKEMAKE, "--cores", SLOTS, "-n", "sweep", "--config", *config],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Nothing to be done" in rerun.stdout + rerun.stderr


def _dag_cells(data: Path, *cells: Cell) -> str:
    """Make the DAG bring these cells of the smoke grid (malt, level 1, 2 queries) up to
    date; return Snakemake's console."""
    axes = ["grid=smoke", "apps=[malt]", "agents=[oracle,null]", "levels=[1]", "queries=[2]"]
    targets = [str(Layout(data).episodes(cell)) for cell in cells]
    done = subprocess.run(
        [SNAKEMAKE, "--cores", SLOTS, *targets, "--config", *axes, f"data_dir={data}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stderr


def _log(data: Path, stage: str, part: str) -> str:
    return (data / "logs" / stage / (part.replace("/", "_") + ".log")).read_text()


def test_a_direct_run_then_the_dags_cells_redo_nothing(tmp_path):
    """The DAG's oracle and null cells of 2 queries; a direct run of 4 oracle queries (the
    queries shard grows); the oracle cell of 2's results removed; the DAG again: no query
    generated, no episode played, the null cell left as it was and the oracle cell derived
    from the direct run's (pipeline/derive.py), its rows those it had when played."""
    oracle, null = (Cell("malt", "none", agent, 1, 0, 2) for agent in ("oracle", "null"))
    _dag_cells(tmp_path, oracle, null)
    played = connect(tmp_path).execute(f"SELECT {_NOT_TIMING} FROM episodes").fetchall()
    kept = Layout(tmp_path).transcripts(null).read_bytes()
    multirun(tmp_path, "app=malt", "agent=oracle", "level=1", "queries=4")
    for table in ("transcripts", "episodes", "steps", "calls", "cells"):
        getattr(Layout(tmp_path), table)(oracle).unlink()
    console = _dag_cells(tmp_path, oracle, null)  # the generate job's count changed: 2 -> 4
    assert "(Rule: generate)" in console
    generated = _log(tmp_path, "generate", oracle.query_part)
    assert "already holds 4 >= 4 queries" in generated and "wrote" not in generated
    assert "transcripts up to date, none played" in _log(tmp_path, "run", null.part)
    assert Layout(tmp_path).transcripts(null).read_bytes() == kept
    taken = _log(tmp_path, "run", oracle.part)
    assert f"run {oracle.part}" not in taken  # the episode bar of a played cell
    assert f"taken from {oracle.part.replace('=2/', '=4/')}, none played" in taken
    target = Layout(tmp_path).episodes(oracle)
    assert shard_metadata(target)[DERIVED_FROM].endswith("/queries=4/variant=base")
    again = connect(tmp_path).execute(f"SELECT {_NOT_TIMING} FROM episodes WHERE queries = 2")
    assert len(played) == 4 and sorted(again.fetchall()) == sorted(played)


_NOT_TIMING = "* EXCLUDE (latency_s, agent_s, tokens_per_s, code_version)"
