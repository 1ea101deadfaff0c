"""Statistics over synthetic shards with the real schema: intervals, overlap, paired tests,
the query-count study, and graceful degradation when a table or column is missing."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from analysis import stats
from analysis.__main__ import main as analysis_main
from analysis.questions import MissingData, ask, ask_or_none, names, question
from analysis.study import query_count_study
from analysis.summary import summary
from analysis.synthetic import write_episodes
from pipeline.cells import Cell
from pipeline.errors import ConfigError, DataError
from pipeline.views import columns, connect, has_table

AGENTS = {("m1", "weak"): 0.55, ("m1", "strong"): 0.65, ("none", "oracle"): 1.0}


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    data = tmp_path_factory.mktemp("synth")
    cells = write_episodes(data, AGENTS, app="synth", levels=(1, 2), queries=1500, seed=7)
    return data, cells


def test_every_sql_file_states_its_question_and_needs():
    assert {
        "cell_metrics",
        "agent_rates",
        "interval_overlap",
        "by_operation",
        "paired_outcomes",
        "query_outcomes",
        "iterations_per_task",
        "call_throughput",
    } <= set(names())
    for name in names():
        q = question(name)
        assert q.text.endswith(".") and q.requires, name


def test_cell_metrics_match_counts_and_statsmodels(synth):
    data, _ = synth
    con = connect(data)
    cells = stats.cell_metrics(con)
    assert len(cells) == 3 * 2 and (cells["n"] == 1500).all()
    row = cells[(cells["agent"] == "weak") & (cells["level"] == 1)].iloc[0]
    truth = con.execute(
        "SELECT sum(correct::INT), avg(iterations) FROM episodes WHERE agent='weak' AND level=1"
    ).fetchone()
    assert row["n_correct"] == truth[0] and row["mean_turns"] == truth[1]
    low, high = proportion_confint(truth[0], 1500, alpha=0.05, method="wilson")
    assert (row["correct_wilson_lo"], row["correct_wilson_hi"]) == pytest.approx((low, high))
    assert 0.5 < row["correct_rate"] < 0.6
    # tokens/s exists for model agents, is NULL for reference agents
    assert row["tokens_per_s"] > 0
    assert cells[cells["agent"] == "oracle"]["tokens_per_s"].isna().all()


def test_overlap_definition_on_hand_made_intervals():
    con = duckdb.connect()
    table = pd.DataFrame(
        {
            "grp": [0, 0, 0, 0],
            "app": ["a"] * 4,
            "model": ["none"] * 4,
            "agent": ["p", "q", "r", "s"],
            "lo": [0.2, 0.3, 0.7, 0.25],
            "hi": [0.4, 0.6, 0.9, 0.25],  # s is a point inside p and q
        }
    )
    out = stats.interval_overlap(con, table).set_index(["agent_a", "agent_b"])["overlap"]
    assert out[("p", "q")] == pytest.approx(0.1 / 0.2)  # half of the narrower (p) covered
    assert out[("p", "r")] == 0.0 and out[("q", "r")] == 0.0
    assert out[("p", "s")] == 1.0 and out[("r", "s")] == 0.0


def test_agents_overlap_and_paired_test_agree_with_statsmodels(synth):
    data, _ = synth
    con = connect(data)
    overlap = stats.agent_overlap(con).set_index(["agent_a", "agent_b"])
    # 3000 queries each: a 10-point gap is well outside the intervals
    assert overlap.loc[("strong", "weak"), "overlap"] == 0.0
    result = stats.paired(con, "synth", ("m1", "strong"), ("m1", "weak"))
    assert (
        result.n == 3000
        and result.both_correct + result.neither + result.only_a + result.only_b == 3000
    )
    expected = mcnemar(
        [[result.both_correct, result.only_a], [result.only_b, result.neither]],
        exact=False,
        correction=True,
    )
    assert result.mcnemar_p == pytest.approx(expected.pvalue) and result.mcnemar_p < 1e-6
    assert result.diff_lo < result.diff < result.diff_hi and result.diff_lo > 0
    table = stats.all_pairs(con)
    assert len(table) == 3 and set(table["app"]) == {"synth"}


def test_paired_test_on_few_queries_is_exact_and_seeded(tmp_path):
    write_episodes(tmp_path, {("m", "a"): 0.5, ("m", "b"): 0.5}, app="x", levels=(1,), queries=30)
    con = connect(tmp_path)
    first = stats.paired(con, "x", ("m", "a"), ("m", "b"), seed=3)
    assert first.exact and 0 < first.mcnemar_p <= 1
    assert stats.paired(con, "x", ("m", "a"), ("m", "b"), seed=3) == first
    cells = [Cell("x", "m", "a", 1, 0, 30)]  # b is not in these cells: no shared query
    empty = stats.paired(con, "x", ("m", "a"), ("m", "b"), cells)
    assert empty.n == 0 and np.isnan(empty.mcnemar_p)


def test_query_count_study_overlap_vanishes_as_queries_grow(synth):
    data, _ = synth
    con = connect(data)
    study = query_count_study(
        con,
        "synth",
        agents=[("m1", "weak"), ("m1", "strong")],
        sizes=(50, 500, 3000, 10**6),
        reps=100,
        progress=False,
    )
    assert study.queries == 3000
    assert sorted(study.per_agent["queries"].unique()) == [50, 500, 3000]  # 10**6 dropped
    pair = study.pairs.set_index("queries")
    assert pair.loc[50, "mean_overlap"] > 0.5 and pair.loc[50, "share_overlapping"] > 0.9
    assert pair.loc[3000, "mean_overlap"] == 0.0
    widths = study.per_agent.groupby("queries")["width"].mean()
    assert widths[50] > widths[500] > widths[3000]
    again = query_count_study(
        con,
        "synth",
        agents=[("m1", "weak"), ("m1", "strong")],
        sizes=(50, 500, 3000),
        reps=100,
        progress=False,
    )
    pd.testing.assert_frame_equal(again.pairs, study.pairs)  # seeded: same subsets
    with pytest.raises(DataError, match="no episodes of app 'nope'"):
        query_count_study(con, "nope", progress=False)


def test_missing_tables_and_columns_degrade_to_a_reason(tmp_path):
    write_episodes(tmp_path, {("m", "a"): 0.5}, app="x", levels=(1,), queries=10)
    con = connect(tmp_path)
    assert has_table(con, "episodes") and not has_table(con, "intervals")
    frame, reason = ask_or_none(con, "interval_overlap")
    assert frame is None and reason == "interval_overlap: no 'intervals' table yet"
    # Shards written before a column existed: the question says which column is missing.
    old = tmp_path / "old"
    part = old / "results" / "episodes" / "app=y" / "part-0.parquet"
    part.parent.mkdir(parents=True)
    pq.write_table(pa.table({"query_id": ["q"], "correct": [True]}), part)
    old_con = connect(old)
    assert "operation" not in columns(old_con, "episodes")
    with pytest.raises(MissingData, match=r"'episodes' has no column.*operation"):
        ask(old_con, "by_operation")
    # A results folder the code has no schema for still becomes a view.
    extra = tmp_path / "results" / "faults" / "app=x" / "part-0.parquet"
    extra.parent.mkdir(parents=True)
    pq.write_table(pa.table({"fault": ["link_down"]}), extra)
    assert connect(tmp_path).execute("SELECT fault FROM faults").fetchall() == [("link_down",)]


def test_ask_checks_parameters(tmp_path):
    con = connect(tmp_path)
    with pytest.raises(ConfigError, match="missing: agent_a"):
        ask(con, "paired_outcomes", {"app": "x", "model_a": "m", "model_b": "m", "agent_b": "b"})
    with pytest.raises(ConfigError, match="no SQL question 'nope'"):
        question("nope")


def test_cli_lists_and_asks_questions(synth, capsys):
    data, _ = synth
    assert analysis_main(["questions"]) == 0
    assert "paired_outcomes: Two agents on the same queries" in capsys.readouterr().out
    args = ["--data-dir", str(data), "ask", "agent_rates", "--csv"]
    assert analysis_main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "app,model,agent,task,n,n_distinct,n_correct,n_safe" and len(lines) == 4
    assert analysis_main(["--data-dir", str(data), "ask", "paired_outcomes", "-p", "app"]) == 2
    assert "expected key=value" in capsys.readouterr().err


def test_summary_of_many_rows_counts_every_row(tmp_path):
    """100,000 rows over 40 cells; how fast (1,000,000 rows) is `make bench`'s figure."""
    agents = {(f"m{i}", "agent"): 0.1 * i for i in range(1, 6)}
    write_episodes(tmp_path, agents, app="x", levels=(1, 2, 3, 4), seeds=(0, 1), queries=2500)
    table = summary(tmp_path)
    assert table["n"].sum() == 100_000 and len(table) == 5 * 4


def test_a_query_played_more_than_once_counts_once(tmp_path):
    """40 episodes over 10 distinct queries (each played 4 times, e.g. allow_repeats):
    rates and intervals are over the 10, so the interval is as wide as 10 draws give,
    not as narrow as 40; the query-count study sees 10 queries."""
    (cell,) = write_episodes(tmp_path, {("none", "oracle"): 0.5}, levels=(1,), queries=40)
    (path,) = (tmp_path / "results" / "episodes").rglob("*.parquet")
    table = pq.read_table(path, partitioning=None)
    keys = [f"{i % 10:016x}" for i in range(40)]
    correct = [i % 10 < 3 for i in range(40)]  # queries 0-2 solved, every time
    for name, values in (("query_key", keys), ("correct", correct)):
        index = table.schema.get_field_index(name)
        table = table.set_column(index, name, pa.array(values, table.schema.field(name).type))
    pq.write_table(table, path)
    con = connect(tmp_path)
    (row,) = stats.cell_metrics(con).to_dict("records")
    assert (row["n"], row["n_distinct"], row["n_correct"]) == (40, 10, 3)
    low, high = proportion_confint(3, 10, alpha=0.05, method="wilson")
    assert (row["correct_wilson_lo"], row["correct_wilson_hi"]) == pytest.approx((low, high))
    naive_low, naive_high = proportion_confint(12, 40, alpha=0.05, method="wilson")
    assert high - low > naive_high - naive_low
    study = query_count_study(con, cell.app, sizes=(5, 10, 40), reps=10, progress=False)
    assert study.queries == 10
