"""`python -m analysis`: SQL over the result views, and the per-cell summary.

python -m analysis sql "SELECT agent, avg(correct::INT) FROM episodes GROUP BY agent"
python -m analysis summary [--grid smoke]
python -m analysis tables
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import duckdb

from analysis.summary import render, summary
from analysis.views import RESULT_TABLES, connect


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis",
        description="Query NetGauge results with DuckDB. Views: " + ", ".join(RESULT_TABLES),
    )
    parser.add_argument("--data-dir", default="data", help="data directory (default: data)")
    sub = parser.add_subparsers(dest="command", required=True)
    p_sql = sub.add_parser("sql", help="run one SQL statement over the views; print the result")
    p_sql.add_argument("query", help='e.g. "SELECT * FROM episodes LIMIT 5"')
    p_sql.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    p_sum = sub.add_parser("summary", help="per-cell rates with 95 %% intervals")
    p_sum.add_argument("--grid", help="only the cells of this grid (needs its plan file)")
    sub.add_parser("tables", help="list the views and their columns")
    args = parser.parse_args(argv)

    if args.command == "summary":
        cells = None
        if args.grid:
            from pipeline.plan import read_plan

            cells = read_plan(args.data_dir, args.grid)
        print(render(summary(args.data_dir, cells)))
        return 0
    con = connect(args.data_dir)
    if args.command == "tables":
        for table in RESULT_TABLES:
            cols = con.sql(f"DESCRIBE {table}").fetchall()
            print(f"{table}: " + ", ".join(f"{c[0]} {c[1]}" for c in cols))
        return 0
    try:
        result = con.sql(args.query)
    except duckdb.Error as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if result is None:
        return 0
    if args.csv:
        result.df().to_csv(sys.stdout, index=False)
    else:
        print(result.df().to_string(index=False, max_colwidth=60))
    return 0


if __name__ == "__main__":
    sys.exit(main())
