"""Where derived files live: `<data>/cache` or `$NETGAUGE_CACHE_DIR`, and entries written
so that readers never see half a file and processes sharing a cache never fail each other."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pipeline.capacity import Capacity, cached
from pipeline.cells import CACHE_DIR_ENV, Layout
from pipeline.plan import load_plan
from tests.conftest import in_threads


def test_the_cache_is_under_the_data_directory_unless_the_environment_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    assert Layout(tmp_path / "data").cache == tmp_path / "data" / "cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "shared"))
    assert Layout(tmp_path / "data").cache == tmp_path / "shared"
    monkeypatch.setenv(CACHE_DIR_ENV, "")  # empty: unset
    assert Layout(tmp_path / "data").cache == tmp_path / "data" / "cache"


def test_writers_of_one_entry_at_once_all_succeed_and_leave_one_file(tmp_path: Path) -> None:
    capacity = Capacity(total=7, by_operation={"a": 7}, exact=True, per_seed=1)
    writers = 8
    ready = threading.Barrier(writers)

    def compute() -> Capacity:
        ready.wait(timeout=30)  # every writer has missed the file: they all write it
        return capacity

    def write(i: int) -> None:
        assert cached(f"race-{tmp_path.name}", tmp_path, compute) == capacity

    assert in_threads(writers, write) == []
    assert [p.name for p in tmp_path.iterdir()] == [f"race-{tmp_path.name}.json"]


@pytest.mark.slow
def test_a_plan_writes_capacities_to_the_shared_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    monkeypatch.setenv(CACHE_DIR_ENV, str(shared))
    load_plan("smoke", tmp_path / "data", {"apps": ["malt"], "levels": [1]})
    assert list((shared / "malt").glob("capacity-*-L1.json"))
    assert not (tmp_path / "data" / "cache").exists()
