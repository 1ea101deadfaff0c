"""Repeated trials (pipeline/trials.py): the grid axis, each trial's own sampling seed,
the `trial` columns, and pass@k / pass^k (analysis/sql/pass_at_k.sql) against values
worked out by hand. Trials of an LLM agent run on a chat endpoint of our own that records
the seed each request carried."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis.inspect_import import _as_trial
from analysis.questions import ask
from analysis.report import build_report
from pipeline.build import queries_hash, run_hash
from pipeline.config import compose, config_hash
from pipeline.core import canonical_json
from pipeline.datadir import ensure_layout
from pipeline.errors import ConfigError
from pipeline.llm.models import ModelPool
from pipeline.plan import load_plan
from pipeline.run import run_cell
from pipeline.trials import trial_model, trial_seed
from pipeline.variants import section_settings, variant_of
from pipeline.views import connect
from tests.chat_endpoint import chat_endpoint, malt_cell


def test_trial_zero_keeps_the_seed_and_the_others_are_distinct_and_fixed():
    assert trial_seed(7, 0) == 7 and trial_seed(None, 0) is None
    seeds = [trial_seed(7, t) for t in range(1, 50)]
    assert len(set(seeds) | {7}) == 50  # every trial its own seed
    assert seeds == [trial_seed(7, t) for t in range(1, 50)]  # fixed by the config alone
    assert all(0 <= s < 2**31 for s in seeds)
    assert trial_seed(8, 1) != trial_seed(7, 1)
    assert trial_seed(0, 1) == 1_775_942_123  # pinned: a change reseeds every trial
    with pytest.raises(ConfigError, match=r"needs an integer model\.seed"):
        trial_seed(None, 1)


def test_one_trial_is_the_grid_as_it_was():
    """trials: 1 (and no trials key) gives the same cells, ids and paths; trials: 3 adds
    two cells per cell, each its own variant, whose trial 0 is the unchanged cell."""
    axes = {"apps": ["malt"], "agents": ["oracle"], "levels": [1]}
    plain = load_plan("smoke", axes=axes)
    assert [c.part for c in load_plan("smoke", axes={**axes, "trials": 1}).cells] == [
        c.part for c in plain.cells
    ]
    assert [c.variant for c in plain.cells] == ["base"]
    three = load_plan("smoke", axes={**axes, "trials": 3}).cells
    assert len(three) == 3 and plain.cells[0] in three
    extra = [c for c in three if c not in plain.cells]
    assert sorted(c.overrides for c in extra) == [("trial=1",), ("trial=2",)]
    assert len({c.variant for c in three}) == 3
    with pytest.raises(ConfigError, match="trials must be an integer >= 1"):
        load_plan("smoke", axes={**axes, "trials": 0})


def test_a_trial_needs_a_model_seed():
    with pytest.raises(ConfigError, match=r"needs an integer model\.seed"):
        compose(["agent=zero_shot", "model=smollm2", "model.seed=null", "trial=1"])


REPLY = "```python\ndef process_graph(graph):\n    return len(graph.nodes)\n```"


def _cell(data, url, trial):
    return malt_cell(data, url, "model.seed=5", f"trial={trial}")


def test_each_trial_samples_with_its_seed_and_is_kept(tmp_path):
    with chat_endpoint(lambda body: REPLY) as (url, seen):
        run_cell(_cell(tmp_path, url, 0))
        first = {body["seed"] for body in seen}
        run_cell(_cell(tmp_path, url, 2))
        second = {body["seed"] for body in seen} - first
    assert first == {5} and second == {trial_seed(5, 2)}
    rows = (
        connect(tmp_path)
        .execute("SELECT trial, trial_of, variant, count(*) FROM episodes GROUP BY ALL ORDER BY 1")
        .fetchall()
    )
    (t0, of0, v0, n0), (t2, of2, v2, n2) = rows
    assert (t0, t2, n0, n2) == (0, 2, 2, 2)
    assert of0 == of2 == v0 != v2  # trial 2 is a variant of its own, grouped with trial 0


def _episodes(rows: list[tuple[str, str, int, int]]) -> duckdb.DuckDBPyConnection:
    """A view `episodes` of (agent, query, plays, correct plays): play t is trial t, the
    first `correct` plays correct."""
    records = [
        {
            "app": "malt",
            "model": "m",
            "agent": agent,
            "level": 1,
            "seed": 0,
            "queries": 3,
            "variant": f"v{t}",
            "trial": t,
            "trial_of": "base",
            "query_id": query,
            "correct": t < correct,
        }
        for agent, query, plays, correct in rows
        for t in range(plays)
    ]
    con = duckdb.connect()
    con.register("frame", pd.DataFrame(records))
    con.execute("CREATE VIEW episodes AS SELECT * FROM frame")
    return con


def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators():
    # queries with 0, 2 and 4 correct plays of 4; agent b played once: nothing to add
    con = _episodes([("a", "q0", 4, 0), ("a", "q1", 4, 2), ("a", "q2", 4, 4), ("b", "q0", 1, 1)])
    out = ask(con, "pass_at_k")
    assert list(out.agent.unique()) == ["a"] and list(out.k) == [1, 2, 3, 4]
    assert set(out.trials) == {4} and set(out.n_distinct) == {3}
    # q1: pass@2 = 1 - C(2,2)/C(4,2) = 5/6, pass^2 = C(2,2)/C(4,2) = 1/6; q0 0; q2 1
    expected_at = [1.5 / 3, (5 / 6 + 1) / 3, 2 / 3, 2 / 3]
    expected_hat = [1.5 / 3, (1 / 6 + 1) / 3, 1 / 3, 1 / 3]
    assert list(out.pass_at_k) == pytest.approx(expected_at)
    assert list(out.pass_hat_k) == pytest.approx(expected_hat)
    assert (out.pass_at_k_lo <= out.pass_at_k).all() and (out.pass_at_k <= out.pass_at_k_hi).all()
    assert (out.pass_hat_k_lo <= out.pass_hat_k).all()
    assert out.equals(ask(con, "pass_at_k"))  # the bootstrap is seeded


def test_the_interval_is_over_distinct_queries():
    """All-correct and all-wrong queries in equal number: a resample of 40 queries moves
    the mean; with every query alike the interval is a point."""
    mixed = ask(_episodes([("a", f"q{i}", 3, 3 * (i % 2)) for i in range(40)]), "pass_at_k")
    lo, hi = mixed.loc[0, ["pass_at_k_lo", "pass_at_k_hi"]]
    assert 0.3 < lo < 0.5 < hi < 0.7
    alike = ask(_episodes([("a", f"q{i}", 3, 3) for i in range(40)]), "pass_at_k")
    assert set(alike.pass_at_k_lo) == set(alike.pass_at_k_hi) == {1.0}


def _oracle(data, trial):
    return compose(
        ["app=malt", "level=1", "queries=2", "agent=oracle", f"trial={trial}", f"data_dir={data}"]
    )


def test_trial_zero_is_the_cell_as_before():
    """The cell key, variant and run hash of trial 0 are what they were before trials
    existed (the same formula, the same variant names), so no result is redone."""
    for overrides in (
        ["agent=oracle"],
        ["agent=zero_shot", "model=smollm2", "model.temperature=0.7"],
    ):
        cfg = compose(["app=malt", *overrides])
        model = section_settings("model", cfg.model) if cfg.agent.uses_model else None
        before = config_hash(
            queries_hash(cfg), cfg.queries, section_settings("agent", cfg.agent), model
        )
        assert run_hash(cfg) == before
        assert run_hash(compose(["app=malt", *overrides, "trial=1"])) != before
    variant = variant_of(cfg)
    assert (variant.name, variant.trial_of) == ("vb7a86fd4", "vb7a86fd4")  # as before trials
    again = variant_of(compose(["app=malt", *overrides, "trial=1"]))
    assert again.trial_of == "vb7a86fd4" != again.name
    assert again.differences == {"model.temperature": 0.7, "trial": 1}


@pytest.mark.slow  # the report's figures: about 10 s
def test_trials_of_a_cell_in_the_tables_and_the_report(tmp_path):
    """Two trials of a reference agent (which samples nothing): both kept, the same
    verdicts, and the report's pass@k section lists the cell for k = 1 and 2."""
    for trial in (0, 1):
        run_cell(_oracle(tmp_path, trial))
    con = connect(tmp_path)
    rows = con.execute(
        "SELECT trial, query_id, outcome FROM episodes ORDER BY trial, query_id"
    ).fetchall()
    assert [r[0] for r in rows] == [0, 0, 1, 1]
    assert [r[1:] for r in rows[:2]] == [r[1:] for r in rows[2:]]
    page = build_report(tmp_path, progress=False, study_reps=5).read_text()
    section = page.split("Repeated trials (pass@k, pass^k)</h2>")[1].split("<h2>")[0]
    assert section.count("</tr>") == 3  # the header and k = 1, 2
    assert "[100.0, 100.0]" in section


def test_older_shards_get_one_trial_and_no_cache(tmp_path):
    """A layout-3 directory (episodes v5, calls v5) is upgraded once: each episode is
    trial 0 of its own variant, and no call has a cache status."""
    run_cell(_oracle(tmp_path, 0))
    for table, dropped in (("episodes", ("trial", "trial_of")), ("calls", ("cache",))):
        (path,) = (tmp_path / "results" / table).rglob("*.parquet")
        data = pq.read_table(path, partitioning=None)
        meta = {**data.schema.metadata, b"netgauge.schema_version": b"5"}
        old = data.drop_columns(list(dropped)).replace_schema_metadata(meta)
        pq.write_table(old, path)
    (tmp_path / "results" / "layout.json").write_text('{"layout": 3}')
    ensure_layout(tmp_path)
    con = connect(tmp_path)
    assert con.execute("SELECT DISTINCT trial, trial_of, variant FROM episodes").fetchall() == [
        (0, "base", "base")
    ]
    assert "cache" in [c for (c, *_) in con.execute("DESCRIBE calls").fetchall()]
    assert json.loads((tmp_path / "results" / "layout.json").read_text())["upgraded_shards"] == 2


def test_trials_of_one_model_job_share_its_client_and_send_their_own_seed(tmp_path):
    """A model job plays every cell of its model through one pool: each trial's sampling
    is a backend of its own on the model's one client (one endpoint, one server)."""
    with chat_endpoint(lambda body: "ok") as (url, seen), ModelPool(tmp_path) as pool:
        cfgs = [
            trial_model(compose(["agent=zero_shot", "model=smollm2", f"trial={t}",
                                 "model.endpoint=external", f"model.base_url={url}"]))
            for t in (0, 1, 2)
        ]  # fmt: skip
        backends = [pool.backend(cfg) for cfg in cfgs]
        assert pool.backend(cfgs[1]) is backends[1]
        for backend in backends:
            backend.chat([{"role": "user", "content": "hi"}])
        assert len({id(b.client()) for b in backends}) == 1
    assert [body["seed"] for body in seen] == [0, trial_seed(0, 1), trial_seed(0, 2)]


def test_an_inspect_epoch_imports_as_the_trial_a_grid_plays():
    """Epoch 2 of an Inspect log becomes trial 1 of its cell: the variant, label and
    differences a grid's `trial=1` of the same cell has, grouped under trial 0's variant."""
    overrides = ["app=malt", "level=1", "queries=2", "agent=oracle", "app.max_turns=3"]
    first, second = variant_of(compose(overrides)), variant_of(compose([*overrides, "trial=1"]))
    row = {"variant": first.name, "trial": 0, "trial_of": first.name}
    records = {
        "episode": row,
        "steps": [{"variant": first.name, "turn": 1}],
        "calls": [],
        "cell": {
            "variant": first.name,
            "variant_label": first.label,
            "differences": canonical_json(first.differences),
        },
    }
    assert _as_trial(records, 1, "test") is records
    again = _as_trial(records, 2, "test")
    assert again["episode"] == {"variant": second.name, "trial": 1, "trial_of": first.name}
    assert again["steps"] == [{"variant": second.name, "turn": 1}]
    assert again["cell"]["variant_label"] == second.label == "app.max_turns=3 trial=1"
    assert json.loads(again["cell"]["differences"]) == second.differences
    assert records["episode"]["variant"] == first.name != second.name  # the input is kept
