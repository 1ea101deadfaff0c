"""`python -m analysis`: SQL over the result views, and the per-cell summary.

python -m analysis sql "SELECT agent, avg(correct::INT) FROM episodes GROUP BY agent"
python -m analysis summary [--grid smoke]
python -m analysis summarize --grid smoke            # what `snakemake summarize` runs
python -m analysis report --grid smoke               # what `snakemake report` runs
python -m analysis tables
python -m analysis questions                         # the SQL files of analysis/sql/
python -m analysis ask paired_outcomes -p app=malt -p model_a=none -p agent_a=oracle ...
python -m analysis export-inspect --where "app = 'malt'" --out logs/   # then `inspect view`
python -m analysis import-inspect logs/*.eval    # `inspect eval pipeline/inspect_task.py` logs
python -m analysis leaderboard [--grid smoke] [--by app,task] [--composite correct=1]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import duckdb

from analysis import leaderboard as board
from analysis.questions import MissingData, ask, cell_filter, names, question
from analysis.report.build import build_report
from analysis.summary import render, summarize_plan, summary
from pipeline import logs
from pipeline.errors import NetGaugeError
from pipeline.plan import read_plan
from pipeline.views import RESULT_TABLES, connect, tables


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
    p_write = sub.add_parser(
        "summarize", help="write a grid's summary: <data>/summaries/<grid>.{parquet,md}"
    )
    p_write.add_argument("--grid", required=True, help="the plan's name (conf/grid/*.yaml)")
    p_report = sub.add_parser("report", help="the static report page: <data>/report/index.html")
    p_report.add_argument("--grid", required=True, help="the plan's name (conf/grid/*.yaml)")
    sub.add_parser("tables", help="list the views and their columns")
    sub.add_parser("questions", help="list the SQL questions (analysis/sql/*.sql)")
    p_ask = sub.add_parser("ask", help="run one SQL question; print the result")
    p_ask.add_argument("name", help="question name (see `questions`)")
    p_ask.add_argument(
        "-p", "--param", action="append", default=[], help="parameter, e.g. -p app=malt"
    )
    p_ask.add_argument("--grid", help="only the cells of this grid (needs its plan file)")
    p_ask.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    p_inspect = sub.add_parser(
        "export-inspect",
        help="episodes as Inspect logs (one .eval file per cell) for `inspect view`",
        description="Write the episodes matching --where as inspect_ai logs, one .eval file "
        "per cell, with inspect_ai's own writer; then `inspect view --log-dir OUT`.",
    )
    p_inspect.add_argument(
        "--where", help="DuckDB condition over `episodes`, e.g. \"app = 'malt' AND NOT correct\""
    )
    p_inspect.add_argument("--out", required=True, help="folder of the .eval files")
    p_import = sub.add_parser(
        "import-inspect",
        help="logs of `inspect eval pipeline/inspect_task.py@netgauge` into the tables",
        description="Write the episodes of Inspect logs made by NetGauge's Inspect task into "
        "the data directory's episodes, steps, calls and cells shards (one cell per app, "
        "Inspect model, agent, level, seed, count and variant).",
    )
    p_import.add_argument("logs", nargs="+", help=".eval (or .json) log files")
    p_board = sub.add_parser(
        "leaderboard",
        help="model x agent ranked overall, per app and per task kind, with intervals",
        description="Rank every (model, agent) by a composite of its per-query metrics over "
        "distinct queries, with Wilson 95 % intervals; neighbours share a rank band unless "
        "their intervals are apart or the paired test (McNemar, paired bootstrap) tells them "
        "apart; efficiency per episode and per correct answer (turns, tokens, seconds, USD). "
        "See analysis/leaderboard.py.",
    )
    p_board.add_argument("--grid", help="only the cells of this grid (needs its plan file)")
    p_board.add_argument(
        "--by",
        default=",".join(board.SCOPES),
        help="boards to show, of: overall, app, task (default: all three)",
    )
    p_board.add_argument(
        "--composite",
        default="correct=0.5,safe=0.5",
        help="metric=weight terms summing to 1, metrics correct, safe, score "
        "(default: NetArena's correct=0.5,safe=0.5; ties: fewer turns per episode)",
    )
    p_board.add_argument("--csv", action="store_true", help="print every column as CSV")
    args = parser.parse_args(argv)
    try:
        return _dispatch(args)
    except (NetGaugeError, duckdb.Error) as err:  # a wrong name, grid, data dir or query
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2


def _one_line(err: Exception) -> str:
    """DuckDB's messages run over lines ("... does not exist!\nDid you mean ..."): one line."""
    return " ".join(line.strip() for line in str(err).splitlines() if line.strip())


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "questions":
        for name in names():
            print(f"{name}: {question(name).text}")
        return 0
    if args.command == "ask":
        return _ask(args)
    if args.command == "leaderboard":
        return _leaderboard(args)
    if args.command in ("summarize", "report"):
        return _write(args)
    if args.command == "export-inspect":
        from analysis.inspect_log import export_inspect  # inspect_ai takes 1 s to import

        for path in export_inspect(args.data_dir, args.where, args.out):
            print(path)
        return 0
    if args.command == "import-inspect":
        from analysis.inspect_import import import_inspect

        for cell in import_inspect(args.logs, args.data_dir):
            print(f"{cell.part}: imported")
        return 0

    if args.command == "summary":
        cells = None
        if args.grid:
            cells = read_plan(args.data_dir, args.grid)
        print(render(summary(args.data_dir, cells)))
        return 0
    con = connect(args.data_dir)
    if args.command == "tables":
        for table in tables(con):
            cols = con.sql(f"DESCRIBE {table}").fetchall()
            print(f"{table}: " + ", ".join(f"{c[0]} {c[1]}" for c in cols))
        return 0
    result = con.sql(args.query)
    if result is None:
        return 0
    if args.csv:
        result.df().to_csv(sys.stdout, index=False)
    else:
        print(result.df().to_string(index=False, max_colwidth=60))
    return 0


def _write(args: argparse.Namespace) -> int:
    """The DAG's last two stages: the summary files, then the report page."""
    logs.configure()
    try:
        if args.command == "summarize":
            print(summarize_plan(args.data_dir, args.grid))
        else:
            print(build_report(args.data_dir, args.grid))
    except NetGaugeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    composite = board.Composite.parse(args.composite)
    cells = read_plan(args.data_dir, args.grid) if args.grid else None
    scopes = [s.strip() for s in args.by.split(",") if s.strip()]
    table = board.leaderboard(connect(args.data_dir), cells, composite=composite, scopes=scopes)
    if args.csv:
        table.to_csv(sys.stdout, index=False)
    else:
        print(board.render(table, composite))
    return 0


def _ask(args: argparse.Namespace) -> int:
    params: dict[str, object] = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"error: expected key=value, got {item!r}", file=sys.stderr)
            return 2
        params[key] = value.split(",") if key == "apps" else value
    cells = None
    try:
        if args.grid:
            cells = read_plan(args.data_dir, args.grid)
        result = ask(connect(args.data_dir), args.name, params, where=cell_filter(cells))
    except MissingData as err:
        why = question(args.name).empty
        print(f"error: {err}" + (f": {why}" if why else ""), file=sys.stderr)
        return 2
    except (NetGaugeError, duckdb.Error) as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    if args.csv:
        result.to_csv(sys.stdout, index=False)
    elif result.empty or ("n" in result and not result["n"].any()):  # rows, or counts, of 0
        print(f"no rows: {question(args.name).why_empty}")
    else:
        print(result.to_string(index=False, max_colwidth=60))
    return 0


if __name__ == "__main__":
    sys.exit(main())
