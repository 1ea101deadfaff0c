"""Parquet records: the explicit schema of every table, and atomic shard I/O.

Tables (documented column by column in data/README.md):
    queries      one row per generated query
    calls        one row per model call or protocol agent's call
    transcripts  one row per agent turn, as played (internal: the score stage's input)
    episodes     one row per query x agent: the verdict
    steps        one row per agent turn: its task, attempt and per-step safety verdict
    cells        one row per cell: its variant, the settings that make it, its full config

Each shard carries key-value metadata: netgauge.table, netgauge.schema_version,
netgauge.config_hash, netgauge.code_version. Writes go to a temp file in the same
directory and are renamed into place, so a shard either exists whole or not at all.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import ROOT
from pipeline.errors import DataError
from pipeline.files import replacing
from pipeline.untrusted import storable

# The column layout's version, per table; readers refuse other versions. Version 2 of
# the result tables added the task columns; version 3 (2 of queries and transcripts) the
# query count, the variant and the query key (data directories of the layout before are
# migrated by pipeline/datadir.py). Version 3 of `queries` and 4 of `episodes` added the
# size class (and `queries.focus`); version 4 of `calls` the exchanges (request,
# response, dropped turns) and 5 lets tokens and time to first token be null (protocol
# agents report them only sometimes). Version 4 of `queries` and `steps`, 3 of
# `transcripts` and 5 of `episodes` added the task kinds (pipeline/diagnosis.py), the
# answer and its score, the variety stratum and what each turn showed (bytes, diagnostics,
# budgets). Version 6 of `calls` added `cache` (the response cache's hit or miss), the
# server's cached prompt tokens and the call's `cost_usd` (pipeline/pricing.py; 0 for a
# cache hit), version 6 of `episodes` `trial` and `trial_of` (repeated trials) and the
# episode's `cost_usd`. Data directories of the versions before are migrated
# (pipeline/migrate.py: trial 0 of its own variant, every other new column null).
RESULTS = ("episodes", "steps", "calls", "cells")  # tables the score stage writes
SCHEMA_VERSIONS = {
    "queries": "4",
    "transcripts": "3",
    "episodes": "6",
    "steps": "4",
    "calls": "6",
    "cells": "1",
}

_CELL = [
    pa.field("app", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("agent", pa.string(), nullable=False),
    pa.field("level", pa.int16(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("queries", pa.int32(), nullable=False),
    pa.field("variant", pa.string(), nullable=False),
]

# What a turn records, in `transcripts` (as played) and `steps` (as scored).
_TURN = [
    pa.field("query_id", pa.string(), nullable=False),
    *_CELL,
    pa.field("turn", pa.int16(), nullable=False),
    pa.field("reply", pa.string(), nullable=False),
    pa.field("action", pa.string(), nullable=False),
    pa.field("status", pa.string(), nullable=False),
    pa.field("output", pa.string(), nullable=False),
]

# What a turn submitted and showed: the answer (JSON, detect/localize), the bytes of its
# output as shown, and the diagnostics run before it with the bytes they showed.
_SHOWN = [
    pa.field("answer", pa.string()),
    pa.field("bytes_out", pa.int32(), nullable=False),
    pa.field("diagnostics", pa.int16(), nullable=False),
    pa.field("diagnostic_bytes", pa.int64(), nullable=False),
]

# Which task of the query a turn worked on, in `steps` and in `calls` (by the turn served).
_TASK = [
    pa.field("task", pa.string(), nullable=False),
    pa.field("attempt", pa.int16(), nullable=False),
]

SCHEMAS: dict[str, pa.Schema] = {
    "queries": pa.schema(
        [
            pa.field("query_id", pa.string(), nullable=False),
            pa.field("app", pa.string(), nullable=False),
            pa.field("level", pa.int16(), nullable=False),
            pa.field("seed", pa.int64(), nullable=False),
            pa.field("app_variant", pa.string(), nullable=False),
            pa.field("query_index", pa.int32(), nullable=False),
            pa.field("query_key", pa.string()),  # null only in migrated shards
            pa.field("app_version", pa.string(), nullable=False),
            pa.field("env_key", pa.string(), nullable=False),
            pa.field("operation", pa.string(), nullable=False),
            pa.field("size", pa.string(), nullable=False),
            pa.field("task", pa.string(), nullable=False),  # mitigate | detect | localize
            pa.field("stratum", pa.string(), nullable=False),  # "" when the app has none
            pa.field("answer_type", pa.string(), nullable=False),
            pa.field("prompt", pa.string(), nullable=False),
            pa.field("ground_truth", pa.string(), nullable=False),
            # Failure-driven sampling, JSON: the earlier run, the agent, the weights per
            # operation the query was drawn with ("" when drawn uniformly).
            pa.field("focus", pa.string(), nullable=False),
        ]
    ),
    "transcripts": pa.schema(
        [
            *_TURN,
            pa.field("evidence", pa.string(), nullable=False),
            pa.field("error", pa.string()),
            pa.field("exec_s", pa.float64(), nullable=False),
            pa.field("agent_s", pa.float64(), nullable=False),
            pa.field("prompt_tokens", pa.int64()),
            pa.field("completion_tokens", pa.int64()),
            pa.field("calls", pa.string(), nullable=False),
            *_SHOWN,
            pa.field("turn_budget", pa.int16(), nullable=False),
            pa.field("read_budget", pa.int64()),
        ]
    ),
    "episodes": pa.schema(
        [
            pa.field("query_id", pa.string(), nullable=False),
            *_CELL,
            pa.field("app_variant", pa.string(), nullable=False),
            # Repeated trials (pipeline/trials.py): the play's number, 0 unless the grid
            # has `trials`, and the variant of its trial 0, which every trial shares.
            pa.field("trial", pa.int16(), nullable=False),
            pa.field("trial_of", pa.string(), nullable=False),
            pa.field("query_key", pa.string()),  # null only in migrated shards
            pa.field("operation", pa.string(), nullable=False),
            pa.field("size", pa.string(), nullable=False),
            pa.field("task", pa.string(), nullable=False),
            pa.field("answer_type", pa.string(), nullable=False),
            pa.field("outcome", pa.string(), nullable=False),
            pa.field("correct", pa.bool_(), nullable=False),
            pa.field("safe", pa.bool_(), nullable=False),
            pa.field("score", pa.float64(), nullable=False),  # 0..1; correct as 1/0 unless scored
            pa.field("answer", pa.string()),  # the submitted answer, JSON (detect, localize)
            pa.field("iterations", pa.int16(), nullable=False),
            pa.field("commands", pa.int32(), nullable=False),
            pa.field("blocked", pa.int16(), nullable=False),
            pa.field("bytes_read", pa.int64(), nullable=False),
            pa.field("diagnostics", pa.int32(), nullable=False),
            pa.field("turn_budget", pa.int16(), nullable=False),
            pa.field("read_budget", pa.int64()),
            pa.field("tasks", pa.int16(), nullable=False),
            pa.field("tasks_solved", pa.int16(), nullable=False),
            pa.field("latency_s", pa.float64(), nullable=False),
            pa.field("agent_s", pa.float64(), nullable=False),
            pa.field("error", pa.string()),
            pa.field("prompt_tokens", pa.int64()),
            pa.field("completion_tokens", pa.int64()),
            pa.field("tokens_per_s", pa.float64()),
            pa.field("model_calls", pa.int32(), nullable=False),
            pa.field("reprompts", pa.int16(), nullable=False),
            pa.field("example_reprompts", pa.int16(), nullable=False),
            pa.field("master_extractions", pa.int16(), nullable=False),
            pa.field("cost_usd", pa.float64()),  # the model calls' cost; null: not known
            pa.field("detail", pa.string(), nullable=False),
            pa.field("config_hash", pa.string(), nullable=False),
            pa.field("code_version", pa.string(), nullable=False),
        ]
    ),
    "steps": pa.schema(
        [
            *_TURN,
            *_TASK,
            pa.field("task_solved", pa.bool_(), nullable=False),
            pa.field("safe", pa.bool_(), nullable=False),
            pa.field("error", pa.string()),
            pa.field("exec_s", pa.float64(), nullable=False),
            pa.field("agent_s", pa.float64(), nullable=False),
            pa.field("evidence", pa.string(), nullable=False),
            pa.field("bytes_out", pa.int32(), nullable=False),
        ]
    ),
    "calls": pa.schema(
        [
            pa.field("query_id", pa.string(), nullable=False),
            *_CELL,
            pa.field("turn", pa.int16(), nullable=False),
            *_TASK,
            pa.field("call_index", pa.int16(), nullable=False),
            pa.field("purpose", pa.string(), nullable=False),
            pa.field("served_model", pa.string(), nullable=False),
            # Null where the agent did not report them (protocol agents).
            pa.field("prompt_tokens", pa.int64()),
            pa.field("completion_tokens", pa.int64()),
            pa.field("latency_s", pa.float64(), nullable=False),
            pa.field("ttft_s", pa.float64()),
            pa.field("tokens_per_s", pa.float64()),
            pa.field("finish_reason", pa.string()),
            pa.field("request", pa.string(), nullable=False),
            pa.field("response", pa.string(), nullable=False),
            pa.field("dropped_turns", pa.int16(), nullable=False),
            # "hit" (replayed from the response cache), "miss", null (no cache)
            pa.field("cache", pa.string()),
            pa.field("cached_tokens", pa.int64()),  # prompt tokens served from a cache
            pa.field("cost_usd", pa.float64()),  # pipeline/pricing.py; null: not known
        ]
    ),
    "cells": pa.schema(
        [
            *_CELL,
            pa.field("app_variant", pa.string(), nullable=False),
            pa.field("variant_label", pa.string(), nullable=False),
            pa.field("differences", pa.string(), nullable=False),  # JSON {dotted key: value}
            pa.field("settings", pa.string(), nullable=False),  # JSON: app, agent, model
            pa.field("config", pa.string(), nullable=False),  # JSON: the whole composed config
            pa.field("split", pa.string(), nullable=False),
            pa.field("config_hash", pa.string(), nullable=False),
            pa.field("code_version", pa.string(), nullable=False),
        ]
    ),
}


@functools.cache
def code_version() -> str:
    """`git describe` of the checkout, or the package version outside git."""
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"netgauge-{version('netgauge')}"
        except PackageNotFoundError:
            return "unknown"


def to_table(table: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Rows (dicts keyed by column) as an Arrow table of `table`'s schema."""
    schema = SCHEMAS[table]
    rows = list(rows)
    missing = [f.name for f in schema if rows and f.name not in rows[0]]
    if missing:
        raise DataError(f"rows for table '{table}' lack columns: {', '.join(missing)}")
    columns = {f.name: [row[f.name] for row in rows] for f in schema}
    for f in schema:
        if pa.types.is_string(f.type):  # replies and outputs may hold lone surrogates
            columns[f.name] = [storable(v) if isinstance(v, str) else v for v in columns[f.name]]
    return pa.table(columns, schema=schema)


def write_shard(
    table: str, data: pa.Table, path: Path, *, config_hash: str, extra: Mapping[str, str] = {}
) -> Path:
    """Write `data` to `path` atomically, with the shard metadata."""
    if data.schema.remove_metadata() != SCHEMAS[table]:
        raise DataError(f"shard for '{table}' does not match its schema: {data.schema}")
    meta = {
        "netgauge.table": table,
        "netgauge.schema_version": SCHEMA_VERSIONS[table],
        "netgauge.config_hash": config_hash,
        "netgauge.code_version": code_version(),
        **extra,
    }
    data = data.replace_schema_metadata({k.encode(): v.encode() for k, v in meta.items()})
    with replacing(path, durable=True) as tmp:
        pq.write_table(data, tmp, compression="zstd")
    return path


def read_shard(table: str, path: Path) -> pa.Table:
    """Read a shard, checking it is the table and schema version we expect."""
    if not path.exists():
        raise DataError(f"missing {table} shard: {path}")
    data = pq.read_table(path, partitioning=None)
    meta = shard_metadata(path)
    if meta.get("netgauge.table") != table:
        raise DataError(f"{path} holds table '{meta.get('netgauge.table')}', expected '{table}'")
    if meta.get("netgauge.schema_version") != SCHEMA_VERSIONS[table]:
        how = "delete it to have it rescored" if table in RESULTS else "regenerate it"
        raise DataError(
            f"{path} has schema version {meta.get('netgauge.schema_version')}, "
            f"this code reads version {SCHEMA_VERSIONS[table]} of '{table}'; {how}"
        )
    return data


def shard_metadata(path: Path) -> dict[str, str]:
    raw = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in raw.items() if k.startswith(b"netgauge.")}


def shard_hash(path: Path) -> str | None:
    """The config hash a shard was written with; None if it does not exist or has
    another schema version than its table's (so stages redo it)."""
    if not path.exists():
        return None
    meta = shard_metadata(path)
    if meta.get("netgauge.schema_version") != SCHEMA_VERSIONS.get(meta.get("netgauge.table", "")):
        return None
    return meta.get("netgauge.config_hash")


def shard_rows(path: Path) -> int:
    """The rows of a shard (0 when it does not exist), from its footer alone."""
    return pq.read_metadata(path).num_rows if path.exists() else 0
