"""Speed of the analysis: the per-cell summary over 1,000,000 episodes, and the report.

    python -m analysis.bench [--data-dir data] [--rows 1000000]

`run_all()` returns the figures (seconds) with their targets:
- `summary_1m_s`: `analysis.summary.summary` (DuckDB over the shards, then statsmodels'
  intervals) over `rows` synthetic episode rows in 240 cells, best of 3 on a fresh
  connection each time (`summary_1m_first_s`: the first, cold run). Target <= 1 s.
- `report_default_s`: `build_report` for the default grid. It reads `<data>` when that
  holds every cell of the default grid's plan; otherwise a synthetic stand-in with the
  default grid's cells and query count (LLM cells need a model server to run for real).
  Target <= 30 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.report.build import build_report
from analysis.summary import summary
from analysis.synthetic import write_episodes
from pipeline.cells import Layout, data_root
from pipeline.plan import load_plan, read_plan

SUMMARY_TARGET_S = 1.0
REPORT_TARGET_S = 30.0


def summary_figures(rows: int = 1_000_000, *, progress: bool = True) -> dict[str, Any]:
    agents = {(f"m{i // 4}", f"agent{i % 4}"): 0.2 + 0.07 * i for i in range(10)}
    levels, seeds = (1, 2, 3, 4), (0, 1, 2, 3, 4, 5)
    per_cell = max(1, rows // (len(agents) * len(levels) * len(seeds)))
    with tempfile.TemporaryDirectory(prefix="netgauge-bench-") as tmp:
        write_episodes(
            tmp,
            agents,
            app="synth",
            levels=levels,
            seeds=seeds,
            queries=per_cell,
            progress=progress,
        )
        times = []
        for _ in range(3):
            started = time.perf_counter()
            table = summary(tmp)
            times.append(time.perf_counter() - started)
        total = int(table["n"].sum())
    return {
        "summary_rows": total,
        "summary_cells": len(table),
        "summary_1m_first_s": round(times[0], 3),
        "summary_1m_s": round(min(times), 3),
        "target_summary_1m_s": SUMMARY_TARGET_S,
    }


def _default_grid_ready(data: Path) -> bool:
    layout = Layout(data)
    if not layout.plan("default").exists():
        return False
    return all(layout.episodes(cell).exists() for cell in read_plan(data, "default"))


def report_figures(data_dir: str | Path = "data", *, progress: bool = True) -> dict[str, Any]:
    data = data_root(data_dir)
    with tempfile.TemporaryDirectory(prefix="netgauge-bench-") as tmp:
        if _default_grid_ready(data):
            source, where, out = "data", data, Path(tmp) / "report"
        else:
            plan = load_plan("default", tmp)
            plan.write()
            accuracy = {
                (c.model, c.agent): {"oracle": 1.0, "null": 0.0}.get(c.agent, 0.4)
                for c in plan.cells
            }
            write_episodes(
                tmp,
                accuracy,
                app=plan.cells[0].app,
                queries=plan.cells[0].queries,
                levels=sorted({c.level for c in plan.cells}),
                seeds=sorted({c.seed for c in plan.cells}),
            )
            source, where, out = "synthetic stand-in for the default grid", Path(tmp), None
        started = time.perf_counter()
        build_report(where, "default", out_dir=out, progress=progress)
        elapsed = time.perf_counter() - started
    return {
        "report_source": source,
        "report_default_s": round(elapsed, 2),
        "target_report_default_s": REPORT_TARGET_S,
    }


def run_all(
    data_dir: str | Path = "data", *, rows: int = 1_000_000, progress: bool = True
) -> dict[str, Any]:
    """Every analysis speed figure (see the module docstring)."""
    return {
        **summary_figures(rows, progress=progress),
        **report_figures(data_dir, progress=progress),
    }


def bench(data: Path) -> dict[str, Any]:
    """The `pipeline.bench` entry (declared in analysis/__init__.py)."""
    return run_all(data)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data-dir", default="data", help="data directory (default: data)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="episode rows to summarise")
    args = parser.parse_args(argv)
    print(json.dumps(run_all(args.data_dir, rows=args.rows), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
