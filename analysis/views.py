"""DuckDB views over the result shards: `queries`, `episodes`, `steps`.

    con = connect("data")
    con.sql("SELECT agent, avg(correct::INT) FROM episodes GROUP BY agent")

Each view reads `<data>/results/<table>/**/*.parquet` with hive partitioning, so the
path fields (app, model, agent, level, seed) are columns. A table with no shard yet is
an empty view with the right columns, so queries never fail for lack of files.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.cells import data_root
from pipeline.records import SCHEMAS

RESULT_TABLES = ("queries", "episodes", "steps")


def connect(data_dir: str | Path = "data") -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per results table."""
    root = data_root(data_dir) / "results"
    con = duckdb.connect()
    for table in RESULT_TABLES:
        folder = root / table
        if any(folder.glob("**/*.parquet")):
            pattern = str(folder / "**" / "*.parquet").replace("'", "''")
            con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{pattern}', "
                "hive_partitioning = true, union_by_name = true)"
            )
        else:
            empty = pa.Table.from_pylist([], schema=SCHEMAS[table])
            con.register(f"_{table}_empty", empty)
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM _{table}_empty")
    return con
