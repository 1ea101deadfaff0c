"""The report page: built by `snakemake report` over real MALT cells, opened in Chromium.

The session's smoke sweep (every app, oracle and null, on the real emulators and sandbox)
is copied, then Snakemake runs only the report on it.
Synthetic agents with spread, and a NetLLMBench-style app with a `calls` table, check
the plots that have no real data yet.
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from analysis.report import build_report
from analysis.report.data import collect
from analysis.synthetic import TASKS, write_episodes, write_task_episodes
from pipeline.config import ROOT
from pipeline.plan import read_plan
from pipeline.views import connect
from tests.conftest import require

FIGURES = {
    "intervals",
    "query_count",
    "levels",
    "operations",
    "capability",
    "outcomes",
    "iterations",
    "tokens_per_s",
}
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=10000",
]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


@pytest.fixture(scope="module")
def smoke_report(smoke_sweep, tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("report") / "data"
    shutil.copytree(smoke_sweep[0], data, symlinks=True)
    shutil.rmtree(data / "report")  # the sweep wrote one: this test's Snakemake writes it again
    done = subprocess.run(
        [
            SNAKEMAKE,
            "--cores",
            "2",
            "report",
            "--config",
            "grid=smoke",
            f"data_dir={data}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # The cells exist already: Snakemake plans, summarises and reports, nothing else.
    assert re.search(r"^report\s+1$", done.stdout + done.stderr, re.M)
    assert not re.search(r"^(run|score)\s+\d+$", done.stdout + done.stderr, re.M)
    return data


@pytest.mark.integration
def test_snakemake_report_writes_page_figures_and_tables(smoke_report):
    report = smoke_report / "report"
    page = (report / "index.html").read_text()
    assert {p.stem for p in (report / "figures").glob("*.png")} == FIGURES
    for name in FIGURES:
        assert f'src="figures/{name}.png"' in page
    assert "grid</b>: smoke" in page
    # The smoke grid's netllmbench cells fill NetLLMBench's iterations per task; with
    # reference agents only, its tokens/s panel says so instead of failing.
    assert "No data yet: no episodes of a NetLLMBench configuration app" not in page
    assert page.count("No data yet: no model calls recorded for these apps yet") == 1
    tasks = (report / "tables" / "iterations_per_task.csv").read_text()
    assert "netllmbench,host_ip:1," in tasks and "netllmbench,ping:1," in tasks
    cells = len(read_plan(smoke_report, "smoke"))
    assert (report / "tables" / "cells.csv").read_text().count("\n") == 1 + cells
    log = smoke_report / "logs" / "report" / "smoke.log"
    assert "report figures" in log.read_text()  # the progress bar went to the rule's log


@pytest.mark.integration
def test_report_opens_in_headless_chromium(smoke_report, tmp_path):
    exe = shutil.which("chromium")
    require(exe is not None, "Debian's chromium is missing (scripts/setup.d/40-report.sh)")
    url = (smoke_report / "report" / "index.html").as_uri()

    def chromium(*args: str) -> subprocess.CompletedProcess:
        profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
        return subprocess.run(
            [str(exe), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
            capture_output=True,
            text=True,
            timeout=120,
        )

    dom = chromium("--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    loaded = re.search(r'data-images-loaded="(\d+)/(\d+)"', dom.stdout)
    assert loaded is not None, "the page's load script did not run"
    assert loaded.group(1) == loaded.group(2) == str(len(FIGURES))
    # The leaderboard: one board per (scope, group) of its table, each with its rows.
    with (smoke_report / "report" / "tables" / "leaderboard.csv").open() as f:
        rows = list(csv.DictReader(f))
    boards = {(r["scope"], r["group"]) for r in rows}
    assert ("overall", "all") in boards and ("task", "mitigate") in boards
    section = dom.stdout.split('<h2 id="leaderboard">Leaderboard</h2>', 1)[1]
    section, cost = section.split("<h2>", 1)[0].split("<h3>Cost per cell</h3>")
    assert section.count('<h3 class="board"') == section.count("<tbody>") == len(boards)
    assert section.count("<tr>") == len(rows)  # one per agent (header rows carry a style)
    assert cost.count("<tr>") >= 1 and "usd_per_correct" in cost  # the cost per cell

    shot = tmp_path / "report.png"
    done = chromium("--window-size=1280,3000", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 3000)
    pixels = np.asarray(image.resize((320, 750)), dtype=int).reshape(-1, 3)
    inked = float((pixels.sum(axis=1) < 600).mean())
    assert inked > 0.02, f"the page looks blank ({inked:.1%} of pixels not near-white)"
    assert len(np.unique(pixels, axis=0)) > 50  # text, tables and coloured plots, not flat


def _per_task_expectation(data_dir: Path) -> dict[tuple[str, str], tuple[int, float, float]]:
    """(task, agent) -> (n, mean turns, solved share), counted from the raw steps shards
    in plain Python: the SQL's answer, found without DuckDB."""
    turns: dict[tuple[str, str, str], int] = {}
    solved: dict[tuple[str, str, str], bool] = {}
    for path in (data_dir / "results" / "steps").glob("app=netllmbench/**/*.parquet"):
        for row in pq.read_table(path).to_pylist():
            key = (row["task"], row["agent"], row["query_id"])
            turns[key] = turns.get(key, 0) + 1
            solved[key] = solved.get(key, False) or row["task_solved"]
    out: dict[tuple[str, str], tuple[int, float, float]] = {}
    for task, agent in {(t, a) for t, a, _ in turns}:
        keys = [k for k in turns if k[:2] == (task, agent)]
        out[(task, agent)] = (
            len(keys),
            sum(turns[k] for k in keys) / len(keys),
            sum(solved[k] for k in keys) / len(keys),
        )
    return out


def test_report_with_spread_and_task_app(tmp_path):
    write_episodes(
        tmp_path,
        {("m1", "react"): {1: 0.7, 2: 0.5}, ("m2", "cot"): 0.4, ("none", "oracle"): 1.0},
        app="malt",
        levels=(1, 2),
        queries=60,
    )
    write_task_episodes(
        tmp_path, {("m1", "react"): 0.8, ("none", "oracle"): 1.0}, queries=18, seed=1
    )
    data = collect(connect(tmp_path), study_reps=50, progress=False)
    assert data.task_apps == ["netllmbench"]
    assert data.iterations is not None and data.iterations_missing is None

    # Chained tasks: every query holds all nine, and the react agent needed retries.
    expected = _per_task_expectation(tmp_path)
    assert {task for task, _ in expected} == set(TASKS)
    react = [v for (_, agent), v in expected.items() if agent == "react"]
    assert max(mean for _, mean, _ in react) > 1.3 and min(rate for *_, rate in react) < 1
    got = data.iterations.set_index(["task", "agent"])
    assert len(got) == len(expected) == 2 * len(TASKS)
    for (task, agent), (n, mean, rate) in expected.items():
        row = got.loc[(task, agent)]
        assert row["n"] == n == 18
        assert row["mean_iterations"] == pytest.approx(mean)
        assert row["solved_rate"] == pytest.approx(rate)
    assert (got.xs("oracle", level="agent")["mean_iterations"] == 1.0).all()

    # One row per model call of the react agent (the oracle makes none), with the
    # outcome of the attempt it served.
    shards = (tmp_path / "results" / "calls").glob("app=netllmbench/**/*.parquet")
    calls = sum(pq.read_metadata(path).num_rows for path in shards)
    throughput = data.throughput
    assert throughput is not None and len(throughput) == calls > 18 * len(TASKS)
    assert set(throughput["agent"]) == {"react"}
    assert set(throughput["attempt"]) == {1, 2, 3}
    assert {"solved", "not solved"} <= set(throughput["outcome"])
    assert (throughput.loc[throughput["attempt"] == 3, "outcome"] != "solved").any()
    assert {s.app for s in data.studies} == {"malt", "netllmbench"}
    assert len(data.paired) == 3 + 1  # three malt agents pair up thrice, netllmbench once

    index = build_report(tmp_path, study_reps=50, progress=False)
    page = index.read_text()
    assert "No data yet" not in page
    assert "react · m1" in page and "cot · m2" in page
    assert '<h2 id="leaderboard">Leaderboard</h2>' in page
    assert (index.parent / "tables" / "leaderboard.csv").exists()
    assert (index.parent / "tables" / "call_throughput.csv").exists()


def test_report_of_an_empty_data_dir_is_all_no_data_panels(tmp_path):
    index = build_report(tmp_path, progress=False)
    assert {p.stem for p in (index.parent / "figures").glob("*.png")} == FIGURES
    assert "(nothing to show)" in index.read_text()
