"""Per-cell summary: n, correctness and safety with 95 % intervals, turns, latency.

The numbers are `analysis.stats.cell_metrics` (the `cell_metrics` question, with normal
and Wilson intervals from statsmodels); this module renders them as the table a sweep
prints and writes them next to the plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.stats import cell_metrics, intervals
from pipeline.cells import Cell, Layout, data_root
from pipeline.files import replacing
from pipeline.plan import read_plan
from pipeline.views import connect

__all__ = ["intervals", "render", "summarize_plan", "summary"]


def summary(data_dir: str | Path = "data", cells: Iterable[Cell] | None = None) -> pd.DataFrame:
    """One row per (app, model, agent, level, queries, variant) over the given cells (all,
    if None); seeds are pooled."""
    return cell_metrics(connect(data_dir), cells)


def render(table: pd.DataFrame) -> str:
    """A readable fixed-width table (the sweep prints it; the .md file holds it). The
    query count and the variant are shown when the table holds more than one of them
    (or a variant other than base); `n` counts episodes, `distinct` the distinct queries
    the rates and intervals are computed over."""
    if table.empty:
        return "(no episodes yet)"
    show_queries = table["queries"].nunique() > 1
    show_variant = set(table["variant"]) != {"base"}
    show_task = set(table["task"]) != {"mitigate"}  # a score only where a task has one
    rows = []
    for r in table.itertuples(index=False):
        rows.append(
            {
                "app": r.app,
                "model": r.model,
                "agent": r.agent,
                "level": r.level,
                **({"queries": r.queries} if show_queries else {}),
                **({"variant": r.variant} if show_variant else {}),
                **({"task": r.task} if show_task else {}),
                "n": r.n,
                "distinct": r.n_distinct,
                "correct [normal 95%] [wilson 95%]": _rate(
                    r.correct_rate,
                    r.correct_normal_lo,
                    r.correct_normal_hi,
                    r.correct_wilson_lo,
                    r.correct_wilson_hi,
                ),
                "safe [normal 95%] [wilson 95%]": _rate(
                    r.safe_rate,
                    r.safe_normal_lo,
                    r.safe_normal_hi,
                    r.safe_wilson_lo,
                    r.safe_wilson_hi,
                ),
                **({"score": f"{r.mean_score:.3f}"} if show_task else {}),
                "turns": f"{r.mean_turns:.2f}",
                "latency_s": f"{r.mean_latency_s:.4f}",
                "outcomes": r.outcomes,
            }
        )
    return pd.DataFrame(rows).to_string(index=False)


def variant_legend(con, table: pd.DataFrame) -> list[tuple[str, str]]:
    """(variant, the settings that make it) for each variant other than base in `table`."""
    names = sorted(set(table["variant"]) - {"base"}) if not table.empty else []
    if not names:
        return []
    found = dict(
        con.execute(
            "SELECT variant, any_value(variant_label) FROM cells "
            "WHERE list_contains($names, variant) GROUP BY variant",
            {"names": names},
        ).fetchall()
    )
    return [(name, found.get(name, "(not recorded)")) for name in names]


def _rate(rate: float, nlo: float, nhi: float, wlo: float, whi: float) -> str:
    return (
        f"{100 * rate:5.1f}% [{100 * nlo:5.1f}, {100 * nhi:5.1f}]"
        f" [{100 * wlo:5.1f}, {100 * whi:5.1f}]"
    )


def summarize_plan(data_dir: str | Path, grid: str) -> str:
    """Summarise a grid's cells; write the summary shard and text; return the text."""
    layout = Layout(data_root(data_dir))
    table = summary(data_dir, read_plan(data_dir, grid))
    path = layout.summary(grid)
    with replacing(path) as tmp:
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), tmp)
    text = f"NetGauge summary, grid '{grid}' ({len(table)} rows)\n\n{render(table)}\n"
    legend = variant_legend(connect(data_dir), table)
    if legend:
        text += "\nvariants:\n" + "\n".join(f"  {name}: {label}" for name, label in legend) + "\n"
    layout.summary_text(grid).write_text(text)
    return text
