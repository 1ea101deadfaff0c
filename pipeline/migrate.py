"""Shards of earlier schema versions rewritten into the current ones, losing nothing.

pipeline/datadir.py calls `upgrade` once per data directory (data layout 2 or 3 -> 4), under its
lock: every result shard (queries, episodes, steps, calls, cells) and work file
(transcripts, checkpoint chunks) whose `netgauge.schema_version` is older than this
code's is rewritten in place, atomically, with its config hash kept (so no stage redoes
it) and `netgauge.upgraded_from` recording the version it had. `conform` is also what the
layout-1 migration writes with.

What the columns added since hold in a shard written before them:

    queries      task "mitigate" (every earlier query was one), stratum ""
    transcripts  answer null; bytes_out the UTF-8 bytes of the output; diagnostics and
                 diagnostic_bytes from the row's recorded calls (purpose "diagnostic"; their
                 responses were kept to 16 Ki characters, so bytes may be undercounted);
                 turn_budget 0 (not recorded then), read_budget null (there was none)
    steps        bytes_out the UTF-8 bytes of the output
    episodes     task "mitigate"; score 1 if correct else 0; answer null; commands, blocked,
                 bytes_read and diagnostics counted from the cell's steps and calls shards
                 (0 when they are missing); turn_budget 0; read_budget null
    calls        (layout 4) cache null (no response cache then); cached_tokens and
                 cost_usd null (not recorded or priced then)
    episodes     (layout 4) trial 0 and trial_of its variant: one play of each query;
                 cost_usd null
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.files import replacing
from pipeline.records import SCHEMA_VERSIONS, SCHEMAS

log = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {"task": "mitigate"}
_ACTING = {"ok", "exec_error", "timeout", "resource_limit"}


def conform(
    table: str,
    data: pa.Table,
    extra: Mapping[str, object] | None = None,
    context: Mapping[str, pa.Table] | None = None,
) -> pa.Table:
    """`data`, a shard of `table` of any earlier version, in the current schema: present
    columns cast, `extra` filled in, added columns as the module docstring says (`context`:
    the cell's steps and calls, for episodes), the rest null or the type's zero value."""
    schema = SCHEMAS[table]
    extra = dict(extra or {})
    derived = _derived(table, data, context or {})
    if table == "episodes" and "trial_of" not in derived and "variant" in extra:
        derived["trial_of"] = [extra["variant"]] * data.num_rows
    columns = []
    for f in schema:
        if f.name in data.column_names:
            columns.append(data[f.name].cast(f.type))
        elif f.name in extra:
            columns.append(pa.array([extra[f.name]] * data.num_rows, type=f.type))
        elif f.name in derived:
            columns.append(pa.array(derived[f.name], type=f.type))
        elif f.name in DEFAULTS:
            columns.append(pa.array([DEFAULTS[f.name]] * data.num_rows, type=f.type))
        elif f.nullable:
            columns.append(pa.nulls(data.num_rows, type=f.type))
        else:
            columns.append(pa.array([_zero(f.type)] * data.num_rows, type=f.type))
    return pa.table(columns, schema=schema)


def _zero(kind: pa.DataType) -> object:
    if pa.types.is_string(kind):
        return ""
    if pa.types.is_boolean(kind):
        return False
    return 0


def _size(text: str | None) -> int:
    return len((text or "").encode("utf-8", "surrogatepass"))


def _derived(table: str, data: pa.Table, context: Mapping[str, pa.Table]) -> dict[str, list]:
    names = set(data.column_names)
    out: dict[str, list] = {}
    if table in ("transcripts", "steps") and "output" in names:
        out["bytes_out"] = [_size(o) for o in data["output"].to_pylist()]
    if table == "transcripts" and "calls" in names:
        looks = [_diagnostics(c) for c in data["calls"].to_pylist()]
        out["diagnostics"] = [n for n, _ in looks]
        out["diagnostic_bytes"] = [b for _, b in looks]
    if table == "episodes" and "variant" in names:
        out["trial_of"] = data["variant"].to_pylist()
    if table == "episodes" and "correct" in names:
        out["score"] = [1.0 if c else 0.0 for c in data["correct"].to_pylist()]
        per_query = _episode_counts(context)
        for column in ("commands", "blocked", "bytes_read", "diagnostics"):
            out[column] = [per_query[q][column] for q in data["query_id"].to_pylist()]
    return out


def _diagnostics(calls: str | None) -> tuple[int, int]:
    try:
        listed = json.loads(calls or "[]")
    except ValueError:
        return 0, 0
    looks = [c for c in listed if isinstance(c, dict) and c.get("purpose") == "diagnostic"]
    return len(looks), sum(_size(c.get("response")) for c in looks)


def _episode_counts(context: Mapping[str, pa.Table]) -> Mapping[str, Counter]:
    counts: dict[str, Counter] = defaultdict(Counter)
    steps = context.get("steps")
    if steps is not None:
        for row in steps.select(["query_id", "status", "output"]).to_pylist():
            tally = counts[row["query_id"]]
            acted = row["status"] in _ACTING  # only what actions read counts (play.py)
            tally["commands"] += acted
            tally["blocked"] += row["status"] == "blocked"
            tally["bytes_read"] += _size(row["output"]) if acted else 0
    calls = context.get("calls")
    if calls is not None:
        for row in calls.select(["query_id", "purpose", "response"]).to_pylist():
            if row["purpose"] == "diagnostic":
                counts[row["query_id"]]["diagnostics"] += 1
                counts[row["query_id"]]["bytes_read"] += _size(row["response"])
    return counts


def _shards(root: Path) -> Iterator[Path]:
    for folder in (root / "results", root / "work" / "transcripts", root / "work" / "partial"):
        if folder.is_dir():
            yield from sorted(folder.glob("**/*.parquet"))


def upgrade(root: Path) -> int:
    """Rewrite every shard under `root` of an older schema version into the current one;
    return how many were."""
    done = 0
    for path in _shards(root):
        meta = dict(pq.read_schema(path).metadata or {})
        table = meta.get(b"netgauge.table", b"").decode()
        version = meta.get(b"netgauge.schema_version", b"").decode()
        if table not in SCHEMAS or not version.isdigit():
            continue
        if int(version) >= int(SCHEMA_VERSIONS[table]):
            continue
        data = pq.read_table(path, partitioning=None)
        context = _context(root, path) if table == "episodes" else {}
        new = conform(table, data, context=context)
        meta[b"netgauge.schema_version"] = SCHEMA_VERSIONS[table].encode()
        meta[b"netgauge.upgraded_from"] = version.encode()
        with replacing(path) as tmp:
            pq.write_table(new.replace_schema_metadata(meta), tmp, compression="zstd")
        done += 1
    if done:
        log.warning("data directory %s: %d shard(s) upgraded to the current schemas", root, done)
    return done


def _context(root: Path, episodes: Path) -> dict[str, pa.Table]:
    """The steps and calls shards of the cell an episodes shard belongs to."""
    rel = episodes.relative_to(root / "results" / "episodes")
    out = {}
    for table in ("steps", "calls"):
        path = root / "results" / table / rel
        if path.is_file():
            out[table] = pq.read_table(path, partitioning=None)
    return out
