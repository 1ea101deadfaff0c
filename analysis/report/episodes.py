"""The report's episode pages: every episode as a static HTML file, every cell as a list.

report/episodes/index.html                 every cell, grouped by model × agent (`#<who>`)
report/episodes/<cell>/index.html          one cell's episodes, a row each
report/episodes/<cell>/<query_id>.html     one episode: the query, every turn, the verdict

A cell here is a row of the report's per-cell table (app, model, agent, level, query count,
variant, task; seeds pooled), and `<cell>` is `cell_slug` of it. Replies and observations
are untrusted: every text is HTML-escaped, and the pages carry a Content-Security-Policy
that allows no script at all, so markup in them can only ever render as text. Each text
field is cut at `FIELD_LIMIT` characters with a visible note (the whole text stays in the
`steps`, `calls` and `queries` tables), so a page stays small whatever an agent printed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from analysis.questions import cell_filter
from analysis.report.episode_html import (
    CELL_KEY,
    FIELD_LIMIT,
    UNSAFE_NAME,
    cell_link,
    cell_page,
    cell_slug,
    cells_index,
    episode_page,
    who_link,
    who_slug,
)
from pipeline.cells import Cell
from pipeline.views import columns


class _Row(dict):
    """A result row; a column that older shards lack reads as None (data/README.md)."""

    def __missing__(self, key: str) -> None:
        return None


@dataclass
class Written:
    """What `write_episode_pages` wrote: counts, for the log and the measurements."""

    cells: int = 0
    episodes: int = 0
    bytes: int = 0
    files: list[Path] = field(default_factory=list)  # every page, for the manifest (owned.py)


_EPISODES = f"""
SELECT e.*, left(q.prompt, {FIELD_LIMIT}) AS q_prompt, length(q.prompt) AS q_prompt_len,
       left(q.ground_truth, {FIELD_LIMIT}) AS q_truth, length(q.ground_truth) AS q_truth_len
FROM episodes e
LEFT JOIN queries q USING (app, app_variant, level, seed, query_id)
WHERE {{where}}
ORDER BY app, model, agent, level, queries, variant, task, seed, query_id
"""
# One cell's turns; long texts are cut in DuckDB so a huge output is never loaded whole.
_STEPS = f"""
SELECT seed, query_id, turn, left(reply, {FIELD_LIMIT}) AS reply, length(reply) AS reply_len,
       left(action, {FIELD_LIMIT}) AS action, length(action) AS action_len, status,
       left(output, {FIELD_LIMIT}) AS output, length(output) AS output_len, safe, error,
       exec_s, agent_s
FROM steps
WHERE app = $app AND model = $model AND agent = $agent AND level = $level
  AND queries = $queries AND variant = $variant AND {{where}}
ORDER BY seed, query_id, turn
"""
_CALLS = """
SELECT seed, query_id, turn, count(*) FILTER (WHERE purpose <> 'diagnostic') AS calls,
       sum(prompt_tokens) AS turn_prompt, sum(completion_tokens) AS turn_completion,
       sum({cost}) AS turn_usd, count(*) FILTER (WHERE {cache} = 'hit') AS cache_hits,
       count(*) FILTER (WHERE purpose = 'diagnostic') AS diagnostics
FROM calls
WHERE app = $app AND model = $model AND agent = $agent AND level = $level
  AND queries = $queries AND variant = $variant AND {where}
GROUP BY ALL
"""


def write_episode_pages(
    con: duckdb.DuckDBPyConnection, cells: Iterable[Cell] | None, out: Path
) -> Written:
    """Write every episode of `cells` (all, if None) under `out`/episodes/."""
    where = cell_filter(cells)
    cursor = con.execute(_EPISODES.format(where=where))
    names = [d[0] for d in cursor.description]
    rows = [_Row(zip(names, r, strict=True)) for r in cursor.fetchall()]
    root = out / "episodes"
    root.mkdir(parents=True, exist_ok=True)
    written = Written()
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in CELL_KEY), []).append(row)
    for key, episodes in groups.items():
        written.bytes += _write_cell(con, where, key, episodes, root, written.files)
        written.cells += 1
        written.episodes += len(episodes)
    index = cells_index(groups)
    (root / "index.html").write_text(index, encoding="utf-8")
    written.files.append(root / "index.html")
    written.bytes += len(index)
    return written


def _write_cell(
    con: duckdb.DuckDBPyConnection,
    where: str,
    key: tuple,
    episodes: list[dict],
    root: Path,
    paths: list[Path],
) -> int:
    """Write one cell's pages; add their paths to `paths`; return their size."""
    params = dict(zip(CELL_KEY[:-1], key[:-1], strict=True))
    steps: dict[tuple, list[dict]] = {}
    cursor = con.execute(_STEPS.format(where=where), params)
    names = [d[0] for d in cursor.description]
    for r in cursor.fetchall():
        step = _Row(zip(names, r, strict=True))
        steps.setdefault((step["seed"], step["query_id"]), []).append(step)
    calls: dict[tuple, dict] = {}
    # Shards written before the cache and prices lack their columns (data/README.md).
    have = set(columns(con, "calls"))
    cost = "cost_usd" if "cost_usd" in have else "NULL::DOUBLE"
    cache = "cache" if "cache" in have else "NULL::VARCHAR"
    cursor = con.execute(_CALLS.format(where=where, cost=cost, cache=cache), params)
    names = [d[0] for d in cursor.description]
    for r in cursor.fetchall():
        call = _Row(zip(names, r, strict=True))
        calls[(call["seed"], call["query_id"], call["turn"])] = call
    folder = root / cell_slug(key)
    folder.mkdir(parents=True, exist_ok=True)
    size = 0
    files: list[str] = []
    taken: set[str] = set()
    for episode in episodes:
        name = _episode_file(episode, taken)
        files.append(name)
        taken.add(name)
        turns = steps.get((episode["seed"], episode["query_id"]), [])
        page = episode_page(key, episode, turns, calls)
        (folder / name).write_text(page, encoding="utf-8")
        size += len(page)
    listing = cell_page(key, episodes, files)
    (folder / "index.html").write_text(listing, encoding="utf-8")
    paths += [folder / name for name in files] + [folder / "index.html"]
    return size + len(listing)


def _episode_file(episode: dict, taken: set[str]) -> str:
    """`<query_id>.html`, unique in its folder (seeds pooled; query ids carry their seed)."""
    base = UNSAFE_NAME.sub("-", str(episode["query_id"]))[:100] or "episode"
    name, n = f"{base}.html", 1
    while name in taken:
        n += 1
        name = f"{base}~{n}.html"
    return name


__all__ = [
    "CELL_KEY",
    "FIELD_LIMIT",
    "cell_link",
    "cell_slug",
    "who_link",
    "who_slug",
    "write_episode_pages",
]
