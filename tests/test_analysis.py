"""DuckDB views and the summary's 95 % intervals."""

from __future__ import annotations

import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from analysis.__main__ import main as analysis_main
from analysis.stats import intervals
from analysis.summary import summary
from pipeline.build import layout
from pipeline.cells import cell_from_config
from pipeline.generate import generate
from pipeline.runner import run
from pipeline.scoring import score
from pipeline.views import connect
from tests.conftest import echo_config


def test_empty_data_dir_has_empty_views(tmp_path):
    con = connect(tmp_path)
    assert con.execute("SELECT count(*) FROM episodes").fetchone() == (0,)
    assert summary(tmp_path).empty


def test_wilson_stays_inside_at_the_extremes():
    table = intervals(pd.Series([0, 20, 7]), pd.Series([20, 20, 20]), "correct")
    assert table["correct_rate"].tolist() == [0.0, 1.0, 0.35]
    # The normal interval collapses at 0 % and 100 %; Wilson's does not.
    assert table["correct_normal_lo"][0] == table["correct_normal_hi"][0] == 0.0
    assert table["correct_wilson_hi"][0] > 0.1
    assert table["correct_wilson_lo"][1] < 0.9
    low, high = proportion_confint(7, 20, alpha=0.05, method="wilson")
    assert table["correct_wilson_lo"][2] == pytest.approx(low)
    assert table["correct_wilson_hi"][2] == pytest.approx(high)


@pytest.mark.usefixtures("echo_app")
def test_summary_and_sql_over_scored_cells(tmp_path, capsys):
    for agent in ("oracle", "null"):
        cfg = echo_config(tmp_path, agent=agent, queries=8)
        generate(cfg)
        run(cfg)
        score(cfg)
    table = summary(tmp_path).set_index("agent")
    assert table.loc["oracle", "n"] == 8 and table.loc["oracle", "correct_rate"] == 1.0
    assert table.loc["null", "correct_rate"] == 0.0
    assert table.loc["null", "outcomes"] == "parse_error"
    only = summary(tmp_path, [cell_from_config(cfg)])
    assert only["agent"].tolist() == ["null"]
    assert layout(cfg).episodes(cell_from_config(cfg)).exists()

    code = analysis_main(
        [
            "--data-dir",
            str(tmp_path),
            "sql",
            "SELECT agent, count(*) AS n FROM episodes GROUP BY agent ORDER BY agent",
            "--csv",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.splitlines() == ["agent,n", "null,8", "oracle,8"]

    # an empty answer says why: here, nothing was played as repeated trials, and the
    # agents asked for played no query in common (the other app has none)
    assert analysis_main(["--data-dir", str(tmp_path), "ask", "pass_at_k"]) == 0
    assert capsys.readouterr().out.strip() == (
        "no rows: no cell was played as repeated trials (a grid's `trials: k` with k of at least 2)"
    )
    pair = ["-p", "app=nope", "-p", "model_a=none", "-p", "agent_a=oracle"]
    pair += ["-p", "model_b=none", "-p", "agent_b=null"]
    assert analysis_main(["--data-dir", str(tmp_path), "ask", "paired_outcomes", *pair]) == 0
    assert capsys.readouterr().out.startswith("no rows: the two agents share no query")
    assert analysis_main(["--data-dir", str(tmp_path), "ask", "interval_overlap"]) == 2
    assert "the caller registers" in capsys.readouterr().err


def test_bad_sql_is_a_clear_error(tmp_path, capsys):
    assert analysis_main(["--data-dir", str(tmp_path), "sql", "SELEKT 1"]) == 2
    assert "error:" in capsys.readouterr().err
