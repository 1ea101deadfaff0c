"""A cell of n queries taken from a finished cell of more: its first n episodes, not replayed.

Two cells that differ only in their query count (same app, model, agent, level, seed and
variant) play the same queries with the same agent and settings, as far as the smaller one
goes, when two things hold:

- the app declares prefix queries (`AppSpec.prefix_queries`): query i of (level, seed) is
  the same whatever the count, so a fresh run of n plays the larger cell's first n queries;
- no episode depends on the cell's own size: a `model.cost_limit` spends one budget over
  the cell's episodes, so which of them play depends on how many there are; such a cell is
  always played.

Then the run stage takes the larger cell's transcript rows of those n queries
(`prefix_source`) instead of playing them again, with the `queries` column set to n, and
every shard of the cell records where they came from: `netgauge.derived_from` (the source
cell's path part) in its Parquet key-value metadata (data/README.md).

A source is only a finished cell: its transcripts shard, which appears atomically once every
query of it was played, made with this cell's settings (its config hash is the one this
cell's config gives at the source's count), holding every one of the n queries and none of
them ended by an environment error or a cost limit (a fresh run would play those). A cell
still running, stopped or crashed has checkpoint chunks only (pipeline/checkpoint.py), so it
is never a source; neither is a shard of other settings or of an older app version (the
config hash covers the queries shard's).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from dataclasses import dataclass

import pyarrow as pa
from omegaconf import DictConfig, OmegaConf

from pipeline import registry
from pipeline.build import run_hash
from pipeline.cells import Cell, Layout
from pipeline.core import Query, StepStatus
from pipeline.costlimit import CostGuard
from pipeline.records import read_shard, shard_hash, to_table

log = logging.getLogger(__name__)

DERIVED_FROM = "netgauge.derived_from"  # shard metadata: the source cell's path part
_REPLAYED = {str(StepStatus.ENV_ERROR), str(StepStatus.COST_LIMIT)}


@dataclass(frozen=True)
class Derived:
    """The transcripts of a cell taken from `source`'s first episodes."""

    source: Cell
    table: pa.Table


def why_not(cfg: DictConfig) -> str | None:
    """Why no cell of this config may be derived from a larger one; None: it may."""
    if not registry.APPS.get(str(cfg.app.kind)).prefix_queries:
        return f"app kind '{cfg.app.kind}' does not declare prefix queries"
    if CostGuard.of(cfg) is not None:
        return "model.cost_limit bounds the cell's episodes together"
    return None


def prefix_source(
    cfg: DictConfig, cell: Cell, queries: list[Query], paths: Layout
) -> Derived | None:
    """The cell's transcripts from the smallest finished larger cell that has them all,
    or None (the cell is played)."""
    reason = why_not(cfg)
    if reason is not None:
        log.debug("%s is played: %s", cell.part, reason)
        return None
    wanted = {q.query_id for q in queries}
    if len(wanted) != cell.queries:
        return None
    for source in larger_cells(cell, paths):
        table = _prefix(cfg, cell, source, wanted, paths)
        if table is not None:
            return Derived(source, table)
    return None


def larger_cells(cell: Cell, paths: Layout) -> list[Cell]:
    """Cells of `cell`'s identity but a larger count that have a transcripts folder, by
    count. Only folder names `queries=<digits>` count (the layout's own)."""
    folder = paths.transcripts(cell).parent.parent.parent  # .../seed=S
    found = []
    for entry in folder.glob("queries=*") if folder.is_dir() else ():
        count = entry.name.removeprefix("queries=")
        if count.isascii() and count.isdigit() and int(count) > cell.queries:
            found.append(dataclasses.replace(cell, queries=int(count)))
    return sorted(found, key=lambda c: c.queries)


def _prefix(
    cfg: DictConfig, cell: Cell, source: Cell, wanted: set[str], paths: Layout
) -> pa.Table | None:
    path = paths.transcripts(source)
    expected = run_hash(_at_count(cfg, source.queries))
    if not path.is_file() or shard_hash(path) != expected:
        return None  # missing, unfinished, or made with other settings
    table = read_shard("transcripts", path)
    # The hash of the bytes read: the shard may have been replaced since it was checked.
    if (table.schema.metadata or {}).get(b"netgauge.config_hash") != expected.encode():
        return None
    rows = [r for r in table.to_pylist() if r["query_id"] in wanted]
    if {r["query_id"] for r in rows} != wanted:
        return None
    if any(r["status"] in _REPLAYED for r in rows):
        return None
    for row in rows:
        row["queries"] = cell.queries
    rows.sort(key=lambda r: (r["query_id"], r["turn"]))
    return to_table("transcripts", rows)


def _at_count(cfg: DictConfig, count: int) -> DictConfig:
    """`cfg` with another query count (the source cell's config)."""
    other = copy.deepcopy(cfg)
    OmegaConf.set_readonly(other, False)
    other.queries = count
    return other
