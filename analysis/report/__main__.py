"""`python -m analysis.report`: write the static report page (what `snakemake report` runs).

python -m analysis.report --grid default [--data-dir data]
python -m analysis.report                      # every episode in the data directory
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from analysis.report.build import build_report
from pipeline import logs
from pipeline.errors import NetGaugeError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data-dir", default="data", help="data directory (default: data)")
    parser.add_argument("--grid", help="only this grid's cells (needs its plan file)")
    parser.add_argument("--out", help="output folder (default: <data>/report)")
    parser.add_argument(
        "--task-apps",
        help="comma-separated apps for the NetLLMBench task plots (default: apps named netllm*)",
    )
    parser.add_argument(
        "--study-reps", type=int, default=200, help="subsets per size in the query-count study"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    logs.configure()

    task_apps = [a for a in args.task_apps.split(",") if a] if args.task_apps else None
    try:
        index = build_report(
            args.data_dir,
            args.grid,
            out_dir=args.out,
            task_apps=task_apps,
            study_reps=args.study_reps,
            progress=not args.no_progress,
        )
    except (NetGaugeError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"report: {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
