"""tests/hoststate.py itself: what it must see for the hostile suites to mean anything."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from tests import hoststate


def _entries(diff: list[str], pid: int) -> list[str]:
    return [line for line in diff if line.startswith("process") and f"({pid}, " in line]


def test_a_process_the_test_run_starts_and_leaves_running_is_found():
    helper = subprocess.Popen(["sleep", "300"])  # a helper started before the snapshot
    try:
        before = hoststate.snapshot()
        leaked = subprocess.Popen(["sleep", "301"])  # a child of this test run: a leak
        try:
            after = hoststate.snapshot()
        finally:
            leaked.kill()
            leaked.wait()
        processes = hoststate._diff_maps("process", before.processes, after.processes, 10**6)
        assert _entries(processes, leaked.pid), processes
        assert not _entries(processes, helper.pid)
    finally:
        helper.kill()
        helper.wait()


def test_a_pid_reused_by_another_process_is_a_difference():
    before = {(123, 1): (0, "a")}
    after = {(123, 2): (0, "b")}
    assert len(hoststate._diff_maps("process", before, after)) == 2


def test_the_kernel_modules_are_in_the_snapshot():
    state = hoststate.snapshot()
    if Path("/proc/modules").exists():
        assert state.modules and "<" not in state.modules
    else:
        assert state.modules == "<no module support>"
    loaded = dataclasses.replace(state, modules=state.modules + "\nsch_cake")
    assert hoststate.diff(state, loaded) == ["module new: sch_cake = True"]
