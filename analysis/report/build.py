"""`build_report`: the static report page of a data directory (or of one grid's cells).

<data>/report/index.html          the page (open it in any browser, no server needed)
<data>/report/figures/<name>.png  every plot, also as a file
<data>/report/tables/<name>.csv   the tables behind the page
<data>/report/episodes/…          a page per episode and a list per cell (episodes.py)
<data>/report/.netgauge-report.json  what it wrote: the next report removes what it does
                                   not write again, and nothing else (owned.py)
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tqdm import tqdm

from analysis.report import figures
from analysis.report.data import ReportData, collect
from analysis.report.episodes import write_episode_pages
from analysis.report.owned import prune
from analysis.report.page import render
from pipeline.cells import data_root
from pipeline.files import write_whole
from pipeline.plan import read_plan
from pipeline.records import code_version
from pipeline.views import connect

log = logging.getLogger(__name__)


def report_dir(data_dir: str | Path) -> Path:
    return data_root(data_dir) / "report"


def _plots(data: ReportData) -> dict[str, Callable[[Path], Path]]:
    return {
        "intervals": lambda p: figures.intervals(data.agents, p),
        "query_count": lambda p: figures.query_count(data.studies, p),
        "levels": lambda p: figures.levels(data.cells, p),
        "operations": lambda p: figures.operations(data.operations, p),
        "capability": lambda p: figures.capability(data.capability, data.capability_missing, p),
        "outcomes": lambda p: figures.outcomes(data.outcomes, p),
        "iterations": lambda p: figures.iterations_per_task(
            data.iterations, data.iterations_missing, p
        ),
        "tokens_per_s": lambda p: figures.tokens_per_s(data.throughput, data.throughput_missing, p),
    }


def _tables(data: ReportData) -> dict[str, object]:
    tables: dict[str, object] = {
        "cells": data.cells,
        "agents": data.agents,
        "overlap": data.overlap,
        "paired": data.paired,
        "operations": data.operations,
        "capability": data.capability,
        "outcomes": data.outcomes,
        "iterations_per_task": data.iterations,
        "call_throughput": data.throughput,
        "pass_at_k": data.trials,
        "leaderboard": data.leaderboard,
        "cell_cost": data.cost,
        "other_cells": data.other_cells,
    }
    for name, (frame, _) in data.kinds.items():
        tables[name] = frame
    for study in data.studies:
        tables[f"study_{study.app}_agents"] = study.per_agent
        tables[f"study_{study.app}_pairs"] = study.pairs
    return tables


def build_report(
    data_dir: str | Path = "data",
    grid: str | None = None,
    *,
    out_dir: str | Path | None = None,
    task_apps: Sequence[str] | None = None,
    study_reps: int = 200,
    progress: bool = True,
) -> Path:
    """Write the report over `grid`'s cells (every episode when None); return index.html."""
    cells = None
    if grid is not None:
        cells = read_plan(data_dir, grid)
    out = Path(out_dir) if out_dir is not None else report_dir(data_dir)
    con = connect(data_dir)
    data = collect(con, cells, task_apps=task_apps, study_reps=study_reps, progress=progress)
    files: dict[str, Path] = {}
    if not data.agents.empty:
        figures.set_palette(list(figures.labels(data.agents)))
    plots = _plots(data)
    for name, plot in tqdm(plots.items(), desc="report figures", unit="fig", disable=not progress):
        files[name] = plot(out / "figures" / f"{name}.png")
    (out / "tables").mkdir(parents=True, exist_ok=True)
    written = list(files.values())
    for name, table in _tables(data).items():
        if table is not None and not table.empty:  # type: ignore[attr-defined]
            table.to_csv(out / "tables" / f"{name}.csv", index=False)  # type: ignore[attr-defined]
            written.append(out / "tables" / f"{name}.csv")
    # Every cell's episodes, the grid's and the others it lists (data.other_cells).
    started = time.perf_counter()
    pages = write_episode_pages(con, None, out)
    took = time.perf_counter() - started
    log.info(
        "episode pages: %d episodes of %d cells, %.1f MB in %.2f s",
        pages.episodes,
        pages.cells,
        pages.bytes / 1e6,
        took,
    )
    meta = {
        "grid": grid or "all results",
        "data": str(data_root(data_dir)),
        "cells": str(len(data.cells)),
        "episodes": str(int(data.cells["n"].sum()) if not data.cells.empty else 0),
        "code version": code_version(),
        "written": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    index = out / "index.html"
    write_whole(index, render(data, files, meta))
    # What the last report here wrote and this one did not (an episode gone from the data).
    removed = prune(out, [*written, *pages.files, index])
    log.info("wrote %s; removed %d files of the last report it no longer has", index, len(removed))
    return index
