"""Writing a file whole: readers never see half of it, and writers of one file at once
(processes sharing a data directory or cache, threads of one process) all succeed.

Each writer writes a temporary file of its own beside the target, `.<name>.<pid>-<hex>.tmp`,
and renames it onto the target: the last rename wins, and every reader sees one whole
version. A writer that fails removes its temporary file; one killed outright leaves it
behind, hidden, and matched by `TEMPORARY_GLOB`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

TEMPORARY_GLOB = ".*.tmp"  # what a writer killed mid-write may leave


@contextlib.contextmanager
def replacing(path: Path, *, durable: bool = False) -> Iterator[Path]:
    """The block writes the yielded temporary path; when it ends without error that file
    replaces `path` (flushed to disk first if `durable`), otherwise it is removed.

    The temporary file does not exist yet, so the writer creates it with the usual
    permissions (pyarrow, `write_text` and `open` all may)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")  # ours alone
    try:
        yield tmp
        if durable:
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_whole(path: Path, data: bytes | str) -> None:
    """Write `data` (text as UTF-8) to `path` through `replacing`."""
    with replacing(path) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
