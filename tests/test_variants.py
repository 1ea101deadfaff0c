"""A result's identity is its full effective config: variants, the query-count axis, plans
with overridden axes, splits and the layout migration (pipeline/variants.py, plan.py,
splits.py, datadir.py)."""

from __future__ import annotations

import json
import shlex

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cells import Layout, cell_from_config
from pipeline.config import compose
from pipeline.dag import variant_args
from pipeline.datadir import LAYOUT, LEGACY, ensure_layout, layout_version
from pipeline.errors import ConfigError, DataError
from pipeline.plan import load_plan, plan_name
from pipeline.records import SCHEMA_VERSIONS, SCHEMAS
from pipeline.splits import check_run_seeds, check_seeds, seeds_of, split_of
from pipeline.stages import main
from pipeline.variants import BASE, variant_of


def cell(*overrides: str):
    return cell_from_config(compose(list(overrides)))


def test_the_named_configs_alone_are_the_base_variant():
    got = cell("app=routing", "agent=oracle")
    assert (got.variant, got.app_variant) == (BASE, BASE)
    assert got.part.endswith("/queries=20/variant=base")


@pytest.mark.parametrize(
    "override",
    [
        "app.max_live_topologies=2",  # how many labs stay alive
        "run.concurrency=4",
        "run.flush_every_s=1",
        "data_dir=/elsewhere",
        "app.max_turns=10",  # the value conf/app/routing.yaml already has
    ],
)
def test_settings_that_cannot_change_a_result_do_not_split_cells(override):
    assert cell("app=routing", override).variant == BASE


def test_a_result_setting_makes_a_variant_named_by_its_value():
    five, three = cell("app=routing", "app.max_turns=5"), cell("app=routing", "app.max_turns=3")
    assert five.variant != three.variant and BASE not in (five.variant, three.variant)
    assert five.variant.startswith("v") and len(five.variant) == 9
    assert five.app_variant == five.variant  # only the app differs
    cfg = compose(["app=routing", "app.max_turns=5"])
    assert variant_of(cfg).label == "app.max_turns=5"
    # The same effective config reached another way is the same cell.
    assert cell("app=routing", "app.max_turns=5", "run.concurrency=3").variant == five.variant


def test_model_settings_count_only_for_agents_that_use_a_model():
    assert cell("agent=oracle", "model=smollm2", "model.temperature=0.7").variant == BASE
    hot = cell("agent=zero_shot", "model=smollm2", "model.temperature=0.7")
    assert hot.variant != BASE and hot.app_variant == BASE  # queries stay shared
    assert cell("agent=zero_shot", "model=smollm2", "model.max_in_flight=2").variant == BASE
    strategy = cell("agent=zero_shot", "model=smollm2", "agent.repair.reprompt=false")
    assert strategy.variant not in (BASE, hot.variant)


def test_plan_axes_override_the_grid_and_name_the_plan():
    plan = load_plan("smoke", axes={"apps": ["malt"], "queries": ["5", 10]})
    assert {c.queries for c in plan.cells} == {5, 10}
    assert len(plan.cells) == 2 * 2 * 3  # agents x counts x levels
    assert plan.name == plan_name("smoke", plan.axes) != "smoke"
    assert plan.name.startswith("smoke+")
    # One queries shard per (app variant, level, seed), as long as the longest cell.
    assert plan.queries_count("malt", BASE, 1, 0) == 10
    assert load_plan("smoke").name == "smoke"


def test_plan_variants_axis_and_its_errors():
    plan = load_plan("smoke", axes={"apps": ["malt"], "variants": [[], ["app.max_turns=2"]]})
    variants = {c.variant for c in plan.cells}
    assert len(variants) == 2 and BASE in variants
    with pytest.raises(ConfigError, match=r"unknown app 'mlt' \(did you mean 'malt'\?\)"):
        load_plan("smoke", axes={"apps": ["mlt"]})
    with pytest.raises(ConfigError, match=r"unknown grid axis colour; choose from: apps"):
        load_plan("smoke", axes={"colour": ["red"]})
    with pytest.raises(ConfigError, match=r"'queries': 'many' is not an integer"):
        load_plan("smoke", axes={"queries": ["many"]})
    with pytest.raises(ConfigError, match=r"'level=2' is not KEY=VALUE with KEY under app\."):
        load_plan("smoke", axes={"variants": [["level=2"]]})


def test_splits_partition_the_seeds_by_key_slot():
    assert seeds_of("test", 4) == [0, 1, 4, 5] and seeds_of("train", 3) == [2, 3, 6]
    assert {split_of(s) for s in range(4)} == {"test", "train"}
    check_seeds([0, 1], "test", "grid g")
    with pytest.raises(ConfigError, match=r"seed\(s\) 2 belong to the 'train' split"):
        check_seeds([0, 2], "test", "grid g")
    with pytest.raises(ConfigError, match=r"seeds 0 and 4 share key slot 0"):
        check_seeds([0, 4], "test", "grid g")
    with pytest.raises(ConfigError, match=r"grid 'smoke': seeds 1 and 5 share key slot 1"):
        load_plan("smoke", axes={"seeds": [1, 5]})


# -- an old data directory meets the new code ----------------------------------------------

_NEW = {"queries", "variant", "app_variant", "query_key"}


def _old_shard(path, table: str, rows: int, version: str) -> None:
    """A shard as layout 1 wrote it: the columns of today's schema but the new ones."""
    fields = [f for f in SCHEMAS[table] if f.name not in _NEW]
    columns = {}
    for f in fields:
        if pa.types.is_string(f.type):
            columns[f.name] = [f"{f.name}-{i}" for i in range(rows)]
        elif pa.types.is_boolean(f.type):
            columns[f.name] = [i % 2 == 0 for i in range(rows)]
        else:
            columns[f.name] = pa.array(range(rows)).cast(f.type)
    data = pa.table(columns, schema=pa.schema(fields))
    meta = {b"netgauge.table": table.encode(), b"netgauge.schema_version": version.encode()}
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data.replace_schema_metadata(meta), path)


def test_an_old_data_directory_is_migrated_without_losing_a_row(tmp_path):
    cell_part = "app=malt/model=none/agent=oracle/level=1/seed=0"
    for table in ("episodes", "steps", "calls"):
        _old_shard(tmp_path / "results" / table / cell_part / "part-0.parquet", table, 7, "2")
    _old_shard(
        tmp_path / "results/queries/app=malt/level=1/seed=0/part-0.parquet", "queries", 9, "1"
    )
    transcript = tmp_path / "work/transcripts" / cell_part / "part-0.parquet"
    _old_shard(transcript, "transcripts", 3, "1")
    before = transcript.read_bytes()

    ensure_layout(tmp_path)

    assert layout_version(tmp_path) == LAYOUT
    marker = json.loads((tmp_path / "results/layout.json").read_text())
    assert marker["migrated_shards"] == 4
    new_part = f"{cell_part}/queries=7/variant={LEGACY}/part-0.parquet"
    for table in ("episodes", "steps", "calls"):
        data = pq.read_table(tmp_path / "results" / table / new_part, partitioning=None)
        assert data.num_rows == 7 and data.schema.remove_metadata() == SCHEMAS[table]
        assert set(data["variant"].to_pylist()) == {LEGACY}
        assert data["query_id"].to_pylist() == [f"query_id-{i}" for i in range(7)]
        meta = data.schema.metadata
        assert meta[b"netgauge.schema_version"].decode() == SCHEMA_VERSIONS[table]
        assert (
            meta[b"netgauge.migrated_from"].decode()
            == f"results/{table}/{cell_part}/part-0.parquet"
        )
    queries = (
        tmp_path / f"results/queries/app=malt/app_variant={LEGACY}/level=1/seed=0/part-0.parquet"
    )
    assert pq.read_metadata(queries).num_rows == 9
    assert (
        tmp_path / "work" / LEGACY / "transcripts" / cell_part / "part-0.parquet"
    ).read_bytes() == before
    assert not list(
        (tmp_path / "results").glob(
            "*/app=malt/model=none/agent=oracle/level=1/seed=0/part-0.parquet"
        )
    )
    # The views read the migrated rows beside new ones, and a second call changes nothing.
    from pipeline.views import connect

    assert connect(tmp_path).execute("SELECT count(*) FROM episodes").fetchone() == (7,)
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    ensure_layout(tmp_path)
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == files


def test_a_newer_layout_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results/layout.json").write_text(f'{{"layout": {LAYOUT + 1}}}')
    newer = rf"newer NetGauge \(data layout {LAYOUT + 1}\).*update the checkout"
    with pytest.raises(DataError, match=newer):
        ensure_layout(tmp_path)


def test_a_fresh_data_directory_gets_no_results_from_planning(tmp_path):
    ensure_layout(tmp_path / "data")
    load_plan("smoke", tmp_path / "data")  # may cache the apps' capacities, nothing else
    assert not (tmp_path / "data" / "results").exists()
    assert Layout(tmp_path).root == tmp_path


def test_a_grid_asking_more_than_a_seed_can_get_fails_before_any_job(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"grid 'smoke': queries=100 exceeds what one seed can get from routing level 1: "
        r"59 per seed",
    ):
        load_plan("smoke", tmp_path, axes={"apps": ["routing"], "queries": [100]})
    assert not (tmp_path / "results").exists()
    # allow_repeats=true keeps repeats instead (a variant of its own).
    plan = load_plan(
        "smoke",
        tmp_path,
        axes={"apps": ["routing"], "queries": [100], "variants": [["allow_repeats=true"]]},
    )
    assert {c.variant for c in plan.cells} == {c.app_variant for c in plan.cells} != {BASE}


def test_the_generate_job_of_an_allow_repeats_variant_makes_that_variant(tmp_path):
    """The DAG hands the generate job the overrides that make its app variant; allow_repeats
    is one of them (it changes the queries), not only the app.* keys."""
    plan = load_plan(
        "smoke",
        tmp_path,
        axes={
            "apps": ["malt"],
            "levels": [1],
            "queries": [2],
            "variants": [["allow_repeats=true"]],
        },
    )
    made = {(c.app, c.app_variant) for c in plan.cells}
    assert len(made) == 1
    app, app_variant = made.pop()
    sets = shlex.split(variant_args(plan.app_overrides(app, app_variant), app_variant))
    assert "--set=allow_repeats=true" in sets
    args = ["generate", "--app", app, "--level", "1", "--seed", str(plan.cells[0].seed)]
    assert main([*args, "--queries", "2", "--data-dir", str(tmp_path), *sets]) == 0


def test_a_direct_sweep_over_seeds_sharing_a_slot_is_refused_and_train_seeds_warn():
    assert check_run_seeds(["app=malt", "seed=0,1"]) == []
    with pytest.raises(ConfigError, match=r"seeds 0 and 4 share key slot 0"):
        check_run_seeds(["seed=0,4"])
    (warning,) = check_run_seeds(["seed=2"])
    assert "seed 2 is in the 'train' split" in warning
    assert check_run_seeds(["seed=range(0,3)"]) == []  # Hydra's own sweep syntax
