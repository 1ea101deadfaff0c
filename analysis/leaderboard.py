"""The leaderboard: model x agent ranked overall, per app and per task kind by a composite.

Each board pools the distinct queries of its group (`overall`: every app and task kind;
`app`: one app; `task`: one task kind over every app). Per distinct query an agent's
composite is `sum(weight x metric)` over the means of its plays (metrics: `correct`,
`safe`, `score`; the default is NetArena's rule, 0.5 correct + 0.5 safe). The composite's
95 % interval is Wilson's score interval of its mean over the distinct queries: a
per-query value in [0, 1] with mean m has a variance of at most m(1 - m), so the binomial
interval is conservative for it (and exact when the composite is one 0/1 metric).

Agents are ordered by composite, ties broken by fewer turns per episode (NetArena's
iterations), then by name. Neighbours are told apart (a new rank *band*) when their
composite intervals do not overlap; when they overlap, by the paired test NetGauge has
(`analysis/sql/paired_outcomes.sql`, McNemar's test and the paired bootstrap of
`analysis.stats`) on the queries both played, which compares correctness: it separates
them only when p < 0.05, the bootstrap interval excludes 0, and it agrees with their
order. Otherwise they share a band. `vs_next` says which decided.

Efficiency columns count episodes: turns, tokens, seconds (the environment's and the
agent's) and USD per episode and per correct episode. Tokens are over the episodes that
reported them; USD is null unless every episode's cost is known (`episodes.cost_usd`).
An episode that ended as `cost_limit` was not played and counts as neither correct nor
free: it is in the board as a failure, at no cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import duckdb
import pandas as pd

from analysis.questions import ask, cell_filter
from analysis.stats import ALPHA, compare, intervals
from pipeline.cells import Cell
from pipeline.errors import ConfigError

METRICS = ("correct", "safe", "score")
SCOPES = ("overall", "app", "task")
_SUMS = ("episodes", "correct_episodes", "turns", "tokens", "seconds", "cost_usd", "priced")


@dataclass(frozen=True)
class Composite:
    """Weights of the per-query metrics; they are >= 0 and sum to 1, so the composite is
    in [0, 1]."""

    weights: tuple[tuple[str, float], ...] = (("correct", 0.5), ("safe", 0.5))

    @classmethod
    def parse(cls, text: str) -> Composite:
        """`correct=0.5,safe=0.5`; ConfigError naming what is wrong."""
        weights = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            try:
                weight = float(value)
            except ValueError:
                weight = -1.0
            if not sep or name.strip() not in METRICS or weight < 0:
                raise ConfigError(
                    f"composite term {part!r}: expected metric=weight with a metric of "
                    f"{', '.join(METRICS)} and a weight >= 0, e.g. correct=0.5,safe=0.5"
                )
            weights.append((name.strip(), weight))
        composite = cls(tuple(weights))
        total = sum(w for _, w in weights)
        if not weights or abs(total - 1) > 1e-9:
            raise ConfigError(f"composite weights must sum to 1; {text!r} sums to {total:g}")
        return composite

    @property
    def label(self) -> str:
        return " + ".join(f"{w:g}·{m}" for m, w in self.weights)

    def of(self, frame: pd.DataFrame) -> pd.Series:
        return sum((w * frame[m] for m, w in self.weights), pd.Series(0.0, index=frame.index))


def leaderboard(
    con: duckdb.DuckDBPyConnection,
    cells: Iterable[Cell] | None = None,
    *,
    composite: Composite = Composite(),
    scopes: Sequence[str] = SCOPES,
    resamples: int = 2000,
) -> pd.DataFrame:
    """Every board of `scopes`, one row per (board, model, agent), in rank order."""
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise ConfigError(
            f"unknown board(s) {', '.join(unknown)}; choose from: {', '.join(SCOPES)}"
        )
    where = cell_filter(cells)
    rows = ask(con, "leaderboard", where=where)
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(composite=composite.of(rows))
    boards = []
    for scope in scopes:
        groups = [("all", rows)] if scope == "overall" else rows.groupby(scope, sort=True)
        for group, part in groups:
            board = _board(part).assign(scope=scope, group=str(group))
            boards.append(_bands(board, part, resamples))
    out = pd.concat(boards, ignore_index=True)
    first = ["scope", "group", "rank", "band", "model", "agent"]
    return out[first + [c for c in out.columns if c not in first]]


def _board(part: pd.DataFrame) -> pd.DataFrame:
    per = part.groupby(["model", "agent"], sort=False)
    counts = per.agg(
        n_distinct=("qkey", "size"),
        composite_sum=("composite", "sum"),
        n_correct=("correct", "sum"),
        n_safe=("safe", "sum"),
        mean_score=("score", "mean"),
        reported=("tokens", "count"),
        **{c: (c, "sum") for c in _SUMS},
    )
    nobs = counts["n_distinct"].astype(float)
    board = pd.concat(
        [
            counts,
            intervals(counts["composite_sum"], nobs, "composite"),
            intervals(counts["n_correct"], nobs, "correct"),
            intervals(counts["n_safe"], nobs, "safe"),
        ],
        axis=1,
    ).reset_index()
    board["tokens"] = board["tokens"].where(board["reported"] > 0)  # none reported: null
    eps = board["episodes"]
    board["turns_per_episode"] = board["turns"] / eps
    board["tokens_per_episode"] = (board["tokens"] / eps).where(board["reported"] > 0)
    board["seconds_per_episode"] = board["seconds"] / eps
    known = board["priced"] == eps
    board["usd_per_episode"] = (board["cost_usd"] / eps).where(known)
    solved = board["correct_episodes"].where(board["correct_episodes"] > 0)
    board["turns_per_correct"] = board["turns"] / solved
    board["tokens_per_correct"] = (board["tokens"] / solved).where(board["reported"] > 0)
    board["seconds_per_correct"] = board["seconds"] / solved
    board["usd_per_correct"] = (board["cost_usd"] / solved).where(known)
    board = board.sort_values(
        ["composite_rate", "turns_per_episode", "model", "agent"],
        ascending=[False, True, True, True],
        kind="stable",
    ).reset_index(drop=True)
    board["rank"] = range(1, len(board) + 1)
    return board.drop(columns=["composite_sum", "reported", "priced"])


def _bands(board: pd.DataFrame, part: pd.DataFrame, resamples: int) -> pd.DataFrame:
    """Rank bands down the board, and what told each agent from the next (module doc)."""
    bands, notes, band = [1], [], 1
    for i in range(len(board) - 1):
        upper, lower = board.iloc[i], board.iloc[i + 1]
        apart, note = _apart(upper, lower, part, resamples)
        band += apart
        bands.append(band)
        notes.append(note)
    return board.assign(band=bands, vs_next=[*notes, ""])


def _paired(part: pd.DataFrame, a: tuple[str, str], b: tuple[str, str]) -> tuple[int, ...]:
    """The 2 x 2 table of `a` against `b` on the distinct queries of the board both played,
    from its own per-query rows (so a cell's repeated trials count as one agent): an agent
    is correct on a query when at least half of its plays were (as `paired_outcomes`)."""

    def side(who: tuple[str, str]) -> pd.Series:
        rows = part[(part["model"] == who[0]) & (part["agent"] == who[1])]
        return rows.groupby(["app", "qkey"])["correct"].mean() >= 0.5

    both = pd.concat([side(a).rename("a"), side(b).rename("b")], axis=1, join="inner")
    x, y = both["a"].astype(bool), both["b"].astype(bool)
    return int((x & y).sum()), int((x & ~y).sum()), int((~x & y).sum()), int((~x & ~y).sum())


def _apart(
    upper: pd.Series, lower: pd.Series, part: pd.DataFrame, resamples: int
) -> tuple[bool, str]:
    if upper["composite_wilson_lo"] > lower["composite_wilson_hi"]:
        return True, "intervals apart"
    a, b = (upper["model"], upper["agent"]), (lower["model"], lower["agent"])
    counts = _paired(part, a, b)
    if sum(counts) == 0:
        return False, "overlap; no shared query"
    apps = "+".join(sorted(part["app"].unique()))
    test = compare(apps, a, b, counts, resamples=resamples)  # type: ignore[arg-type]
    apart = test.mcnemar_p < ALPHA and test.diff_lo > 0
    verdict = "apart" if apart else "tied"
    return apart, f"overlap; paired {verdict} (McNemar p={test.mcnemar_p:.3g}, n={test.n})"


def render(board: pd.DataFrame, composite: Composite = Composite()) -> str:
    """The boards as fixed-width text, one block per board."""
    if board.empty:
        return "(no episodes yet)"
    blocks = []
    for (scope, group), part in board.groupby(["scope", "group"], sort=False):
        title = "overall" if scope == "overall" else f"{scope} = {group}"
        blocks.append(f"## {title}  (composite: {composite.label})\n{_text(part)}")
    return "\n\n".join(blocks)


def display(part: pd.DataFrame) -> pd.DataFrame:
    """One board's columns as shown (the report and the console)."""
    return pd.DataFrame(
        {
            "rank": part["rank"],
            "band": part["band"],
            "model": part["model"],
            "agent": part["agent"],
            "composite [Wilson 95%]": _rate(part, "composite"),
            "correct [Wilson 95%]": _rate(part, "correct"),
            "safe [Wilson 95%]": _rate(part, "safe"),
            "distinct": part["n_distinct"],
            "n": part["episodes"],
            "turns/ep": part["turns_per_episode"].map(lambda v: _num(v, 2)),
            "tokens/ep": part["tokens_per_episode"].map(lambda v: _num(v, 0)),
            "s/ep": part["seconds_per_episode"].map(lambda v: _num(v, 3)),
            "USD/ep": part["usd_per_episode"].map(_usd),
            "tokens/correct": part["tokens_per_correct"].map(lambda v: _num(v, 0)),
            "s/correct": part["seconds_per_correct"].map(lambda v: _num(v, 3)),
            "USD/correct": part["usd_per_correct"].map(_usd),
            "vs next": part["vs_next"],
        }
    )


def _text(part: pd.DataFrame) -> str:
    return display(part).to_string(index=False)


def _rate(part: pd.DataFrame, metric: str) -> list[str]:
    return [
        f"{100 * r:5.1f}% [{100 * lo:5.1f}, {100 * hi:5.1f}]"
        for r, lo, hi in zip(
            part[f"{metric}_rate"],
            part[f"{metric}_wilson_lo"],
            part[f"{metric}_wilson_hi"],
            strict=True,
        )
    ]


def _num(value: float, digits: int) -> str:
    return "–" if pd.isna(value) else f"{value:.{digits}f}"


def _usd(value: float) -> str:
    return "–" if pd.isna(value) else f"{value:.4g}"
