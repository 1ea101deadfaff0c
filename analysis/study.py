"""The query-count study (NetArena's Fig. 3): intervals and their overlap as queries grow.

From one large run (every agent on the same N distinct queries of an app, by query key:
a query played twice is one draw, at the mean of its plays), draw `reps` random subsets
of n of them for each n in `sizes` (without replacement, the same subset for every
agent, so the comparison stays paired), compute each agent's 95 % interval on the
subset, and the pairwise overlap of those intervals (`analysis/sql/interval_overlap.sql`).
With few queries the intervals are wide and overlap; with many they separate.

    study = query_count_study(connect("data"), "malt", sizes=(50, 500, 5000))
    study.per_agent   # app, model, agent, queries, rate, lo, hi, width (means over reps)
    study.pairs       # app, queries, model_a, agent_a, model_b, agent_b,
                      # mean_overlap, max_overlap, share_overlapping
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint
from tqdm import tqdm

from analysis.questions import ask, cell_filter
from analysis.stats import ALPHA, METHODS, interval_overlap
from pipeline.cells import Cell
from pipeline.errors import DataError

LADDER = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)


@dataclass(frozen=True)
class Study:
    app: str
    queries: int  # queries every studied agent played (the pool subsets are drawn from)
    method: str
    per_agent: pd.DataFrame
    pairs: pd.DataFrame


def outcome_matrix(
    con: duckdb.DuckDBPyConnection,
    app: str,
    agents: Sequence[tuple[str, str]] | None = None,
    cells: Iterable[Cell] | None = None,
) -> pd.DataFrame:
    """Distinct queries (by key) x agents ("model/agent") of correctness in [0, 1]: who got
    which query right (the mean over plays of a query played more than once). Only the
    queries every chosen agent played are kept."""
    long = ask(con, "query_outcomes", {"app": app}, where=cell_filter(cells))
    if agents is not None:
        wanted = {f"{m}/{a}" for m, a in agents}
        long = long[(long["model"] + "/" + long["agent"]).isin(wanted)]
    if long.empty:
        return pd.DataFrame()
    long = long.assign(who=long["model"] + "/" + long["agent"])
    wide = long.pivot_table(index="qkey", columns="who", values="correct", aggfunc="mean")
    return wide.dropna().astype(float)


def default_sizes(queries: int) -> list[int]:
    """Steps of the 1-2-5 ladder below `queries`, and `queries` itself."""
    return [s for s in LADDER if s < queries] + [queries]


def query_count_study(
    con: duckdb.DuckDBPyConnection,
    app: str,
    *,
    agents: Sequence[tuple[str, str]] | None = None,
    cells: Iterable[Cell] | None = None,
    sizes: Sequence[int] | None = None,
    reps: int = 200,
    method: str = "wilson",
    seed: int = 0,
    progress: bool = True,
) -> Study:
    """Subsample one large run of `app` at each size in `sizes` (default: a 1-2-5 ladder up
    to every query); sizes above the number of shared queries are dropped."""
    if method not in METHODS:
        raise ValueError(f"method={method!r}; choose one of: {', '.join(METHODS)}")
    matrix = outcome_matrix(con, app, agents, cells)
    if matrix.empty or matrix.shape[1] < 1:
        raise DataError(f"no episodes of app '{app}' (with the chosen agents) to study")
    total = len(matrix)
    chosen = sorted({int(s) for s in (sizes or default_sizes(total)) if 0 < int(s) <= total})
    if not chosen:
        raise DataError(f"app '{app}' has {total} shared queries, fewer than every size asked")
    values = matrix.to_numpy()
    labels = list(matrix.columns)
    rng = np.random.default_rng(seed)
    frames = []
    for size in tqdm(chosen, desc=f"query-count study {app}", unit="size", disable=not progress):
        draws = 1 if size == total else reps  # every subset of all queries is the same
        order = rng.permuted(np.tile(np.arange(total), (draws, 1)), axis=1)[:, :size]
        successes = values[order].sum(axis=1)  # draws x agents
        lo, hi = proportion_confint(successes, size, alpha=ALPHA, method=method)
        frames.append(
            pd.DataFrame(
                {
                    "queries": size,
                    "rep": np.repeat(np.arange(draws), len(labels)),
                    "who": np.tile(labels, draws),
                    "rate": (successes / size).ravel(),
                    "lo": np.clip(lo, 0, 1).ravel(),
                    "hi": np.clip(hi, 0, 1).ravel(),
                }
            )
        )
    draws_table = pd.concat(frames, ignore_index=True)
    draws_table[["model", "agent"]] = draws_table["who"].str.split("/", n=1, expand=True)
    draws_table["app"] = app
    draws_table["width"] = draws_table["hi"] - draws_table["lo"]
    per_agent = (
        draws_table.groupby(["app", "model", "agent", "queries"], as_index=False)[
            ["rate", "lo", "hi", "width"]
        ]
        .mean()
        .sort_values(["app", "model", "agent", "queries"], ignore_index=True)
    )
    return Study(app, total, method, per_agent, _pair_overlap(con, draws_table))


def _pair_overlap(con: duckdb.DuckDBPyConnection, draws: pd.DataFrame) -> pd.DataFrame:
    keys = draws[["queries", "rep"]].drop_duplicates().reset_index(drop=True)
    keys["grp"] = np.arange(len(keys))
    framed = draws.merge(keys, on=["queries", "rep"])
    overlap = interval_overlap(con, framed)
    if overlap.empty:
        return pd.DataFrame(
            columns=[
                "app",
                "queries",
                "model_a",
                "agent_a",
                "model_b",
                "agent_b",
                "mean_overlap",
                "max_overlap",
                "share_overlapping",
            ]
        )
    overlap = overlap.merge(keys, on="grp")
    return (
        overlap.assign(overlapping=overlap["overlap"] > 0)
        .groupby(["app", "queries", "model_a", "agent_a", "model_b", "agent_b"], as_index=False)
        .agg(
            mean_overlap=("overlap", "mean"),
            max_overlap=("overlap", "max"),
            share_overlapping=("overlapping", "mean"),
        )
    )
