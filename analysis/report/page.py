"""The report's HTML: one static page, no external resources, images as sibling PNG files.

A small script marks, once the page has loaded, how many images loaded
(`<body data-images-loaded="k/n">` and the `#image-status` line), which the Chromium
test reads from the DOM.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from analysis.leaderboard import Composite, display
from analysis.report.data import ReportData
from analysis.report.episodes import CELL_KEY, cell_link, who_link
from analysis.report.figures import label

STYLE = """
body { font-family: DejaVu Sans, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table.t { border-collapse: collapse; font-size: .82em; margin: .5em 0 1.2em;
          display: block; overflow-x: auto; max-width: 100%; }
table.t th, table.t td { border: 1px solid #ddd; padding: .25em .5em; text-align: right; }
table.t th { background: #f0f0f0; }
img { max-width: 100%; border: 1px solid #eee; }
.note { color: #555; font-style: italic; }
.missing { background: #fff6e0; border-left: 4px solid #e0a000; padding: .4em .8em; }
#image-status { font-size: .85em; color: #555; }
"""

SCRIPT = """
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var ok = images.filter(function (i) { return i.complete && i.naturalWidth > 0; });
  document.body.setAttribute("data-images-loaded", ok.length + "/" + images.length);
  document.getElementById("image-status").textContent =
    "images loaded: " + ok.length + " of " + images.length;
});
"""


def _pct(value: float) -> str:
    return "–" if pd.isna(value) else f"{100 * value:.1f}"


def _interval(frame: pd.DataFrame, metric: str, method: str) -> pd.Series:
    lo, hi = frame[f"{metric}_{method}_lo"], frame[f"{metric}_{method}_hi"]
    return pd.Series(
        [f"[{_pct(a)}, {_pct(b)}]" for a, b in zip(lo, hi, strict=True)], index=frame.index
    )


def _num(value: float, digits: int = 2) -> str:
    return "–" if pd.isna(value) else f"{value:.{digits}f}"


def _who(model_agent: str) -> str:
    model, _, agent = model_agent.partition("/")
    return label(model, agent)


def _table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return '<p class="note">(nothing to show)</p>'
    return frame.to_html(index=False, escape=True, classes="t", border=0)


def _linked(frame: pd.DataFrame, column: str, hrefs: list[str]) -> str:
    """`_table` with `column`'s text a link to the matching href (escaped here, as
    pandas' own escaping is off for the anchor tags)."""
    if frame.empty:
        return _table(frame)
    shown = frame.astype(str).map(html.escape)
    shown[column] = [
        f'<a href="{html.escape(h)}">{t}</a>' for t, h in zip(shown[column], hrefs, strict=True)
    ]
    return shown.to_html(index=False, escape=False, classes="t", border=0)


def cells_table(cells: pd.DataFrame) -> pd.DataFrame:
    if cells.empty:
        return cells
    out = pd.DataFrame(
        {
            "app": cells["app"],
            "model": cells["model"],
            "agent": cells["agent"],
            "task": cells["task"],
            "level": cells["level"],
            "queries": cells["queries"],
            "n": cells["n"],
            "distinct": cells["n_distinct"],
            "correct %": cells["correct_rate"].map(_pct),
            "normal 95 %": _interval(cells, "correct", "normal"),
            "Wilson 95 %": _interval(cells, "correct", "wilson"),
            "safe %": cells["safe_rate"].map(_pct),
            "safe Wilson 95 %": _interval(cells, "safe", "wilson"),
            "score": cells["mean_score"].map(lambda v: _num(v, 3)),
            "turns": cells["mean_turns"].map(_num),
            "latency s": cells["mean_latency_s"].map(lambda v: _num(v, 4)),
            "tokens (prompt/compl.)": [
                "–" if pd.isna(p) else f"{p:.0f}/{c:.0f}"
                for p, c in zip(
                    cells["mean_prompt_tokens"], cells["mean_completion_tokens"], strict=True
                )
            ],
            "tokens/s": cells["tokens_per_s"].map(lambda v: _num(v, 1)),
        }
    )
    return out


def cell_links(cells: pd.DataFrame) -> list[str]:
    """Each per-cell row's episode list (analysis/report/episodes.py)."""
    if cells.empty:
        return []
    keys = cells.assign(agent=cells["agent_name"])[list(CELL_KEY)]
    return [cell_link(k) for k in keys.itertuples(index=False)]


def _other_cells(data: ReportData) -> list[str]:
    """The data directory's cells outside the grid: direct runs, hosted models, MCP and
    A2A agents, imported Inspect logs, other grids."""
    if data.other_cells is None:
        return []
    out = [
        '<h3 id="other-cells">Other cells in this data directory</h3>',
        "<p>Cells outside this grid (direct runs, hosted models, MCP and A2A agents, "
        "Inspect imports, other grids); the statistics above do not include them.</p>",
    ]
    if data.other_cells.empty:
        out.append('<p class="note">(none: every cell of the data directory is in this grid)</p>')
    else:
        out.append(_linked(cells_table(data.other_cells), "n", cell_links(data.other_cells)))
    return out


def overlap_table(overlap: pd.DataFrame) -> pd.DataFrame:
    if overlap.empty:
        return overlap
    return pd.DataFrame(
        {
            "app": overlap["app"],
            "agent A": [
                label(m, a) for m, a in zip(overlap["model_a"], overlap["agent_a"], strict=True)
            ],
            "Wilson 95 % A": [
                f"[{_pct(a)}, {_pct(b)}]"
                for a, b in zip(overlap["lo_a"], overlap["hi_a"], strict=True)
            ],
            "agent B": [
                label(m, a) for m, a in zip(overlap["model_b"], overlap["agent_b"], strict=True)
            ],
            "Wilson 95 % B": [
                f"[{_pct(a)}, {_pct(b)}]"
                for a, b in zip(overlap["lo_b"], overlap["hi_b"], strict=True)
            ],
            "overlap %": overlap["overlap"].map(_pct),
        }
    )


def paired_table(paired: pd.DataFrame) -> pd.DataFrame:
    if paired.empty:
        return paired
    return pd.DataFrame(
        {
            "app": paired["app"],
            "A": paired["a"].map(_who),
            "B": paired["b"].map(_who),
            "shared queries": paired["n"],
            "both / only A / only B / neither": [
                f"{r.both_correct} / {r.only_a} / {r.only_b} / {r.neither}"
                for r in paired.itertuples()
            ],
            "A − B (pts)": paired["diff"].map(_pct),
            "paired bootstrap 95 %": [
                f"[{_pct(a)}, {_pct(b)}]"
                for a, b in zip(paired["diff_lo"], paired["diff_hi"], strict=True)
            ],
            "McNemar p": [
                "–" if pd.isna(p) else f"{p:.3g}{' (exact)' if e else ''}"
                for p, e in zip(paired["mcnemar_p"], paired["exact"], strict=True)
            ],
        }
    )


def study_table(data: ReportData) -> pd.DataFrame:
    rows = []
    for study in data.studies:
        widths = study.per_agent.groupby("queries")["width"].mean()
        overlaps = (
            study.pairs.groupby("queries")["mean_overlap"].mean()
            if not study.pairs.empty
            else pd.Series(dtype=float)
        )
        for size, width in widths.items():
            rows.append(
                {
                    "app": study.app,
                    "queries": size,
                    "mean interval width (pts)": _pct(width),
                    "mean pairwise overlap %": _pct(overlaps.get(size, float("nan"))),
                }
            )
    return pd.DataFrame(rows)


def _figure(name: str, title: str, files: Mapping[str, Path], note: str | None = None) -> str:
    path = files[name]
    out = f'<figure><img src="figures/{html.escape(path.name)}" alt="{html.escape(title)}">'
    out += f"<figcaption>{html.escape(title)} (<code>figures/{html.escape(path.name)}</code>)"
    out += "</figcaption></figure>"
    if note:
        out += f'<p class="missing">No data yet: {html.escape(note)}.</p>'
    return out


def _leaderboard(data: ReportData) -> list[str]:
    """One table per board: overall, then each app, then each task kind; then the cost
    per cell."""
    board = data.leaderboard
    out = [
        '<h2 id="leaderboard">Leaderboard</h2>',
        f"<p>Model × agent ranked by the composite {html.escape(Composite().label)} per "
        "distinct query (NetArena's rule; <code>python -m analysis leaderboard "
        "--composite</code> sets another), ties broken by fewer turns per episode. Intervals "
        "are Wilson 95 % over distinct queries. Neighbours share a <i>band</i> unless their "
        "intervals are apart or the paired test on the queries both played (McNemar, "
        "paired bootstrap; it compares correctness) tells them apart; <i>vs next</i> says "
        "which. Efficiency is per episode and per correct episode; USD from "
        "<code>conf/pricing.yaml</code> (– where a cost is unknown). The overall board pools "
        "every app and task kind: read it beside the per-task boards.</p>",
    ]
    if data.leaderboard_missing:
        out.append(f'<p class="missing">No data yet: {html.escape(data.leaderboard_missing)}.</p>')
    elif board.empty:
        out.append('<p class="note">(nothing to show)</p>')
    groups = board.groupby(["scope", "group"], sort=False) if not board.empty else []
    for (scope, group), part in groups:
        title = "Overall" if scope == "overall" else f"{scope}: {group}"
        out.append(f'<h3 class="board" data-scope="{html.escape(scope)}">{html.escape(title)}</h3>')
        hrefs = [who_link(m, a) for m, a in zip(part["model"], part["agent"], strict=True)]
        out.append(_linked(display(part), "agent", hrefs))
    out.append("<h3>Cost per cell</h3>")
    if data.cost is None:
        out.append(f'<p class="missing">No data yet: {html.escape(data.cost_missing or "")}.</p>')
    else:
        cost = data.cost.round(6)
        out.append(_table(cost.astype(object).where(cost.notna(), "–")))
    return out


def _kinds(data: ReportData) -> list[str]:
    out = []
    for name, (frame, why) in data.kinds.items():
        out.append(f"<h3>{html.escape(name.replace('_', ' '))}</h3>")
        if frame is None:
            out.append(f'<p class="missing">{html.escape(why or "no data yet")}</p>')
        else:
            out.append(_table(frame.round(3)))
    return out


def trials_table(frame: pd.DataFrame | None, why: str | None) -> str:
    """pass@k and pass^k per cell and k, with their bootstrap intervals (in %)."""
    if frame is None:
        return f'<p class="missing">{html.escape(why or "no data yet")}</p>'
    shown = pd.DataFrame(
        {
            "app": frame["app"],
            "model / agent": [label(m, a) for m, a in zip(frame.model, frame.agent, strict=True)],
            "level": frame["level"],
            "seed": frame["seed"],
            "trials": frame["trials"],
            "queries": frame["n_distinct"],
            "k": frame["k"],
            "pass@k %": frame["pass_at_k"].map(_pct),
            "pass@k 95 %": _interval(frame, "pass", "at_k"),
            "pass^k %": frame["pass_hat_k"].map(_pct),
            "pass^k 95 %": _interval(frame, "pass", "hat_k"),
        }
    )
    return _table(shown)


def render(data: ReportData, files: Mapping[str, Path], meta: Mapping[str, str]) -> str:
    """The whole page: `files` maps figure names to their PNGs, `meta` is shown on top."""
    facts = "".join(
        f"<li><b>{html.escape(k)}</b>: {html.escape(str(v))}</li>" for k, v in meta.items()
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in data.study_notes)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>NetGauge report: {html.escape(meta.get('grid', 'all results'))}</title>",
        f"<style>{STYLE}</style><script>{SCRIPT}</script></head><body>",
        "<h1>NetGauge report</h1>",
        f"<ul>{facts}</ul>",
        '<p id="image-status">images: loading…</p>',
        *_leaderboard(data),
        "<h2>Per cell</h2>",
        "<p>Correctness and safety with 95 % intervals: normal (SEM, as NetArena reports) "
        "and Wilson (stays inside [0, 100] and is honest at 0 % and 100 %).</p>",
        "<p>Each cell's <i>n</i> links to its episodes: the query, every turn (reply, "
        "command, status, observation, safety) and the verdict.</p>",
        _linked(cells_table(data.cells), "n", cell_links(data.cells)),
        *_other_cells(data),
        "<h2>Intervals per agent and app</h2>",
        _figure("intervals", "Correctness and safety per agent and app", files),
        "<h3>Pairwise interval overlap (correctness, Wilson)</h3>",
        "<p>Share of the narrower interval covered by the other: 0 % means the two agents "
        "are told apart at this query count.</p>",
        _table(overlap_table(data.overlap)),
        "<h3>Same-query comparison</h3>",
        "<p>McNemar's test on the queries both agents played (exact when fewer than 25 "
        "discordant pairs) and a paired bootstrap interval of the difference.</p>",
        _table(paired_table(data.paired)),
        "<h2>Repeated trials (pass@k, pass^k)</h2>",
        "<p>Cells played k times with a sampling seed per trial (a grid's <code>trials</code>). "
        "Per distinct query with n plays of which c are correct: pass@k = 1 − C(n−c, k)/C(n, k) "
        "(at least one of k plays correct; Chen et al. 2021's unbiased estimator) and "
        "pass^k = C(c, k)/C(n, k) (all k correct; τ-bench). Intervals: 95 % percentile "
        "bootstrap over distinct queries (1000 resamples).</p>",
        trials_table(data.trials, data.trials_missing),
        "<h2>Query-count study</h2>",
        "<p>Random subsets of the queries every agent played (the same subset for each "
        "agent), at growing sizes: interval width and overlap shrink as queries grow.</p>",
        _figure("query_count", "Intervals and overlap as the query count grows", files),
        f"<ul>{notes}</ul>" if notes else "",
        _table(study_table(data)),
        "<h2>Breakdown by level</h2>",
        _figure("levels", "Correctness by complexity level", files),
        "<h2>Breakdown by operation</h2>",
        _figure("operations", "Correctness by operation label", files),
        "<h2>Capability boundary</h2>",
        "<p>Each agent's correctness by operation (the template or fault type) and size "
        "class (<i>any</i>: drawn without one), over distinct queries: where it stops "
        "coping. Aim generation at a boundary with the app's knobs (<code>app.faults</code>, "
        "<code>app.operations</code>, <code>app.size</code>) or with failure-driven "
        "sampling (<code>focus.results</code>).</p>",
        _figure("capability", "Capability boundary", files, data.capability_missing),
        "<h2>Task kinds</h2>",
        "<p>Mitigate, detect and localize are scored and reported apart, never averaged "
        "together. Detection: true and false positive rates, balanced accuracy and the best "
        "constant answer's accuracy on the same queries. Localization: ITBench-AA's score "
        "(0 when a true cause is missed, else the share of named causes that are true), "
        "the exact rate and a looser recall of device and kind. Efficiency: turns, "
        "commands and KiB read per outcome. Variety: the most common stratum's share and "
        "distinct prompts per distinct query.</p>",
        *_kinds(data),
        "<h2>Outcomes</h2>",
        _figure("outcomes", "How episodes ended", files),
        "<h2>NetLLMBench configuration tasks</h2>",
        "<p>A query chains several tasks, each tried up to a few times. Iterations are the "
        "turns spent on a task (solved or not); an attempt is <i>solved</i> when it left "
        "its task complete, <i>not solved</i> when its action ran but the task is still "
        "incomplete, else it carries the action's failure.</p>",
        _figure("iterations", "Iterations per task", files, data.iterations_missing),
        _figure(
            "tokens_per_s", "Tokens/s per task attempt by outcome", files, data.throughput_missing
        ),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
