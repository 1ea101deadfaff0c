"""Statistics over the result views: rates with 95 % intervals, overlap, paired tests.

Every function takes a DuckDB connection from `pipeline.views.connect` and, optionally,
the cells to include (a grid's plan; all episodes when None). The counting is SQL (one
question per file in `analysis/sql/`); the intervals and tests come from maintained
libraries: statsmodels (`proportion_confint`: normal/SEM and Wilson; `mcnemar`) and
SciPy (`bootstrap`, paired). An agent is identified by (model, agent).

Columns added for a rate `<m>` (correct, safe): `<m>_rate`, `<m>_normal_lo/hi`,
`<m>_wilson_lo/hi`. Rates and intervals count what is independent: distinct queries
(`n_distinct`, by query key), a query played more than once counting once at the mean of
its plays; `n` is the number of episodes beside it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import duckdb
import numpy as np
import pandas as pd
from scipy.stats import bootstrap
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from analysis.questions import ask, cell_filter
from pipeline.cells import Cell

ALPHA = 0.05
METHODS = ("normal", "wilson")
EXACT_BELOW = 25  # discordant pairs under which McNemar's test uses the exact binomial


def intervals(successes: pd.Series, n: pd.Series, prefix: str) -> pd.DataFrame:
    """Rate and its normal (Wald/SEM, as NetArena) and Wilson 95 % intervals, as columns
    named `<prefix>_…`. Wilson's stays inside [0, 1] and is honest at 0 % and 100 %,
    where the normal interval collapses to a point."""
    out = pd.DataFrame(index=successes.index)
    out[f"{prefix}_rate"] = successes / n
    for method in METHODS:
        low, high = proportion_confint(successes, n, alpha=ALPHA, method=method)
        out[f"{prefix}_{method}_lo"] = pd.Series(low, index=successes.index).clip(0, 1)
        out[f"{prefix}_{method}_hi"] = pd.Series(high, index=successes.index).clip(0, 1)
    return out


def with_intervals(
    counts: pd.DataFrame, metrics: Iterable[str] = ("correct", "safe")
) -> pd.DataFrame:
    """`counts` (with `n_distinct` and `n_<metric>` columns, the latter summed over
    distinct queries) plus each metric's rate and intervals over the distinct queries."""
    if counts.empty:
        return counts
    parts = [counts]
    nobs = counts["n_distinct"].astype(float)
    for metric in metrics:
        parts.append(intervals(counts[f"n_{metric}"].astype(float), nobs, metric))
    return pd.concat(parts, axis=1)


def cell_metrics(
    con: duckdb.DuckDBPyConnection, cells: Iterable[Cell] | None = None
) -> pd.DataFrame:
    """Per cell: correctness and safety with intervals, mean turns, latency, tokens, tokens/s."""
    return with_intervals(ask(con, "cell_metrics", where=cell_filter(cells)))


def agent_rates(
    con: duckdb.DuckDBPyConnection, cells: Iterable[Cell] | None = None
) -> pd.DataFrame:
    """Per app and agent over all levels: correctness and safety with intervals."""
    return with_intervals(ask(con, "agent_rates", where=cell_filter(cells)))


def by_operation(
    con: duckdb.DuckDBPyConnection, cells: Iterable[Cell] | None = None
) -> pd.DataFrame:
    """Per app, agent and operation label: correctness and safety with intervals."""
    return with_intervals(ask(con, "by_operation", where=cell_filter(cells)))


def interval_overlap(con: duckdb.DuckDBPyConnection, table: pd.DataFrame) -> pd.DataFrame:
    """Pairwise overlap of the intervals in `table` (columns grp, app, model, agent, lo, hi),
    per group and app; see `analysis/sql/interval_overlap.sql` for the definition."""
    frame = table[["grp", "app", "model", "agent", "lo", "hi"]]
    con.register("intervals", frame)
    try:
        return ask(con, "interval_overlap")
    finally:
        con.unregister("intervals")


def agent_overlap(
    con: duckdb.DuckDBPyConnection,
    cells: Iterable[Cell] | None = None,
    *,
    metric: str = "correct",
    method: str = "wilson",
) -> pd.DataFrame:
    """Per app, every pair of agents: their `metric` rates, intervals and overlap."""
    if method not in METHODS:
        raise ValueError(f"method={method!r}; choose one of: {', '.join(METHODS)}")
    rates = agent_rates(con, cells)
    if rates.empty:
        return pd.DataFrame()
    frame = rates.assign(
        grp=0, lo=rates[f"{metric}_{method}_lo"], hi=rates[f"{metric}_{method}_hi"]
    )
    return interval_overlap(con, frame).drop(columns="grp")


@dataclass(frozen=True)
class Paired:
    """Two agents on the same queries: McNemar's test and a paired bootstrap of the difference."""

    app: str
    a: str  # "model/agent"
    b: str
    n: int
    both_correct: int
    only_a: int
    only_b: int
    neither: int
    rate_a: float
    rate_b: float
    diff: float  # rate_a - rate_b
    diff_lo: float  # 95 % paired-bootstrap interval of the difference
    diff_hi: float
    mcnemar_statistic: float
    mcnemar_p: float
    exact: bool  # the exact (binomial) form of McNemar's test was used

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def paired(
    con: duckdb.DuckDBPyConnection,
    app: str,
    a: tuple[str, str],
    b: tuple[str, str],
    cells: Iterable[Cell] | None = None,
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> Paired:
    """Compare agents `a` and `b` ((model, agent) each) on the queries of `app` both played."""
    counts = paired_counts(con, app, a, b, cell_filter(cells))
    return compare(app, a, b, counts, resamples=resamples, seed=seed)


PAIRED_COUNTS = ("both_correct", "only_a", "only_b", "neither")


def paired_counts(
    con: duckdb.DuckDBPyConnection,
    app: str,
    a: tuple[str, str],
    b: tuple[str, str],
    where: str = "TRUE",
) -> tuple[int, int, int, int]:
    """The `paired_outcomes` 2 x 2 table of `a` and `b` on `app`'s episodes matching `where`:
    (both correct, only a, only b, neither)."""
    params = {"app": app, "model_a": a[0], "agent_a": a[1], "model_b": b[0], "agent_b": b[1]}
    row = ask(con, "paired_outcomes", params, where=where).iloc[0]
    n11, n10, n01, n00 = (int(row[k]) for k in PAIRED_COUNTS)
    return n11, n10, n01, n00


def compare(
    app: str,
    a: tuple[str, str],
    b: tuple[str, str],
    counts: tuple[int, int, int, int],
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> Paired:
    """McNemar's test and the paired bootstrap on a 2 x 2 table of `a` against `b` (the
    tables of several apps may be summed: their queries are distinct)."""
    n11, n10, n01, n00 = counts
    n = n11 + n10 + n01 + n00
    exact = n10 + n01 < EXACT_BELOW
    if n:
        test = mcnemar([[n11, n10], [n01, n00]], exact=exact, correction=True)
        statistic, p = float(test.statistic), float(test.pvalue)
        rate_a, rate_b = (n11 + n10) / n, (n11 + n01) / n
    else:
        statistic = p = rate_a = rate_b = float("nan")
    lo, hi = _paired_bootstrap(n11, n10, n01, n00, resamples, seed)
    return Paired(
        app,
        "/".join(a),
        "/".join(b),
        n,
        n11,
        n10,
        n01,
        n00,
        rate_a,
        rate_b,
        rate_a - rate_b,
        lo,
        hi,
        statistic,
        p,
        exact,
    )


def _paired_bootstrap(
    n11: int, n10: int, n01: int, n00: int, resamples: int, seed: int
) -> tuple[float, float]:
    """95 % percentile interval of the paired difference in correctness (SciPy's bootstrap)."""
    n = n11 + n10 + n01 + n00
    if n == 0:
        return float("nan"), float("nan")
    a = np.repeat([1.0, 1.0, 0.0, 0.0], [n11, n10, n01, n00])
    b = np.repeat([1.0, 0.0, 1.0, 0.0], [n11, n10, n01, n00])
    diffs = a - b
    if np.ptp(diffs) == 0:  # every pair differs alike: no resample can differ either
        return float(diffs[0]), float(diffs[0])
    result = bootstrap(
        (a, b),
        lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=resamples,
        confidence_level=1 - ALPHA,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def all_pairs(
    con: duckdb.DuckDBPyConnection, cells: Iterable[Cell] | None = None, **kwargs: int
) -> pd.DataFrame:
    """`paired` for every pair of agents of every app (one row each)."""
    rates = agent_rates(con, cells)
    rows = []
    for app, group in rates.groupby("app", sort=True) if not rates.empty else []:
        agents = sorted(zip(group["model"], group["agent"], strict=True))
        for a, b in itertools.combinations(agents, 2):
            rows.append(paired(con, str(app), a, b, cells, **kwargs).as_dict())
    return pd.DataFrame(rows)
