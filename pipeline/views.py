"""DuckDB views over the result shards: `queries`, `episodes`, `steps`, and any other table.

    con = connect("data")
    con.sql("SELECT agent, avg(correct::INT) FROM episodes GROUP BY agent")

Each view reads `<data>/results/<table>/**/*.parquet` with hive partitioning, so the
path fields (app, model, agent, level, seed, queries, variant; app_variant in queries)
are columns; `cells` holds one row per cell with its variant's settings and full
config. A known table (one with a schema in `pipeline.records.SCHEMAS`) with no shard
yet is an empty view with the right columns, so queries never fail for lack of files.
Any other folder of shards under `results/` becomes a view of the same name as soon as
it exists; until then there is no such view (see `has_table`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from pipeline.config import data_root
from pipeline.datadir import ensure_layout
from pipeline.records import SCHEMAS

if TYPE_CHECKING:
    import duckdb

RESULT_TABLES = ("queries", "episodes", "steps")
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_INTERNAL = {"transcripts"}  # has a schema, but lives in work/, not results/


def _shard_glob(folder: Path) -> str:
    return str(folder / "**" / "*.parquet").replace("'", "''")


def connect(data_dir: str | Path = "data") -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per results table."""
    # DuckDB takes 0.1 s to import: only processes that read results load it, not every one
    # that composes a config (failure-driven sampling reaches here from config validation).
    import duckdb

    ensure_layout(data_root(data_dir))
    root = data_root(data_dir) / "results"
    con = duckdb.connect()
    names = [t for t in SCHEMAS if t not in _INTERNAL]
    if root.is_dir():
        names += sorted(p.name for p in root.iterdir() if p.is_dir() and _IDENTIFIER.match(p.name))
    for table in dict.fromkeys(names):
        folder = root / table
        if any(folder.glob("**/*.parquet")):
            con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{_shard_glob(folder)}', "
                "hive_partitioning = true, union_by_name = true)"
            )
        elif table in SCHEMAS:
            empty = pa.Table.from_pylist([], schema=SCHEMAS[table])
            con.register(f"_{table}_empty", empty)
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM _{table}_empty")
    return con


def tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The result views of a connection (not the internal `_…_empty` relations)."""
    rows = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name"
    ).fetchall()
    return [name for (name,) in rows if not name.startswith("_")]


def has_table(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return table in tables(con)


def columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The columns of a view, or [] when there is no such view."""
    if not has_table(con, table):
        return []
    return [row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()]
