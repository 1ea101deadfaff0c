"""The report's plots (matplotlib, Agg backend): one function per figure, one PNG each.

Every function takes the tables of `analysis.report.data.ReportData` and the PNG path
to write, and returns that path. An agent is labelled `agent` (reference agents) or
`agent · model`, with one colour per label across all figures. Figures whose data does
not exist yet are a clear "No data yet" panel with the reason (`no_data`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.study import Study

DPI = 100
OUTCOME_COLOURS = {
    "correct": "#2ca02c",
    "wrong": "#d62728",
    "parse_error": "#9467bd",
    "exec_error": "#ff7f0e",
    "timeout": "#8c564b",
    "resource_limit": "#e377c2",
    "score_error": "#bcbd22",
    "blocked": "#7f7f7f",
    "env_error": "#17becf",
}

# A task attempt's outcome (`call_throughput`): solved or not; a failed action keeps the
# colour of its status in OUTCOME_COLOURS.
ATTEMPT_COLOURS = {"solved": OUTCOME_COLOURS["correct"], "not solved": OUTCOME_COLOURS["wrong"]}


def label(model: str, agent: str) -> str:
    return agent if model == "none" else f"{agent} · {model}"


def labels(frame: pd.DataFrame, model: str = "model", agent: str = "agent") -> pd.Series:
    return pd.Series(
        [label(m, a) for m, a in zip(frame[model], frame[agent], strict=True)], index=frame.index
    )


_COLOURS: dict[str, tuple[float, ...]] = {}


def set_palette(names: Sequence[str]) -> None:
    """Fix one colour per agent label for every figure that follows."""
    cmap = plt.get_cmap("tab10")
    _COLOURS.clear()
    _COLOURS.update({name: cmap(i % 10) for i, name in enumerate(sorted(set(names)))})


def palette(names: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """The fixed colours (`set_palette`), extended for labels it did not name."""
    missing = sorted(set(names) - set(_COLOURS))
    if missing:
        set_palette([*_COLOURS, *missing])
    return dict(_COLOURS)


def _legend_below(ax: plt.Axes) -> None:
    """A legend under the axes, where it cannot hide a 100 % bar or a point."""
    handles, names = ax.get_legend_handles_labels()
    ax.legend(
        handles,
        names,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12),
        ncol=min(len(names), 4),
        frameon=False,
    )


def _size_axis(ax: plt.Axes, sizes: Sequence[int]) -> None:
    ax.set_xscale("log")
    ax.set_xticks(list(sizes), [str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("queries per agent (subsampled)")


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def no_data(path: Path, title: str, reason: str) -> Path:
    """A panel that says plainly that this figure has no data yet, and why."""
    fig, ax = plt.subplots(figsize=(8, 2.6))
    ax.set_axis_off()
    fig.patch.set_facecolor("#f6f6f6")
    ax.text(
        0.5,
        0.68,
        "No data yet",
        ha="center",
        va="center",
        fontsize=22,
        weight="bold",
        color="#555555",
        transform=ax.transAxes,
    )
    ax.text(0.5, 0.38, title, ha="center", va="center", fontsize=12, transform=ax.transAxes)
    ax.text(
        0.5,
        0.18,
        reason,
        ha="center",
        va="center",
        fontsize=10,
        color="#666666",
        transform=ax.transAxes,
        wrap=True,
    )
    return _save(fig, path)


def intervals(agents: pd.DataFrame, path: Path) -> Path:
    """Per app: each agent's correctness and safety with normal and Wilson 95 % intervals."""
    if agents.empty:
        return no_data(path, "Intervals per agent and app", "no episodes in these cells")
    apps = sorted(agents["app"].unique())
    colours = palette(labels(agents))
    height = sum(1.0 + 0.45 * (agents["app"] == a).sum() for a in apps)
    fig, axes = plt.subplots(
        len(apps), 2, figsize=(11, max(2.5, height)), squeeze=False, layout="constrained"
    )
    for row, app in enumerate(apps):
        part = agents[agents["app"] == app].sort_values(["model", "agent"]).reset_index(drop=True)
        names = labels(part)
        for col, metric in enumerate(("correct", "safe")):
            ax = axes[row][col]
            y = np.arange(len(part))
            for offset, method, marker in ((-0.12, "normal", "s"), (0.12, "wilson", "o")):
                rate = part[f"{metric}_rate"].to_numpy()
                err = np.vstack(
                    [rate - part[f"{metric}_{method}_lo"], part[f"{metric}_{method}_hi"] - rate]
                ).clip(0)
                for i, name in enumerate(names):
                    ax.errorbar(
                        rate[i],
                        y[i] + offset,
                        xerr=err[:, i : i + 1],
                        fmt=marker,
                        color=colours[name],
                        capsize=3,
                        alpha=0.55 if method == "normal" else 1.0,
                    )
            ax.set_yticks(y, names)
            ax.set_xlim(-0.03, 1.03)
            ax.set_ylim(-0.6, len(part) - 0.4)
            ax.invert_yaxis()
            ax.grid(axis="x", alpha=0.3)
            ax.set_title(f"{app}: {metric} (n = {', '.join(map(str, part['n']))})", fontsize=10)
            ax.set_xlabel("rate (■ normal 95 %, ● Wilson 95 %)")
    fig.suptitle("Correctness and safety per agent and app", fontsize=13)
    return _save(fig, path)


def query_count(studies: list[Study], path: Path) -> Path:
    """Per app: agents' intervals and their pairwise overlap as the query count grows."""
    if not studies:
        return no_data(path, "Query-count study", "no episodes to subsample")
    fig, axes = plt.subplots(
        len(studies), 2, figsize=(12, 3.8 * len(studies)), squeeze=False, layout="constrained"
    )
    for row, study in enumerate(studies):
        left, right = axes[row]
        per = study.per_agent
        colours = palette(labels(per))
        for (model, agent), part in per.groupby(["model", "agent"], sort=True):
            name = label(str(model), str(agent))
            left.fill_between(
                part["queries"], part["lo"], part["hi"], alpha=0.2, color=colours[name]
            )
            left.plot(part["queries"], part["rate"], marker="o", color=colours[name], label=name)
        sizes = sorted(per["queries"].unique())
        _size_axis(left, sizes)
        left.set_ylim(-0.03, 1.03)
        left.set_ylabel(f"correct rate, mean {study.method.capitalize()} 95 % interval")
        left.set_title(f"{study.app}: intervals narrow as queries grow (pool {study.queries})")
        left.legend(fontsize=8, loc="best")
        left.grid(alpha=0.3)
        if study.pairs.empty:
            right.set_axis_off()
            right.text(0.5, 0.5, "one agent only: no pairs to compare", ha="center")
            continue
        for keys, part in study.pairs.groupby(["model_a", "agent_a", "model_b", "agent_b"]):
            name = f"{label(keys[0], keys[1])} vs {label(keys[2], keys[3])}"
            right.plot(part["queries"], 100 * part["mean_overlap"], marker="o", label=name)
        _size_axis(right, sizes)
        right.set_ylim(-3, 103)
        right.set_ylabel("mean interval overlap (%)")
        right.set_title(f"{study.app}: pairwise overlap of the intervals")
        right.legend(fontsize=8, loc="best")
        right.grid(alpha=0.3)
    return _save(fig, path)


def levels(cells: pd.DataFrame, path: Path) -> Path:
    """Per app: grouped bars of correctness by level, one bar per agent, Wilson 95 % errors."""
    if cells.empty:
        return no_data(path, "Breakdown by level", "no episodes in these cells")
    apps = sorted(cells["app"].unique())
    colours = palette(labels(cells))
    fig, axes = plt.subplots(1, len(apps), figsize=(max(6, 5.5 * len(apps)), 4), squeeze=False)
    for ax, app in zip(axes[0], apps, strict=True):
        part = cells[cells["app"] == app].copy()
        part["who"] = labels(part)
        # One bar per agent and level: the cell with the most queries (the narrowest interval).
        part = part.sort_values("queries").drop_duplicates(["who", "level"], keep="last")
        whos = sorted(part["who"].unique())
        lvls = sorted(part["level"].unique())
        width = 0.8 / len(whos)
        for i, who in enumerate(whos):
            rows = part[part["who"] == who].set_index("level").reindex(lvls)
            x = np.arange(len(lvls)) + (i - (len(whos) - 1) / 2) * width
            rate = rows["correct_rate"].to_numpy()
            err = np.vstack([rate - rows["correct_wilson_lo"], rows["correct_wilson_hi"] - rate])
            ax.bar(
                x,
                rate,
                width,
                yerr=np.nan_to_num(err).clip(0),
                capsize=3,
                label=who,
                color=colours[who],
            )
        ax.set_xticks(np.arange(len(lvls)), [f"L{lvl}" for lvl in lvls])
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("correct rate")
        ax.set_title(f"{app}: correctness by complexity level")
        _legend_below(ax)
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def _heatmap(ax: plt.Axes, grid: pd.DataFrame) -> matplotlib.image.AxesImage:
    """One heatmap panel: columns labelled upright-rotated (90°, so long agent · model names
    never run into each other or the panel below), one % per cell."""
    image = ax.imshow(grid.to_numpy(), aspect="auto", vmin=0, vmax=1, cmap="RdYlGn")
    ax.set_xticks(np.arange(grid.shape[1]), grid.columns, rotation=90, fontsize=8)
    ax.set_yticks(np.arange(grid.shape[0]), grid.index, fontsize=8)
    for (i, j), value in np.ndenumerate(grid.to_numpy()):
        if not np.isnan(value):
            ax.text(j, i, f"{100 * value:.0f}%", ha="center", va="center", fontsize=7)
    return image


def _heatmaps(grids: list[tuple[str, pd.DataFrame]]) -> plt.Figure:
    """Stacked heatmaps, sized so every column keeps ~0.4 in (two lines of rotated label)
    and every row ~0.3 in; constrained layout keeps each panel's labels clear of the next."""
    columns = max(g.shape[1] for _, g in grids)
    label = max(len(str(c)) for _, g in grids for c in g.columns)
    height = sum(1.2 + 0.3 * g.shape[0] + 0.075 * label for _, g in grids)
    fig, axes = plt.subplots(
        len(grids),
        1,
        figsize=(max(9.0, 3.0 + 0.4 * columns), height),
        squeeze=False,
        layout="constrained",
    )
    for ax, (title, grid) in zip(axes[:, 0], grids, strict=True):
        image = _heatmap(ax, grid)
        ax.set_title(title)
        fig.colorbar(image, ax=ax, fraction=0.03)
    return fig


def operations_figure(ops: pd.DataFrame) -> plt.Figure:
    grids = []
    for app in sorted(ops["app"].unique()):
        part = ops[ops["app"] == app].assign(who=lambda f: labels(f))
        grid = part.pivot_table(index="operation", columns="who", values="correct_rate")
        grids.append((f"{app}: correct rate by operation", grid))
    return _heatmaps(grids)


def operations(ops: pd.DataFrame, path: Path) -> Path:
    """Per app: a heatmap of correctness by operation label (rows) and agent (columns)."""
    if ops.empty:
        return no_data(path, "Breakdown by operation", "no episodes in these cells")
    return _save(operations_figure(ops), path)


def capability_figure(table: pd.DataFrame) -> plt.Figure:
    grids = []
    for app in sorted(table["app"].unique()):
        part = table[table["app"] == app].assign(who=lambda f: labels(f) + " · " + f["size"])
        grid = part.pivot_table(index="operation", columns="who", values="correct_rate")
        grids.append((f"{app}: capability boundary (correct by operation x size)", grid))
    return _heatmaps(grids)


def capability(table: pd.DataFrame | None, reason: str | None, path: Path) -> Path:
    """Per app: the capability boundary, correctness by operation (rows) and agent x size
    class (columns); cells with no query are blank."""
    if table is None or table.empty:
        return no_data(path, "Capability boundary", reason or "no episodes in these cells")
    return _save(capability_figure(table), path)


def outcomes(mix: pd.DataFrame, path: Path) -> Path:
    """Per app and agent: the share of episodes ending with each outcome (stacked bars)."""
    if mix.empty:
        return no_data(path, "Outcomes", "no episodes in these cells")
    mix = mix.assign(who=lambda f: f["app"] + ": " + labels(f))
    table = mix.pivot_table(index="who", columns="outcome", values="n", fill_value=0)
    shares = table.div(table.sum(axis=1), axis=0)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * len(shares)))
    left = np.zeros(len(shares))
    for outcome in shares.columns:
        ax.barh(
            shares.index,
            shares[outcome],
            left=left,
            label=outcome,
            color=OUTCOME_COLOURS.get(outcome, "#bbbbbb"),
        )
        left += shares[outcome].to_numpy()
    ax.set_xlim(0, 1)
    ax.invert_yaxis()
    ax.set_xlabel("share of episodes")
    ax.legend(ncol=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    ax.set_title("How episodes ended")
    return _save(fig, path)


def iterations_per_task(frame: pd.DataFrame | None, reason: str | None, path: Path) -> Path:
    """NetLLMBench's Fig. 3: mean iterations per task, one bar per agent (± 1 sd)."""
    title = "Iterations per task (NetLLMBench configuration tasks)"
    if frame is None:
        return no_data(path, title, reason or "no data")
    apps = sorted(frame["app"].unique())
    colours = palette(labels(frame))
    fig, axes = plt.subplots(len(apps), 1, figsize=(11, 3.8 * len(apps)), squeeze=False)
    for ax, app in zip(axes[:, 0], apps, strict=True):
        part = frame[frame["app"] == app].assign(who=lambda f: labels(f))
        tasks = sorted(part["task"].unique())
        whos = sorted(part["who"].unique())
        width = 0.8 / len(whos)
        for i, who in enumerate(whos):
            rows = part[part["who"] == who].set_index("task").reindex(tasks)
            x = np.arange(len(tasks)) + (i - (len(whos) - 1) / 2) * width
            ax.bar(
                x,
                rows["mean_iterations"],
                width,
                yerr=rows["sd_iterations"].fillna(0),
                capsize=2,
                label=who,
                color=colours[who],
            )
        ax.set_xticks(np.arange(len(tasks)), tasks, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("iterations (mean ± sd)")
        ax.set_title(f"{app}: {title}")
        _legend_below(ax)
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def tokens_per_s(frame: pd.DataFrame | None, reason: str | None, path: Path) -> Path:
    """NetLLMBench's Fig. 4: tokens/s of every model call, per task and attempt (attempts
    side by side within a task), coloured by the attempt's outcome (`call_throughput`)."""
    title = "Tokens/s per task attempt, coloured by outcome"
    if frame is None:
        return no_data(path, title, reason or "no data")
    apps = sorted(frame["app"].unique())
    fig, axes = plt.subplots(len(apps), 1, figsize=(11, 3.8 * len(apps)), squeeze=False)
    rng = np.random.default_rng(0)
    for ax, app in zip(axes[:, 0], apps, strict=True):
        part = frame[frame["app"] == app]
        tasks = sorted(part["task"].unique())
        pos = {t: i for i, t in enumerate(tasks)}
        attempts = int(part["attempt"].max())
        slot = 0.7 / attempts  # each attempt its own strip inside the task's slot
        for outcome in sorted(part["outcome"].unique(), key=_attempt_order):
            rows = part[part["outcome"] == outcome]
            offset = (rows["attempt"].to_numpy() - (attempts + 1) / 2) * slot
            jitter = rng.uniform(-0.35, 0.35, len(rows)) * slot
            ax.scatter(
                rows["task"].map(pos).to_numpy() + offset + jitter,
                rows["tokens_per_s"],
                s=14,
                alpha=0.75,
                label=outcome,
                color=ATTEMPT_COLOURS.get(outcome, OUTCOME_COLOURS.get(outcome, "#bbbbbb")),
            )
        ax.set_xticks(np.arange(len(tasks)), tasks, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("completion tokens / s")
        order = f"\n(attempts 1–{attempts} left to right within a task)" if attempts > 1 else ""
        ax.set_title(f"{app}: {title}{order}")
        _legend_below(ax)
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def _attempt_order(outcome: str) -> tuple[int, str]:
    """solved, not solved, then the failure statuses: the legend's order."""
    order = list(ATTEMPT_COLOURS)
    return (order.index(outcome) if outcome in order else len(order), outcome)
