"""The run and score stages on a fake app: resume, env errors, verdict rows."""

from __future__ import annotations

import pytest

from pipeline import runner
from pipeline.build import layout
from pipeline.cells import cell_from_config
from pipeline.generate import generate
from pipeline.records import read_shard, to_table, write_shard
from pipeline.runner import CellFailed, run
from pipeline.scoring import score
from tests.conftest import echo_config


def _episodes(cfg):
    return read_shard("episodes", layout(cfg).episodes(cell_from_config(cfg))).to_pylist()


@pytest.mark.usefixtures("echo_app")
def test_oracle_correct_null_parse_error(tmp_path):
    for agent, outcome in (("oracle", "correct"), ("null", "parse_error")):
        cfg = echo_config(tmp_path, agent=agent)
        generate(cfg)
        run(cfg)
        score(cfg)
        rows = _episodes(cfg)
        assert len(rows) == 6
        assert {r["outcome"] for r in rows} == {outcome}
        assert all(r["correct"] is (agent == "oracle") for r in rows)
        assert all(r["iterations"] == 1 and r["model"] == "none" for r in rows)
        steps = read_shard("steps", layout(cfg).steps(cell_from_config(cfg))).to_pylist()
        assert [s["query_id"] for s in steps] == [r["query_id"] for r in rows]


@pytest.mark.usefixtures("echo_app")
def test_killed_run_resumes_without_loss_or_duplicates(tmp_path, monkeypatch):
    cfg = echo_config(tmp_path, queries=6)
    cfg.run.flush_every_s = 0.0  # checkpoint after every episode
    generate(cfg)
    played = []
    real_play = runner.play

    def dying_play(env, agent, query, cell, app=None):
        if len(played) == 4:
            raise KeyboardInterrupt  # what Ctrl-C does mid-run
        played.append(query.query_id)
        return real_play(env, agent, query, cell, app)

    monkeypatch.setattr(runner, "play", dying_play)
    with pytest.raises(KeyboardInterrupt):
        run(cfg)
    cell = cell_from_config(cfg)
    assert not layout(cfg).transcripts(cell).exists()
    assert len(list(layout(cfg).partial(cell).glob("chunk-*.parquet"))) == 4

    resumed = []
    monkeypatch.setattr(
        runner,
        "play",
        lambda env, agent, q, c, app=None: (
            resumed.append(q.query_id) or real_play(env, agent, q, c, app)
        ),
    )
    run(cfg)
    assert len(resumed) == 2 and not set(resumed) & set(played)
    table = read_shard("transcripts", layout(cfg).transcripts(cell))
    ids = table.column("query_id").to_pylist()
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 6
    assert not layout(cfg).partial(cell).exists()


@pytest.mark.usefixtures("echo_app")
def test_env_error_fails_cell_keeps_rows_and_rerun_retries(tmp_path):
    cfg = echo_config(tmp_path, fail_on=[2])
    generate(cfg)
    with pytest.raises(CellFailed, match=r"1 episode\(s\).*emulator crashed on query 2"):
        run(cfg)
    cell = cell_from_config(cfg)
    kept = read_shard("transcripts", next(layout(cfg).partial(cell).glob("chunk-*")))
    assert len(kept) == 5
    cfg.app.fail_on = []  # the emulator is fixed; the rerun plays only the failed query
    run(cfg)
    assert len(read_shard("transcripts", layout(cfg).transcripts(cell))) == 6


@pytest.mark.usefixtures("echo_app")
def test_env_error_recorded_as_outcome_when_asked(tmp_path):
    cfg = echo_config(tmp_path, fail_on=[1, 3])
    cfg.run.env_error_policy = "record"
    generate(cfg)
    run(cfg)
    score(cfg)
    rows = {r["query_id"]: r for r in _episodes(cfg)}
    failed = [r for r in rows.values() if r["outcome"] == "env_error"]
    assert len(failed) == 2
    assert all("emulator crashed" in r["error"] and not r["correct"] for r in failed)


@pytest.mark.usefixtures("echo_app")
def test_changed_config_discards_stale_checkpoint(tmp_path):
    cfg = echo_config(tmp_path)
    cfg.run.flush_every_s = 0.0
    generate(cfg)
    cell = cell_from_config(cfg)
    folder = layout(cfg).partial(cell)
    stale = [
        dict.fromkeys(("reply", "action", "output", "evidence"), "")
        | {
            "query_id": "echo-L1-s0-00000",
            "app": "echo",
            "model": "none",
            "agent": "oracle",
            "level": 1,
            "seed": 0,
            "queries": 6,
            "variant": "base",
            "turn": 1,
            "status": "ok",
            "error": None,
            "exec_s": 0.0,
            "agent_s": 0.0,
            "prompt_tokens": None,
            "completion_tokens": None,
            "calls": "[]",
            "answer": None,
            "bytes_out": 0,
            "diagnostics": 0,
            "diagnostic_bytes": 0,
            "turn_budget": 3,
            "read_budget": None,
        }
    ]
    # A chunk from another config (a wrong answer to query 0) must not be reused.
    stale[0]["evidence"] = '{"answer": -1}'
    write_shard(
        "transcripts",
        to_table("transcripts", stale),
        folder / "chunk-00000.parquet",
        config_hash="old-hash",
    )
    run(cfg)
    score(cfg)
    assert all(r["correct"] for r in _episodes(cfg))


def test_one_cell_cannot_be_run_twice_at_once(tmp_path):
    busy = r"being run by another process \(pid \d+\)"
    with (
        runner.Checkpoint(tmp_path / "cell", "h"),
        pytest.raises(CellFailed, match=busy),
        runner.Checkpoint(tmp_path / "cell", "h"),
    ):
        pass
    with runner.Checkpoint(tmp_path / "cell", "h"):  # released on exit
        pass
