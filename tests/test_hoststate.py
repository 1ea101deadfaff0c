"""tests/hoststate.py itself: what it must see for the hostile suites to mean anything."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import hoststate
from tests.conftest import require, require_root


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


# A user of the machine who is not the project: it writes and deletes files under /tmp and
# starts and stops processes, all the time. Detached (double fork, setsid) before the
# tracker starts, so nothing it does descends from the test run.
NOISE = """
import os, subprocess, sys, time
folder, pids = sys.argv[1], sys.argv[2]
if os.fork():
    sys.exit(0)
os.setsid()
if os.fork():
    sys.exit(0)
open(pids, "w").write(str(os.getpid()))
for i in range(600):
    with open(f"{folder}-{i % 7}", "w") as f:
        f.write("x" * i)
    if i % 3 == 0:
        os.unlink(f"{folder}-{(i + 3) % 7}") if os.path.exists(f"{folder}-{(i + 3) % 7}") else None
    subprocess.Popen(["sleep", "0.3"])
    time.sleep(0.05)
"""


@pytest.mark.integration
def test_the_projects_changes_are_caught_while_another_user_churns_tmp_and_processes(tmp_path):
    """Strict against the project, silent about others: a file under /tmp left by a jailed
    command and a process left behind (detached with setsid) are the diff's only lines,
    while an unrelated process writes files under /tmp and starts and stops processes."""
    require_root("the tracker reads the kernel's fork and file events (root)")
    from emulators.jail import Jail, library_binds
    from tests.hostwatch import Tracker

    token = secrets.token_hex(4)
    noise = f"/tmp/ngh-noise-{token}"
    pids = tmp_path / "noise.pid"
    subprocess.run([sys.executable, "-c", NOISE, noise, str(pids)], check=True)
    for _ in range(200):
        if pids.exists() and pids.read_text():
            break
        time.sleep(0.05)
    noise_pid = int(pids.read_text())
    left = Path(f"/tmp/ngh-left-{token}")
    left.mkdir()
    leftover = None
    watch = Tracker.start(hoststate.FILE_TOPS)
    require(watch is not None, "the kernel has no proc connector or fanotify")
    try:
        before = hoststate.snapshot(watch)
        jail = Jail(ro_binds=["/usr", *library_binds()], binds=[(str(left), "/out")])
        subprocess.run(jail.argv(["/usr/bin/touch", "/out/left-by-the-jail"]), check=True)
        started = subprocess.run(
            ["sh", "-c", "setsid sleep 300 >/dev/null 2>&1 < /dev/null & echo $!"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        leftover = int(started.stdout)
        time.sleep(1.0)  # the other user keeps going meanwhile
        after = hoststate.snapshot(watch)
        got = hoststate.diff(before, after)
        files = hoststate._diff_maps("file", before.files, after.files, 10**6)
        processes = hoststate._diff_maps("process", before.processes, after.processes, 10**6)
    finally:
        for pid in (noise_pid, leftover):
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for path in Path("/tmp").glob(f"ngh-*-{token}*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        watch.close()
    assert any(noise in line for line in files)  # the other user did change the host
    assert any("sleep 0.3" in line for line in processes)
    assert [line.split(" = ")[0] for line in got] == [
        f"file new: {left}/left-by-the-jail",
        f"process new: ({leftover}, {after_start(after, leftover)})",
    ], got


def after_start(state: hoststate.HostState, pid: int) -> int:
    return next(start for p, start in state.processes if p == pid)
