"""A cell of n queries is taken from a finished cell of more of the same identity, and only
then (pipeline/derive.py), on the fake echo app: no episode played, the rows a fresh run of
n gives, its provenance in every shard; an app without prefix queries, a cost limit, an
unfinished, crashed or differently configured source, and a source's env_error episode
each make the cell play."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline import registry, runner
from pipeline.build import layout
from pipeline.cells import cell_from_config
from pipeline.config import compose
from pipeline.derive import DERIVED_FROM, larger_cells, why_not
from pipeline.generate import generate
from pipeline.records import read_shard, shard_metadata, to_table, write_shard
from pipeline.runner import run
from pipeline.scoring import score
from tests.conftest import echo_config

TIMING = {"latency_s", "agent_s", "exec_s", "tokens_per_s", "code_version"}


@pytest.fixture
def prefix_echo():
    """The echo app (whose query i is the same whatever the count) declaring it."""
    spec = registry.AppSpec(
        "echo", "tests.fakes:EchoApp", "tests.fakes:EchoConfig", "1", levels=(1, 2, 3)
    )
    with registry.APPS.override("echo", dataclasses.replace(spec, prefix_queries=True)):
        yield


def _cell(cfg):
    generate(cfg)
    run(cfg)
    score(cfg)
    return cell_from_config(cfg)


def _rows(cfg, table: str) -> list[dict]:
    rows = read_shard(table, getattr(layout(cfg), table)(cell_from_config(cfg))).to_pylist()
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def _never_played(monkeypatch):
    def play(*args, **kwargs):
        raise AssertionError("an episode was played")

    monkeypatch.setattr(runner, "play", play)


@pytest.mark.usefixtures("prefix_echo")
def test_a_smaller_cell_is_the_larger_ones_first_episodes(tmp_path, monkeypatch):
    big = _cell(echo_config(tmp_path / "a", queries=6))
    small = echo_config(tmp_path / "a", queries=3)
    fresh = echo_config(tmp_path / "b", queries=3)
    _cell(fresh)
    _never_played(monkeypatch)
    cell = _cell(small)
    paths = layout(small)
    for path in (paths.transcripts(cell), paths.episodes(cell), paths.cells(cell)):
        assert shard_metadata(path)[DERIVED_FROM] == big.part
    assert shard_metadata(layout(fresh).episodes(cell)).get(DERIVED_FROM) is None
    for table in ("episodes", "steps", "cells"):
        mine, theirs = _rows(small, table), _rows(fresh, table)
        if table == "cells":  # the config names its data directory
            mine, theirs = ([{**r, "config": ""} for r in rows] for rows in (mine, theirs))
        assert mine == theirs, table
    assert {r["queries"] for r in _rows(small, "episodes")} == {3}


@pytest.mark.usefixtures("echo_app")
def test_an_app_without_prefix_queries_plays_the_cell(tmp_path):
    _cell(echo_config(tmp_path, queries=6))
    small = echo_config(tmp_path, queries=3)
    assert "does not declare prefix queries" in why_not(small)
    cell = _cell(small)
    assert DERIVED_FROM not in shard_metadata(layout(small).transcripts(cell))


@pytest.mark.usefixtures("prefix_echo")
def test_no_finished_source_means_the_cell_is_played(tmp_path, monkeypatch):
    big = echo_config(tmp_path, queries=6)
    generate(big)
    big_cell = cell_from_config(big)
    paths = layout(big)
    # A crashed or still running larger cell: checkpoint chunks only, no transcripts shard.
    paths.partial(big_cell).mkdir(parents=True)
    small = echo_config(tmp_path, queries=3)
    assert [c.queries for c in larger_cells(cell_from_config(small), paths)] == []
    # A finished one of other settings (another hash) is no source either.
    run(big)
    shard = paths.transcripts(big_cell)
    data = read_shard("transcripts", shard)
    write_shard("transcripts", data, shard, config_hash="another config")
    played = []
    real = runner.play
    monkeypatch.setattr(runner, "play", lambda *a, **k: played.append(1) or real(*a, **k))
    cell = _cell(small)
    assert len(played) == 3
    assert DERIVED_FROM not in shard_metadata(paths.transcripts(cell))


@pytest.mark.usefixtures("prefix_echo")
def test_a_source_episode_ended_by_the_environment_is_played_again(tmp_path):
    big = echo_config(tmp_path, queries=6)
    big_cell = _cell(big)
    shard = layout(big).transcripts(big_cell)
    rows = read_shard("transcripts", shard).to_pylist()
    rows[0] |= {"status": "env_error", "error": "lab failed"}
    digest = shard_metadata(shard)["netgauge.config_hash"]
    write_shard("transcripts", to_table("transcripts", rows), shard, config_hash=digest)
    small = echo_config(tmp_path, queries=3)
    cell = _cell(small)
    assert DERIVED_FROM not in shard_metadata(layout(small).transcripts(cell))
    assert {r["outcome"] for r in _rows(small, "episodes")} == {"correct"}


@pytest.mark.usefixtures("prefix_echo")
def test_a_cost_limit_or_a_hostile_folder_name_is_never_a_source(tmp_path):
    args = ["app=malt", "agent=zero_shot", "model=smollm2", f"data_dir={tmp_path}"]
    assert why_not(compose(args)) is None
    assert "cost_limit" in why_not(compose([*args, "model.cost_limit=1"]))
    cfg = echo_config(tmp_path, queries=3)
    cell = cell_from_config(echo_config(tmp_path, queries=3))
    seed = layout(cfg).transcripts(cell).parent.parent.parent
    for name in ("queries=9x", "queries=-9", "queries=٩", "queries=2", "queries=12"):
        (seed / name).mkdir(parents=True)
    assert [c.queries for c in larger_cells(cell, layout(cfg))] == [12]


@pytest.mark.usefixtures("echo_app")
def test_a_cell_played_with_its_config_is_not_played_again(tmp_path, monkeypatch):
    """The DAG reruns a cell's run job when its queries shard grew (a direct run of more
    queries after a sweep): the stage plays nothing, as a direct run would not."""
    cfg = echo_config(tmp_path, queries=3)
    cell = _cell(cfg)
    before = layout(cfg).transcripts(cell).stat().st_mtime_ns
    generate(echo_config(tmp_path, queries=6))  # the shard grows
    _never_played(monkeypatch)
    assert run(cfg) == layout(cfg).transcripts(cell)
    assert layout(cfg).transcripts(cell).stat().st_mtime_ns == before
