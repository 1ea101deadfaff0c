"""Files written whole (pipeline/files.py): readers never see half a file, writers of one
file at once all succeed, a failed writer leaves the old file and no temporary one."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pipeline.files import TEMPORARY_GLOB, replacing, write_whole
from tests.conftest import in_threads


def test_writers_of_one_file_at_once_all_succeed_and_one_whole_version_remains(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plans" / "smoke.json"
    writers = 8
    versions = [f"{i}".encode() * 200_000 for i in range(writers)]  # large: writes overlap
    ready = threading.Barrier(writers)

    def write(i: int) -> None:
        ready.wait(timeout=30)
        write_whole(path, versions[i])

    assert in_threads(writers, write) == []
    assert path.read_bytes() in versions
    assert [p.name for p in path.parent.iterdir()] == ["smoke.json"]


def test_a_failed_writer_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    path = tmp_path / "summary.parquet"
    write_whole(path, "old")
    with pytest.raises(RuntimeError, match="half written"), replacing(path) as tmp:
        tmp.write_text("new, but")
        raise RuntimeError("half written")
    assert path.read_text() == "old"
    assert not list(tmp_path.glob(TEMPORARY_GLOB))
    assert [p.name for p in tmp_path.iterdir()] == ["summary.parquet"]


def test_the_file_gets_the_usual_permissions_and_durable_writes_land(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with replacing(tmp_path / "part-0.parquet", durable=True) as tmp:
            assert not tmp.exists() and tmp.parent == tmp_path and tmp.match(TEMPORARY_GLOB)
            tmp.write_text("rows")
    finally:
        os.umask(old)
    path = tmp_path / "part-0.parquet"
    assert path.read_text() == "rows"
    assert path.stat().st_mode & 0o777 == 0o644  # readable by others, as any shard
