"""Parquet shards: explicit schemas, metadata, atomic writes, clear read errors."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import DataError
from pipeline.records import (
    SCHEMA_VERSIONS,
    SCHEMAS,
    read_shard,
    shard_hash,
    shard_metadata,
    to_table,
    write_shard,
)


def _query_row(i: int) -> dict:
    return {
        "query_id": f"x-{i}",
        "app": "malt",
        "level": 1,
        "seed": 0,
        "app_variant": "base",
        "query_index": i,
        "query_key": f"{i:016x}",
        "app_version": "1",
        "env_key": "t",
        "operation": "count",
        "size": "",
        "task": "mitigate",
        "stratum": "",
        "answer_type": "number",
        "prompt": "p",
        "ground_truth": "{}",
        "focus": "",
    }


def test_roundtrip_with_metadata(tmp_path):
    path = tmp_path / "a" / "part-0.parquet"
    write_shard(
        "queries", to_table("queries", [_query_row(0), _query_row(1)]), path, config_hash="abc"
    )
    meta = shard_metadata(path)
    assert meta["netgauge.table"] == "queries"
    assert meta["netgauge.schema_version"] == SCHEMA_VERSIONS["queries"]
    assert meta["netgauge.config_hash"] == "abc" == shard_hash(path)
    assert meta["netgauge.code_version"]
    table = read_shard("queries", path)
    assert table.schema.remove_metadata() == SCHEMAS["queries"]
    assert table.column("query_id").to_pylist() == ["x-0", "x-1"]
    assert [p.name for p in path.parent.iterdir()] == ["part-0.parquet"]  # no temp left


def test_same_rows_same_bytes(tmp_path):
    rows = [_query_row(i) for i in range(3)]
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_shard("queries", to_table("queries", rows), a, config_hash="h")
    write_shard("queries", to_table("queries", rows), b, config_hash="h")
    assert a.read_bytes() == b.read_bytes()


def test_missing_column_is_named():
    row = _query_row(0)
    del row["prompt"]
    with pytest.raises(DataError, match="lack columns: prompt"):
        to_table("queries", [row])


def test_failed_write_leaves_old_shard_intact(tmp_path, monkeypatch):
    path = tmp_path / "part-0.parquet"
    write_shard("queries", to_table("queries", [_query_row(0)]), path, config_hash="old")

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        write_shard("queries", to_table("queries", [_query_row(1)]), path, config_hash="new")
    assert shard_hash(path) == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["part-0.parquet"]


def test_read_errors_name_the_problem(tmp_path):
    with pytest.raises(DataError, match="missing queries shard"):
        read_shard("queries", tmp_path / "nope.parquet")
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1]}), other)
    with pytest.raises(DataError, match="holds table 'None', expected 'queries'"):
        read_shard("queries", other)


def test_schema_mismatch_rejected(tmp_path):
    with pytest.raises(DataError, match="does not match its schema"):
        write_shard("queries", pa.table({"x": [1]}), tmp_path / "p.parquet", config_hash="h")


def test_a_shard_of_an_older_layout_is_refused_and_counts_as_missing(tmp_path, monkeypatch):
    path = tmp_path / "part-0.parquet"
    monkeypatch.setitem(SCHEMA_VERSIONS, "queries", "0")  # written by an older NetGauge
    write_shard("queries", to_table("queries", [_query_row(0)]), path, config_hash="h")
    monkeypatch.undo()
    assert shard_hash(path) is None  # so the stage that writes it runs again
    reads = SCHEMA_VERSIONS["queries"]
    with pytest.raises(DataError, match=f"schema version 0, this code reads version {reads} of"):
        read_shard("queries", path)
