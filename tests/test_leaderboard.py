"""The leaderboard over synthetic shards with the real schema: the composite and its Wilson
interval over distinct queries, the tie-break on turns, rank bands from intervals and from
the paired test, the efficiency columns, the CLI and the report's section."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from statsmodels.stats.proportion import proportion_confint

from analysis import stats
from analysis.__main__ import main as analysis_main
from analysis.leaderboard import Composite, leaderboard
from analysis.report import build_report
from analysis.synthetic import cell_table, write_episodes
from pipeline.cells import Cell, Layout, data_root
from pipeline.errors import ConfigError
from pipeline.records import write_shard
from pipeline.views import connect
from tests.conftest import require
from tests.test_report import CHROMIUM_FLAGS


def _write(data: Path, model: str, agent: str, correct: list[bool], turns: int = 1) -> None:
    """One cell of app `x` whose episodes are correct as given (and all safe); every agent
    plays the same query ids, so they pair up on every query."""
    cell = Cell("x", model, agent, 1, 0, len(correct))
    table = cell_table(cell, 1.0, np.random.default_rng(0), max_turns=turns, tokens=True)
    flags = np.asarray(correct)
    for name, values in (
        ("correct", flags),
        ("score", flags.astype(float)),
        ("outcome", np.where(flags, "correct", "wrong")),
    ):
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), pa.array(values.tolist()))
    write_shard("episodes", table, Layout(data_root(data)).episodes(cell), config_hash="t")


def _raw(data: Path) -> list[dict]:
    return [
        row
        for path in (data / "results" / "episodes").rglob("*.parquet")
        for row in pq.read_table(path).to_pylist()
    ]


def test_composite_is_netarenas_rule_with_a_wilson_interval_over_distinct_queries(tmp_path):
    agents = {("m1", "a"): 0.6, ("m2", "b"): 0.3, ("none", "oracle"): 1.0}
    write_episodes(tmp_path, agents, app="x", levels=(1, 2), queries=80, seed=3)
    board = leaderboard(connect(tmp_path), scopes=["overall"])
    assert list(board["agent"]) == ["oracle", "a", "b"] and list(board["rank"]) == [1, 2, 3]
    rows = _raw(tmp_path)
    for r in board.itertuples():
        mine = [e for e in rows if (e["model"], e["agent"]) == (r.model, r.agent)]
        points = sum(0.5 * e["correct"] + 0.5 * e["safe"] for e in mine)
        assert r.n_distinct == len(mine) == 160  # every query key is distinct here
        assert r.composite_rate == pytest.approx(points / len(mine))
        lo, hi = proportion_confint(points, len(mine), alpha=0.05, method="wilson")
        assert (r.composite_wilson_lo, r.composite_wilson_hi) == pytest.approx((lo, hi))
        solved = [e for e in mine if e["correct"]]
        cost = sum(e["cost_usd"] for e in mine)
        assert r.usd_per_episode == pytest.approx(cost / len(mine))
        assert r.turns_per_episode == pytest.approx(np.mean([e["iterations"] for e in mine]))
        if r.model == "none":  # no model: no tokens, no cost
            assert np.isnan(r.tokens_per_episode) and r.usd_per_correct == 0
        else:
            assert r.usd_per_correct == pytest.approx(cost / len(solved))
            tokens = sum(e["prompt_tokens"] + e["completion_tokens"] for e in mine)
            assert r.tokens_per_correct == pytest.approx(tokens / len(solved))
    # a composite of correctness alone is the correctness rate and its Wilson interval
    alone = leaderboard(connect(tmp_path), composite=Composite.parse("correct=1"))
    assert (alone["composite_rate"] == alone["correct_rate"]).all()
    assert (alone["composite_wilson_lo"] == alone["correct_wilson_lo"]).all()


def test_equal_composites_rank_the_agent_with_fewer_turns_first_in_one_band(tmp_path):
    _write(tmp_path, "m", "slow", [True] * 30, turns=4)
    _write(tmp_path, "m", "fast", [True] * 30, turns=1)
    board = leaderboard(connect(tmp_path), scopes=["app"])
    assert list(board["agent"]) == ["fast", "slow"]
    assert list(board["band"]) == [1, 1]  # nothing tells them apart
    assert board["vs_next"].iloc[0].startswith("overlap; paired tied")


def test_the_paired_test_splits_neighbours_whose_intervals_overlap(tmp_path):
    # b is right on a subset of a's queries: 12 discordant pairs, all for a (exact
    # McNemar p = 2 * 0.5**12), while the composites' Wilson intervals overlap.
    a = [True] * 36 + [False] * 24
    b = [True] * 24 + [False] * 36
    c = [True] * 23 + [False] * 37  # one query less than b: no test can tell them apart
    for agent, correct in (("a", a), ("b", b), ("c", c)):
        _write(tmp_path, "m", agent, correct)
    con = connect(tmp_path)
    board = leaderboard(con, scopes=["app"])
    assert list(board["agent"]) == ["a", "b", "c"]
    top, second = board.iloc[0], board.iloc[1]
    assert top["composite_wilson_lo"] < second["composite_wilson_hi"]  # intervals overlap
    test = stats.paired(con, "x", ("m", "a"), ("m", "b"))
    assert test.mcnemar_p == pytest.approx(2 * 0.5**12) and test.diff_lo > 0
    assert list(board["band"]) == [1, 2, 2]
    assert board["vs_next"].iloc[0] == "overlap; paired apart (McNemar p=0.000488, n=60)"


def test_boards_per_app_and_task_and_bad_composites(tmp_path):
    write_episodes(tmp_path, {("m", "a"): 0.5, ("none", "oracle"): 1.0}, app="p", levels=(1,))
    write_episodes(tmp_path, {("m", "a"): 0.4}, app="q", levels=(1,), queries=30, seed=1)
    board = leaderboard(connect(tmp_path))
    groups = board.groupby(["scope", "group"], sort=False).size()
    assert dict(groups) == {
        ("overall", "all"): 2,
        ("app", "p"): 2,
        ("app", "q"): 1,
        ("task", "mitigate"): 2,
    }
    for text, why in (
        ("correct=0.5,safe=0.6", "sum to 1"),
        ("correct=0.5,speed=0.5", "metric=weight"),
        ("correct", "metric=weight"),
        ("correct=-1,safe=2", "metric=weight"),
    ):
        with pytest.raises(ConfigError, match=why):
            Composite.parse(text)
    with pytest.raises(ConfigError, match="unknown board"):
        leaderboard(connect(tmp_path), scopes=["model"])
    assert leaderboard(connect(tmp_path / "empty")).empty


def test_cli_prints_the_boards_and_refuses_bad_options(tmp_path, capsys):
    write_episodes(tmp_path, {("m", "a"): 0.5, ("none", "oracle"): 1.0}, app="p", levels=(1,))
    assert analysis_main(["--data-dir", str(tmp_path), "leaderboard", "--by", "app"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## app = p  (composite: 0.5·correct + 0.5·safe)")
    assert "USD/correct" in out and "## overall" not in out
    code = analysis_main(["--data-dir", str(tmp_path), "leaderboard", "--composite", "safe=2"])
    assert code == 2 and "must sum to 1" in capsys.readouterr().err
    assert analysis_main(["--data-dir", str(tmp_path), "leaderboard", "--csv"]) == 0
    assert capsys.readouterr().out.startswith("scope,group,rank,band,model,agent,")


@pytest.mark.integration
def test_report_section_renders_every_board_in_headless_chromium(tmp_path):
    exe = shutil.which("chromium")
    require(exe is not None, "Debian's chromium is missing (scripts/setup.d/40-report.sh)")
    agents = {("m1", "react"): 0.6, ("m2", "cot"): 0.4, ("none", "oracle"): 1.0}
    write_episodes(tmp_path, agents, app="malt", levels=(1,), queries=40)
    index = build_report(tmp_path, study_reps=10, progress=False)
    csv = (index.parent / "tables" / "leaderboard.csv").read_text().splitlines()
    assert len(csv) == 1 + 3 * 3  # overall, app malt, task mitigate: three agents each
    dom = subprocess.run(
        [
            exe,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            index.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    section = dom.stdout.split('<h2 id="leaderboard">Leaderboard</h2>', 1)[1]
    section, cost = section.split("<h2>", 1)[0].split("<h3>Cost per cell</h3>")
    assert section.count('<h3 class="board"') == 3
    assert section.count("<tbody>") == 3 and section.count("<tr>") == 9  # 3 agents a board
    assert section.count(">oracle</a>") == 3  # each agent links to its cells' episodes
    assert "USD/correct" in section and "<td>m1</td>" in section and ">react</a>" in section
    assert cost.count("<tr>") == 3 and "usd_per_correct" in cost  # one row per cell


def test_results_from_before_costs_are_upgraded_with_unknown_costs(tmp_path, capsys):
    """A version-5 episodes shard of a layout-3 directory (before cost, trial and cache) is
    upgraded once to version 6 with null costs: the boards show it with unknown money."""
    cell = Cell("x", "m", "a", 1, 0, 10)
    table = cell_table(cell, 0.5, np.random.default_rng(0), tokens=True)
    table = table.drop_columns(["cost_usd", "trial", "trial_of"])
    path = Layout(data_root(tmp_path)).episodes(cell)
    path.parent.mkdir(parents=True)
    meta = {b"netgauge.table": b"episodes", b"netgauge.schema_version": b"5"}
    pq.write_table(table.replace_schema_metadata(meta), path)  # as version 5 wrote it
    (tmp_path / "results" / "layout.json").write_text('{"layout": 3}')
    page = build_report(tmp_path, study_reps=10, progress=False).read_text()
    upgraded = pq.read_table(path)
    assert upgraded.schema.metadata[b"netgauge.schema_version"] == b"6"
    assert upgraded["cost_usd"].null_count == 10 and set(upgraded["trial"].to_pylist()) == {0}
    board = page.split('<h2 id="leaderboard">Leaderboard</h2>', 1)[1].split("<h2", 1)[0]
    assert "No data yet" not in board and board.count('<h3 class="board"') == 3
    assert analysis_main(["--data-dir", str(tmp_path), "leaderboard", "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    header = rows[0].split(",")
    overall = dict(zip(header, rows[1].split(","), strict=True))
    assert overall["usd_per_episode"] == "" and overall["model"] == "m"


def test_repeated_trials_pool_into_one_agent_per_query(tmp_path):
    """Three trials of one cell are one row of the board: every play counts as an episode,
    each query once at the mean of its three plays, and the paired test sees one agent."""
    layout, rng = Layout(data_root(tmp_path)), np.random.default_rng(3)
    plays = []
    for trial, variant in ((0, "base"), (1, "vtrial1"), (2, "vtrial2")):
        cell = Cell("malt", "m1", "react", 1, 0, 20, variant)
        table = cell_table(cell, 0.5, rng, tokens=True)
        for name, value in (
            ("trial", pa.array([trial] * 20, pa.int16())),
            ("trial_of", ["base"] * 20),
        ):
            i = table.schema.get_field_index(name)
            table = table.set_column(
                i, table.schema.field(i), pa.array(value, table.schema.field(i).type)
            )
        write_shard("episodes", table, layout.episodes(cell), config_hash="synthetic")
        plays.append(np.asarray(table["correct"].to_pylist(), dtype=float))
    write_episodes(tmp_path, {("none", "oracle"): 1.0}, app="malt", levels=(1,), queries=20)
    board = leaderboard(connect(tmp_path), scopes=("overall",), resamples=200)
    assert list(board["agent"]) == ["oracle", "react"]
    react = board.iloc[1]
    assert (react["episodes"], react["n_distinct"]) == (60, 20)
    per_query = np.mean(plays, axis=0)  # each query's mean over its three trials
    assert react["correct_rate"] == pytest.approx(per_query.mean())
    assert 0 < per_query.mean() < 1 and "no shared query" not in board.iloc[0]["vs_next"]
