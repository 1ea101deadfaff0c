"""Task kinds in configs, grids and records: `app.task` checked against what an app offers,
the grid's `tasks:` axis expanding to one variant per task (and refusing a task an app
does not offer), and shards written before the task columns upgraded without a loss."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import registry
from pipeline.config import ROOT, compose
from pipeline.datadir import LAYOUT, ensure_layout, layout_version
from pipeline.errors import ConfigError
from pipeline.plan import load_plan
from pipeline.records import SCHEMA_VERSIONS, SCHEMAS, read_shard

PLUGINS = ROOT / "tests" / "plugins"


@pytest.fixture
def toynet(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(registry.APP_PATH_ENV, str(PLUGINS))
    registry.APPS.refresh()
    yield PLUGINS
    monkeypatch.delenv(registry.APP_PATH_ENV)
    registry.APPS.refresh()


@pytest.mark.usefixtures("toynet")
def test_the_task_is_checked_against_what_the_app_offers() -> None:
    assert compose(["app=toynet", "app.task=localize"]).app.task == "localize"
    with pytest.raises(ConfigError, match=r"app.task=triage is not offered by app kind 'toynet'; "
                       r"choose one of: mitigate, detect, localize"):  # fmt: skip
        compose(["app=toynet", "app.task=triage"])
    with pytest.raises(ConfigError, match=r"app.task=detect is not offered by app 'malt': it "
                       r"has no task setting and offers only mitigate"):  # fmt: skip
        compose(["app=malt", "app.task=detect"])


@pytest.mark.usefixtures("toynet")
def test_the_tasks_axis_makes_one_variant_per_task(tmp_path: Path) -> None:
    plan = load_plan("toynet_tasks", tmp_path)
    tasks = {}
    for cell in plan.cells:
        tasks.setdefault(cell.variant, set()).update(cell.overrides)
    assert sorted(map(sorted, tasks.values())) == [
        ["app.task=detect"], ["app.task=localize"], ["app.task=mitigate"]
    ]  # fmt: skip
    assert "base" in tasks  # mitigate is what toynet.yaml says: no variant of its own
    assert len(plan.cells) == 3 * 2  # three tasks, oracle and null


@pytest.mark.usefixtures("toynet")
def test_a_task_an_app_does_not_offer_is_refused_unless_excluded(tmp_path: Path) -> None:
    axes = {"apps": ["toynet", "malt"], "tasks": ["mitigate", "detect"], "levels": [1]}
    refused = r"app malt does not offer task detect; it offers mitigate \(or leave the pair out"
    with pytest.raises(ConfigError, match=refused):
        load_plan("toynet_tasks", tmp_path, axes=axes)
    with pytest.raises(ConfigError, match=r"tasks holds 'triage'; choose from: mitigate, detect"):
        load_plan("toynet_tasks", tmp_path, axes={"tasks": ["triage"]})


def test_exclude_entries_may_name_a_task(tmp_path: Path, toynet: Path) -> None:
    from tests.test_app_plugin import TOY_APP, TOY_CONFIG, TOY_INIT

    grid = (toynet / "conf/grid/toynet_tasks.yaml").read_text()
    extra = tmp_path / "extra"
    (extra / "toy").mkdir(parents=True)
    (extra / "toy" / "__init__.py").write_text(TOY_INIT)
    (extra / "toy" / "app.py").write_text(TOY_APP)
    (extra / "conf" / "app").mkdir(parents=True)
    (extra / "conf" / "app" / "toy.yaml").write_text(TOY_CONFIG)
    (extra / "conf" / "grid").mkdir(parents=True)
    (extra / "conf" / "grid" / "mixed.yaml").write_text(
        grid.replace("toynet_tasks", "mixed").replace("apps: [toynet]", "apps: [toynet, toy]")
        + "exclude: [{app: toy, task: detect}, {app: toy, task: localize}, "
        "{app: toynet, task: mitigate}]\n"
    )
    os.environ[registry.APP_PATH_ENV] = f"{toynet}{os.pathsep}{extra}"
    registry.APPS.refresh()
    plan = load_plan("mixed", tmp_path / "data")
    assert {(c.app, c.overrides) for c in plan.cells} == {
        ("toy", ()), ("toynet", ("app.task=detect",)), ("toynet", ("app.task=localize",))
    }  # fmt: skip


# -- shards written before the task columns -----------------------------------------------

_OLD_VERSIONS = {"queries": "3", "episodes": "4", "steps": "3", "transcripts": "2"}
_ADDED = {
    "queries": {"task", "stratum"},
    "episodes": {
        "task",
        "score",
        "answer",
        "commands",
        "blocked",
        "bytes_read",
        "diagnostics",
        "turn_budget",
        "read_budget",
    },
    "steps": {"bytes_out"},
    "transcripts": {
        "answer",
        "bytes_out",
        "diagnostics",
        "diagnostic_bytes",
        "turn_budget",
        "read_budget",
    },
}


def _old(path: Path, table: str, rows: list[dict]) -> None:
    """A shard as the code before the task columns wrote it."""
    fields = [f for f in SCHEMAS[table] if f.name not in _ADDED[table]]
    columns = {f.name: [r.get(f.name, _zero(f)) for r in rows] for f in fields}
    data = pa.table(columns, schema=pa.schema(fields))
    meta = {
        b"netgauge.table": table.encode(),
        b"netgauge.schema_version": _OLD_VERSIONS[table].encode(),
        b"netgauge.config_hash": b"kept",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data.replace_schema_metadata(meta), path)


def _zero(field: pa.Field) -> object:
    if pa.types.is_string(field.type):
        return "" if not field.nullable else None
    return False if pa.types.is_boolean(field.type) else 0


def test_shards_of_the_versions_before_are_upgraded_in_place(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results/layout.json").write_text('{"layout": 2}')
    cell = "app=k8s/model=none/agent=oracle/level=1/seed=0/queries=2/variant=base"
    _old(tmp_path / "results/queries/app=k8s/app_variant=base/level=1/seed=0/part-0.parquet",
         "queries", [{"query_id": "q0"}, {"query_id": "q1"}])  # fmt: skip
    steps = [
        {"query_id": "q0", "turn": 1, "status": "ok", "output": "é" * 10},
        {"query_id": "q0", "turn": 2, "status": "blocked", "output": "no"},
        {"query_id": "q1", "turn": 1, "status": "parse_error", "output": "bad"},
    ]
    _old(tmp_path / "results/steps" / cell / "part-0.parquet", "steps", steps)
    calls = '[{"purpose": "diagnostic", "response": "abcd"}, {"purpose": "act"}]'
    turns = [{"query_id": "q0", "turn": 1, "status": "ok", "output": "é" * 10, "calls": calls}]
    _old(tmp_path / "work/transcripts" / cell / "part-0.parquet", "transcripts", turns)
    episodes = [{"query_id": "q0", "correct": True}, {"query_id": "q1", "correct": False}]
    _old(tmp_path / "results/episodes" / cell / "part-0.parquet", "episodes", episodes)

    ensure_layout(tmp_path)

    assert layout_version(tmp_path) == LAYOUT
    assert json.loads((tmp_path / "results/layout.json").read_text())["upgraded_shards"] == 4
    for table, path in (
        ("queries", "results/queries/app=k8s/app_variant=base/level=1/seed=0/part-0.parquet"),
        ("steps", f"results/steps/{cell}/part-0.parquet"),
        ("episodes", f"results/episodes/{cell}/part-0.parquet"),
        ("transcripts", f"work/transcripts/{cell}/part-0.parquet"),
    ):
        data = read_shard(table, tmp_path / path)  # the current version, or it raises
        meta = data.schema.metadata
        assert meta[b"netgauge.config_hash"] == b"kept"
        assert meta[b"netgauge.upgraded_from"].decode() == _OLD_VERSIONS[table]
        assert meta[b"netgauge.schema_version"].decode() == SCHEMA_VERSIONS[table]
    queries = read_shard("queries", tmp_path / "results/queries/app=k8s/app_variant=base"
                         "/level=1/seed=0/part-0.parquet").to_pylist()  # fmt: skip
    assert [(q["task"], q["stratum"]) for q in queries] == [("mitigate", "")] * 2
    rows = read_shard("episodes", tmp_path / f"results/episodes/{cell}/part-0.parquet").to_pylist()
    got = [(r["task"], r["score"], r["commands"], r["blocked"], r["bytes_read"]) for r in rows]
    assert got == [("mitigate", 1.0, 1, 1, 20), ("mitigate", 0.0, 0, 0, 0)]
    assert [r["answer"] for r in rows] == [None, None] and rows[0]["read_budget"] is None
    turn = read_shard("transcripts", tmp_path / f"work/transcripts/{cell}/part-0.parquet")
    row = turn.to_pylist()[0]
    assert (row["bytes_out"], row["diagnostics"], row["diagnostic_bytes"]) == (20, 1, 4)
