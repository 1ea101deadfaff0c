"""Finished episodes of an unfinished cell, kept on disk so a killed run resumes.

Chunks are transcripts shards in the cell's partial folder, written atomically and
tagged with the run's config hash (chunks of another config are discarded on load).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.errors import EnvironmentFailure
from pipeline.records import read_shard, shard_hash, to_table, write_shard

log = logging.getLogger(__name__)


class CellFailed(EnvironmentFailure):
    """A cell could not finish; what it finished is kept for the rerun."""


class Checkpoint:
    """Finished episodes of one cell, kept as chunk shards until the cell completes.

    Entering takes an exclusive lock on the cell (flock: the kernel releases it when the
    holder dies, even by kill -9), so two runs of one cell never interleave chunks.
    """

    def __init__(self, folder: Path, digest: str) -> None:
        self.folder = folder
        self.digest = digest
        self._chunks: list[pa.Table] = []
        self._pending: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self._lock: int | None = None
        self.done: set[str] = set()

    def __enter__(self) -> Checkpoint:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise CellFailed(
                f"{self.folder.name} is being run by another process (pid {holder}); "
                "wait for it or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock = fd
        self._load()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.folder.exists():
            self.flush()  # finished episodes survive Ctrl-C and errors alike
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None

    def _load(self) -> None:
        for chunk in sorted(self.folder.glob("chunk-*.parquet")):
            if shard_hash(chunk) != self.digest:
                log.warning("discarding %s: written for another config", chunk)
                chunk.unlink()
                continue
            table = read_shard("transcripts", chunk)
            self._chunks.append(table)
            self.done.update(table.column("query_id").to_pylist())

    def add(self, rows: list[dict[str, Any]], *, flush_every_s: float) -> None:
        self._pending.extend(rows)
        self.done.update(r["query_id"] for r in rows)
        if time.monotonic() - self._last_flush >= flush_every_s:
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        table = to_table("transcripts", self._pending)
        name = f"chunk-{len(self._chunks):05d}.parquet"
        write_shard("transcripts", table, self.folder / name, config_hash=self.digest)
        self._chunks.append(table)
        self._pending = []

    def table(self) -> pa.Table:
        tables = [t.replace_schema_metadata(None) for t in self._chunks]
        if not tables:
            return to_table("transcripts", [])
        merged = pa.concat_tables(tables)
        return merged.sort_by([("query_id", "ascending"), ("turn", "ascending")])

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
