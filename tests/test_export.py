"""SFT export: oracle trajectories of the real MALT app as chat JSONL, read by `datasets`."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis.export import configs, export_sft, main, split_overrides
from pipeline.build import cell_config
from pipeline.cells import Cell
from pipeline.errors import ConfigError, DataError
from pipeline.generate import generate, read_queries

pytestmark = pytest.mark.integration


def test_sft_export_round_trips_through_datasets(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    import datasets

    path, count = export_sft(
        ["app=malt", "level=1,3", "queries=4", f"data_dir={tmp_path}"], progress=False
    )
    assert count == 8 and path == tmp_path / "exports" / "sft" / "malt-L1_3-s2-n4.jsonl"
    meta = json.loads(path.with_name(path.name + ".meta.json").read_text())
    assert meta["split"] == "train" and meta["seeds"] == [2] and not meta["allow_overlap"]
    assert len(meta["query_keys"]) == 8
    ds = datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf-cache")
    )
    assert ds.num_rows == 8
    assert {"messages", "query_id", "level", "operation", "answer_type"} <= set(ds.column_names)
    first = ds[0]
    assert [m["role"] for m in first["messages"]] == ["user", "assistant"]
    # The user turn is the query's prompt; the assistant turn is the ground-truth code.
    queries = {q.query_id: q for q in _queries(tmp_path)}
    for record in ds:
        query = queries[record["query_id"]]
        assert record["messages"][0]["content"] == query.prompt
        assert query.ground_truth["oracle_code"] in record["messages"][1]["content"]
    assert sorted(set(ds["level"])) == [1, 3]


def _queries(data):
    # The export generated in memory; the pipeline's own shards must hold the same queries.
    out = []
    for level in (1, 3):
        cfg = cell_config(Cell("malt", "none", "oracle", level, 2, 4), str(data))
        out += read_queries(generate(cfg))
    return out


def test_export_reads_an_up_to_date_queries_shard(tmp_path):
    cfg = cell_config(Cell("malt", "none", "oracle", 2, 2, 3), str(tmp_path))
    generate(cfg)
    out = tmp_path / "mine.jsonl"
    assert (
        main(
            [
                "sft",
                "app=malt",
                "level=2",
                "queries=3",
                f"data_dir={tmp_path}",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    ids = [json.loads(line)["query_id"] for line in out.read_text().splitlines()]
    assert ids == [
        q.query_id
        for q in read_queries(
            tmp_path.joinpath(
                "results/queries/app=malt/app_variant=base/level=2/seed=2/part-0.parquet"
            )
        )
    ]


def test_export_arguments_fail_clearly(tmp_path, capsys):
    with pytest.raises(ConfigError, match="level='x'"):
        split_overrides(["level=x"])
    with pytest.raises(ConfigError, match="the export plays the oracle"):
        split_overrides(["agent=null"])
    assert [(c.level, c.seed) for c in configs(["level=1,2", "seed=0,5"])] == [
        (1, 0),
        (1, 5),
        (2, 0),
        (2, 5),
    ]
    assert main(["sft", "app=mat", f"data_dir={tmp_path}"]) == 2
    assert "unknown app 'mat' (did you mean 'malt'?)" in capsys.readouterr().err


def test_export_refuses_test_seeds(tmp_path):
    with pytest.raises(ConfigError, match=r"seed\(s\) 0, 5 belong to the test split"):
        export_sft(["app=malt", "seed=0,5", "queries=2", f"data_dir={tmp_path}"], progress=False)


def test_export_refuses_queries_already_evaluated_here(tmp_path):
    """Evaluate seed 2 (a train seed) in this data directory; exporting it for training is
    then refused by key, naming the queries; --allow-overlap writes it and says so."""
    from pipeline.run import run_cell

    run_cell(compose_cell(tmp_path, "app=malt", "agent=oracle", "seed=2", "queries=3"))
    args = ["app=malt", "seed=2", "queries=5", f"data_dir={tmp_path}"]
    with pytest.raises(DataError, match=r"3 of the queries to export were already evaluated"):
        export_sft(args, progress=False)
    path, count = export_sft(args, progress=False, allow_overlap=True)
    meta = json.loads(path.with_name(path.name + ".meta.json").read_text())
    assert count == 5 and meta["allow_overlap"] and len(meta["overlapping_queries"]) == 3
    # Another train seed shares no query with what was evaluated.
    _, count = export_sft(
        ["app=malt", "seed=3", "queries=5", f"data_dir={tmp_path}"], progress=False
    )
    assert count == 5


def compose_cell(data, *overrides):
    from pipeline.config import compose

    return compose([*overrides, f"data_dir={data}"])


def _copy_episodes(data_dir, **changes):
    """The malt seed-2 episodes shard written again as another cell, with `changes` to
    its columns (and its path fields)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (source,) = (data_dir / "results" / "episodes").glob("app=malt/**/seed=2/**/*.parquet")
    table = pq.read_table(source, partitioning=None)
    fields = dict(p.split("=", 1) for p in source.relative_to(data_dir).parts[2:-1])
    for name, value in changes.items():
        column = pa.array([value] * table.num_rows, table.schema.field(name).type)
        table = table.set_column(table.schema.get_field_index(name), name, column)
        if name in fields:
            fields[name] = value
    target = data_dir / "results" / "episodes"
    for name, value in fields.items():
        target = target / f"{name}={value}"
    target.mkdir(parents=True)
    pq.write_table(table, target / "part-0.parquet")


def test_the_overlap_check_matches_keys_of_any_app_config_and_names_unkeyed_cells(tmp_path):
    """The same query evaluated under another app config (e.g. routing_kathara for routing)
    is an overlap; episodes written before keys existed cannot be checked, so their cells
    are named (an old data directory must not hide contamination)."""
    from pipeline.run import run_cell

    run_cell(compose_cell(tmp_path, "app=malt", "agent=oracle", "seed=2", "queries=3"))
    _copy_episodes(tmp_path, app="my_malt_copy", variant="v0000abcd")
    _copy_episodes(tmp_path, seed=3, query_key=None, variant="layout1")
    shutil.rmtree(
        tmp_path
        / "results"
        / "episodes"
        / "app=malt"
        / "model=none"
        / "agent=oracle"
        / "level=1"
        / "seed=2"
    )
    with pytest.raises(DataError) as refused:
        export_sft(["app=malt", "seed=2", "queries=3", f"data_dir={tmp_path}"], progress=False)
    message = str(refused.value)
    assert "3 of the queries to export were already evaluated" in message
    assert message.count("by my_malt_copy none/oracle L1 s2") == 3
    assert "1 evaluated cell(s)" in message
    assert "malt none/oracle L1 s3 (variant=layout1)" in message
    path, _ = export_sft(
        ["app=malt", "seed=2", "queries=3", f"data_dir={tmp_path}"],
        progress=False,
        allow_overlap=True,
    )
    meta = json.loads(path.with_name(path.name + ".meta.json").read_text())
    assert len(meta["overlapping_queries"]) == 3 and len(meta["unchecked_cells"]) == 1
