"""The data directory's layout version, and moving an older layout to the current one.

Layout 4 (this code) is layout 2 with every shard in the current schema versions: a
layout-2 or -3 directory meeting this code has its older shards upgraded in place, once,
under the lock below (pipeline/migrate.py says what the added columns hold). Layout 3 was
the same before calls and episodes 6 (the response cache's `cache`, repeated trials'
`trial` and `trial_of`, the money cost `cached_tokens` and `cost_usd`).

Layout 2 puts the query count and the variant in every cell path and a
query key in every row (pipeline/cells.py). A directory written by layout 1 has cell
paths `app=A/model=M/agent=G/level=L/seed=S/` and queries paths `app=A/level=L/seed=S/`.
When such a directory meets this code, `ensure_layout` rewrites its shards into the
current layout before anything reads or writes them, under a lock, and loses nothing:

- result shards (queries, episodes, steps, calls) are rewritten into the current schema
  under `variant=layout1` / `app_variant=layout1`, with `queries` set to the cell's row
  count and the columns layout 1 did not have left null (query keys) or at their
  defaults; their original metadata is kept and the old path is recorded;
- work files (transcripts, checkpoints) are moved unchanged to `work/layout1/`;
- the old files are removed only once every new one is written.

So old results stay queryable beside new ones (`WHERE variant = 'layout1'`), and a rerun
of the same grid computes fresh cells under their real variants.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.errors import DataError
from pipeline.files import replacing, write_whole
from pipeline.migrate import conform, upgrade
from pipeline.records import SCHEMA_VERSIONS

log = logging.getLogger(__name__)

LAYOUT = 4
MARKER = "layout.json"
LEGACY = "layout1"
_OLD_CELL = ("app", "model", "agent", "level", "seed")


def marker(root: Path) -> Path:
    return root / "results" / MARKER


def layout_version(root: Path) -> int | None:
    """The layout a data directory declares; None if it declares none."""
    path = marker(root)
    if not path.exists():
        return None
    try:
        return int(json.loads(path.read_text())["layout"])
    except (ValueError, KeyError, TypeError) as err:
        raise DataError(
            f'{path} is not a layout marker ({err}); expected {{"layout": {LAYOUT}}}'
        ) from err


def ensure_layout(root: Path) -> None:
    """Make `root` a data directory of the current layout (migrating layout 1, upgrading
    layout 2's shards; see the module doc)."""
    version = layout_version(root)
    if version == LAYOUT:
        return
    if version is not None and version > LAYOUT:
        raise DataError(
            f"{root} was written by a newer NetGauge (data layout {version}); this code "
            f"reads layout {LAYOUT}: update the checkout or use another data_dir"
        )
    if not (root / "results").is_dir():
        return  # nothing written yet: the first shard is written in layout 2
    with _locked(root / "results" / ".layout.lock"):
        version = layout_version(root)
        if version == LAYOUT:
            return  # another process migrated it while we waited
        moved = migrate(root) if version is None or version < 2 else 0
        upgraded = upgrade(root)
        done = {"layout": LAYOUT, "migrated_shards": moved, "upgraded_shards": upgraded}
        # whole or not at all: other jobs read the marker without the lock (a reader saw
        # the file empty while it was being written, and its job failed)
        write_whole(marker(root), json.dumps(done) + "\n")
        if moved:
            log.warning(
                "data directory %s: %d shard(s) of layout 1 moved to variant '%s' "
                "(kept and queryable; new runs write fresh cells)",
                root,
                moved,
                LEGACY,
            )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def old_shards(root: Path) -> list[tuple[str, Path]]:
    """(table, path) of every layout-1 shard under `root/results`."""
    found = []
    results = root / "results"
    for table in ("episodes", "steps", "calls"):
        found += [(table, p) for p in _old_cell_shards(results / table)]
    queries = results / "queries"
    if queries.is_dir():
        for path in sorted(queries.glob("app=*/level=*/seed=*/part-0.parquet")):
            found.append(("queries", path))
    return found


def _old_cell_shards(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(folder.glob("app=*/model=*/agent=*/level=*/seed=*/part-0.parquet"))


def migrate(root: Path) -> int:
    """Rewrite layout-1 shards of `root` into layout 2; return how many were moved."""
    shards = old_shards(root)
    written: list[Path] = []
    counts = _cell_counts(root)
    for table, path in shards:
        data = pq.read_table(path, partitioning=None)
        meta = dict(data.schema.metadata or {})
        if table == "queries":
            parts = _hive(path.parent.relative_to(root / "results" / "queries"))
            target = (
                root / "results" / "queries" / f"app={parts['app']}" / f"app_variant={LEGACY}"
                / f"level={parts['level']}" / f"seed={parts['seed']}" / "part-0.parquet"
            )  # fmt: skip
            extra = {"app_variant": LEGACY}
        else:
            rel = path.parent.relative_to(root / "results" / table)
            parts = _hive(rel)
            count = counts.get(tuple(parts[k] for k in _OLD_CELL), data.num_rows)
            target = (
                root / "results" / table / rel / f"queries={count}" / f"variant={LEGACY}"
                / "part-0.parquet"
            )  # fmt: skip
            extra = {"queries": count, "variant": LEGACY, "app_variant": LEGACY}
        new = conform(table, data, extra)
        meta[b"netgauge.schema_version"] = SCHEMA_VERSIONS[table].encode()
        meta[b"netgauge.migrated_from"] = str(path.relative_to(root)).encode()
        new = new.replace_schema_metadata(meta)
        with replacing(target) as tmp:
            pq.write_table(new, tmp, compression="zstd")
        written.append(target)
    for _, path in shards:
        path.unlink()
        _prune(path.parent, root / "results")
    _move_work(root)
    return len(written)


def _cell_counts(root: Path) -> dict[tuple[str, ...], int]:
    """Layout-1 cells' query counts: the rows of their episodes shards."""
    out = {}
    for path in _old_cell_shards(root / "results" / "episodes"):
        parts = _hive(path.parent.relative_to(root / "results" / "episodes"))
        out[tuple(parts[k] for k in _OLD_CELL)] = pq.read_metadata(path).num_rows
    return out


def _hive(rel: Path) -> dict[str, str]:
    return dict(part.split("=", 1) for part in rel.parts)


def _prune(folder: Path, stop: Path) -> None:
    """Remove empty folders from `folder` up to (not including) `stop`."""
    while folder != stop and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _move_work(root: Path) -> None:
    """Layout-1 transcripts and checkpoints go, unchanged, to work/layout1/."""
    for kind in ("transcripts", "partial"):
        folder = root / "work" / kind
        if not folder.is_dir():
            continue
        for cell_dir in sorted(folder.glob("app=*/model=*/agent=*/level=*/seed=*")):
            files = [p for p in cell_dir.iterdir() if p.is_file()]  # layout 2 has folders here
            if not files:
                continue
            target = root / "work" / LEGACY / kind / cell_dir.relative_to(folder)
            target.mkdir(parents=True, exist_ok=True)
            for path in files:
                shutil.move(str(path), str(target / path.name))
            _prune(cell_dir, folder)
