"""Everything the report shows, as tables: computed once from the result views.

`collect` runs the statistics of `analysis.stats` and `analysis.study` over the chosen
cells and returns a `ReportData`. A part whose data is not there yet (no episodes of a
NetLLMBench-style app, no `calls` table) holds None and the reason, which the page and
the figure show as "no data yet" instead of failing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import duckdb
import pandas as pd

from analysis import stats
from analysis.leaderboard import leaderboard
from analysis.questions import MissingData, ask_or_none, cell_filter
from analysis.report.episodes import CELL_KEY
from analysis.study import Study, query_count_study
from pipeline.cells import Cell
from pipeline.errors import DataError

log = logging.getLogger(__name__)

TASK_APP_PREFIX = "netllm"  # NetLLMBench's configuration tasks: iterations and tokens/s per task
# The task kinds' questions (analysis/sql/): each task scored and reported on its own.
KIND_QUESTIONS = ("by_task", "detection", "localization", "efficiency", "variety")


@dataclass
class ReportData:
    cells: pd.DataFrame  # per cell: rates with intervals, turns, latency, tokens
    agents: pd.DataFrame  # per app and agent, over levels
    overlap: pd.DataFrame  # per app, each pair of agents: interval overlap
    paired: pd.DataFrame  # per app, each pair of agents: McNemar and paired bootstrap
    operations: pd.DataFrame  # per app, agent and operation label
    outcomes: pd.DataFrame  # per app and agent: episodes per outcome
    studies: list[Study] = field(default_factory=list)
    study_notes: list[str] = field(default_factory=list)  # apps whose study could not run
    task_apps: list[str] = field(default_factory=list)
    iterations: pd.DataFrame | None = None  # per app, task and agent (from `steps`)
    iterations_missing: str | None = None
    throughput: pd.DataFrame | None = None  # per model call, with its task attempt's outcome
    throughput_missing: str | None = None
    capability: pd.DataFrame | None = None  # per app, agent, operation and size class
    capability_missing: str | None = None
    # pass@k and pass^k of cells played as repeated trials (analysis/sql/pass_at_k.sql)
    trials: pd.DataFrame | None = None
    trials_missing: str | None = None
    # KIND_QUESTIONS' answers: (table, None) or (None, why there is none yet)
    kinds: dict[str, tuple[pd.DataFrame | None, str | None]] = field(default_factory=dict)
    # analysis/leaderboard.py: every board (overall, per app, per task kind), in rank order
    leaderboard: pd.DataFrame = field(default_factory=pd.DataFrame)
    leaderboard_missing: str | None = None  # why there is none (no cost column yet)
    cost: pd.DataFrame | None = None  # per cell: cost in USD (analysis/sql/cell_cost.sql)
    cost_missing: str | None = None
    # a grid's report: the data directory's other cells (as `cells`), None without a grid
    other_cells: pd.DataFrame | None = None

    @property
    def empty(self) -> bool:
        return self.cells.empty


def collect(
    con: duckdb.DuckDBPyConnection,
    cells: Iterable[Cell] | None = None,
    *,
    task_apps: Sequence[str] | None = None,
    study_reps: int = 200,
    study_sizes: Sequence[int] | None = None,
    progress: bool = True,
) -> ReportData:
    """The report's tables over `cells` (every episode when None)."""
    cells = list(cells) if cells is not None else None
    data = ReportData(
        cells=_variant_agents(stats.cell_metrics(con, cells)),
        agents=stats.agent_rates(con, cells),
        overlap=stats.agent_overlap(con, cells),
        paired=stats.all_pairs(con, cells),
        operations=stats.by_operation(con, cells),
        outcomes=_outcomes(con, cells),
    )
    if cells is not None:
        every = _variant_agents(stats.cell_metrics(con, None))
        if not every.empty:
            mine = data.cells[list(CELL_KEY)].assign(_in=True) if not data.cells.empty else None
            if mine is not None:
                every = every.merge(mine, on=list(CELL_KEY), how="left")
                every = every[every["_in"].isna()].drop(columns="_in")
        data.other_cells = every.reset_index(drop=True)
    try:
        data.leaderboard = leaderboard(con, cells)
    except MissingData as err:  # results written before costs were recorded
        data.leaderboard_missing = str(err)
    data.cost, data.cost_missing = _nonempty(
        *ask_or_none(con, "cell_cost", where=cell_filter(cells)), "no episodes"
    )
    data.capability, data.capability_missing = ask_or_none(
        con, "capability", where=cell_filter(cells)
    )
    for name in KIND_QUESTIONS:
        data.kinds[name] = _nonempty(
            *ask_or_none(con, name, where=cell_filter(cells)), f"no {name} rows"
        )
    data.trials, data.trials_missing = _nonempty(
        *ask_or_none(con, "pass_at_k", where=cell_filter(cells)),
        "no cell played as repeated trials (a grid's trials: 2 or more)",
    )
    apps = sorted(data.agents["app"].unique()) if not data.agents.empty else []
    for app in apps:
        try:
            data.studies.append(
                query_count_study(
                    con, app, cells=cells, reps=study_reps, sizes=study_sizes, progress=progress
                )
            )
        except DataError as err:
            data.study_notes.append(f"{app}: {err}")
    if task_apps is None:
        task_apps = [a for a in apps if a.startswith(TASK_APP_PREFIX)]
    data.task_apps = list(task_apps)
    if not data.task_apps:
        reason = f"no episodes of a NetLLMBench configuration app ({TASK_APP_PREFIX}*) yet"
        data.iterations_missing = data.throughput_missing = reason
        return data
    params = {"apps": data.task_apps}
    where = cell_filter(cells)
    data.iterations, data.iterations_missing = _nonempty(
        *ask_or_none(con, "iterations_per_task", params, where=where), "no steps"
    )
    data.throughput, data.throughput_missing = _nonempty(
        *ask_or_none(con, "call_throughput", params, where=where), "no model calls recorded"
    )
    return data


def _variant_agents(frame: pd.DataFrame) -> pd.DataFrame:
    """Name an agent of a variant other than base "agent@variant", as the other questions do
    (analysis/sql/*.sql), so figures and tables keep the variants apart."""
    if frame.empty:
        return frame
    other = frame["variant"] != "base"
    return frame.assign(
        agent_name=frame["agent"],  # as stored: the cell's key (its episode pages' folder)
        agent=frame["agent"].where(~other, frame["agent"] + "@" + frame["variant"]),
    )


def _outcomes(con: duckdb.DuckDBPyConnection, cells: list[Cell] | None) -> pd.DataFrame:
    frame, _ = ask_or_none(con, "outcome_mix", where=cell_filter(cells))
    return frame if frame is not None else pd.DataFrame()


def _nonempty(
    frame: pd.DataFrame | None, reason: str | None, empty_reason: str
) -> tuple[pd.DataFrame | None, str | None]:
    if frame is not None and frame.empty:
        return None, f"{empty_reason} for these apps yet"
    return frame, reason
