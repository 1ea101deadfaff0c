"""The files a report wrote, so the next report into the same folder removes those it no
longer writes (an episode no longer in the data, a table now empty), and nothing else.

<out>/.netgauge-report.json   {"version": 1, "files": ["index.html", "episodes/<cell>/…", …]}

Only what the manifest lists is ever removed, and only when it still reads as a name the
report writes: a relative path of at most three parts under index.html, figures/, tables/
or episodes/, each part of letters, digits and `._~-` (never `.` or `..`), reached through
real folders inside the report folder (a folder replaced by a symlink is left alone, so a
forged manifest or a planted link cannot reach outside). A user's own files, and anything
a report of older code wrote (it left no manifest), are never touched. Folders emptied
this way are removed; a folder holding anything else stays.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path

from pipeline.files import write_whole

log = logging.getLogger(__name__)

MANIFEST = ".netgauge-report.json"
MAX_MANIFEST_BYTES = 256 * 2**20  # ~4 M entries; a larger file is not ours to trust
_TOPS = {"index.html", "figures", "tables", "episodes"}
_PART = re.compile(r"[A-Za-z0-9._~-]{1,255}")


def relative(out: Path, path: Path) -> str:
    """`path` (written by the report under `out`) as the manifest stores it."""
    return path.relative_to(out).as_posix()


def previous(out: Path) -> set[str]:
    """The files the last report into `out` listed; none when there is no readable list."""
    path = out / MANIFEST
    try:
        if path.is_symlink() or path.stat().st_size > MAX_MANIFEST_BYTES:
            log.warning("%s is not a report manifest; removing nothing", path)
            return set()
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as err:
        log.warning("%s is unreadable (%s); removing nothing", path, err)
        return set()
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        log.warning("%s lists no files; removing nothing", path)
        return set()
    return {f for f in files if isinstance(f, str)}


def prune(out: Path, written: Iterable[Path]) -> list[str]:
    """Remove what the last report into `out` wrote and this one did not; record what this
    one wrote. Returns the paths removed (relative to `out`)."""
    now = {relative(out, p) for p in written}
    removed = [rel for rel in sorted(previous(out) - now) if _remove(out, rel)]
    write_whole(out / MANIFEST, json.dumps({"version": 1, "files": sorted(now)}, indent=0))
    return removed


def _remove(out: Path, rel: str) -> bool:
    parts = rel.split("/")
    if (
        len(parts) > 3
        or parts[0] not in _TOPS
        or any(not _PART.fullmatch(p) or p in (".", "..") for p in parts)
    ):
        log.warning("not removing %r: not a name the report writes", rel)
        return False
    base = out.resolve()
    folders = [out.joinpath(*parts[:i]) for i in range(1, len(parts))]
    if any(f.is_symlink() or not f.is_dir() for f in folders):
        return False  # gone already, or replaced by a link: not ours to follow
    target = out.joinpath(*parts)
    if not target.parent.resolve().is_relative_to(base):
        return False
    if target.is_symlink() or target.is_file():
        target.unlink()  # a link itself, never what it points at
    else:
        return False
    for folder in reversed(folders[1:]):  # figures/, tables/, episodes/ themselves stay
        try:
            folder.rmdir()
        except OSError:  # holds something else (a user's file, this report's pages)
            break
    return True
