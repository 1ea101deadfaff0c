"""The MALT sandbox against hostile replies (tests/pysandbox_hostile.py), as root and as an
ordinary user, with the audit hook and without it: the kernel layers must hold alone.

Around every run: a process of the children's uid outside the sandbox (the victim) must
survive, no mark file may appear, no SysV shared memory segment may be left, and, as root,
the host (network, /proc/sys, files under /tmp /root /etc, processes) must be unchanged.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from emulators.pysandbox import kernel
from tests import hoststate
from tests.conftest import IN_CI, require, require_root
from tests.pysandbox_hostile import HOSTILE, run_suite

pytestmark = pytest.mark.integration
NOBODY = 65534
ROOT = Path(__file__).resolve().parents[1]
ANY_TYPED = {"ok", "exec_error", "blocked", "timeout", "resource_limit"}


def test_the_suite_is_large_enough():
    assert len(HOSTILE) >= 60
    assert len({name for name, _, _ in HOSTILE}) == len(HOSTILE)


@pytest.fixture
def victim_and_marks():
    """A sleeping process of the children's uid, and a folder anyone may write to."""
    require_root("the victim runs as uid 65534, started by root")
    marks = Path(tempfile.mkdtemp(prefix="ngs-marks-"))
    marks.chmod(0o777)
    victim = subprocess.Popen(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sleep", "600"]
    )
    yield victim, marks
    alive = victim.poll() is None
    victim.kill()
    victim.wait()
    left = sorted(p.name for p in marks.iterdir())
    shutil.rmtree(marks)
    assert alive, "the victim was killed"
    assert left == [], f"marks were created: {left}"


def _sysv_segments() -> list[str]:
    return Path("/proc/sysvipc/shm").read_text().splitlines()[1:]


def _check(results: list[dict], with_hook: bool) -> None:
    expected = {name: statuses for name, _, statuses in HOSTILE}
    assert [r["name"] for r in results] == list(expected)
    for r in results:
        allowed = expected[r["name"]] if with_hook else ANY_TYPED
        assert r["status"] in allowed, (r["name"], r["status"], r["error"])
    forged = next(r for r in results if r["name"] == "forged timing")
    assert forged["exec_s"] >= 3.0  # measured, whatever the child wrote about itself


@pytest.mark.parametrize("with_hook", [True, False], ids=["audit hook", "kernel layers only"])
def test_as_root(victim_and_marks, with_hook):
    victim, marks = victim_and_marks
    require(kernel.available(), kernel.CONFINE_MISSING)
    segments = _sysv_segments()
    before = hoststate.snapshot()
    results = run_suite(str(marks), victim.pid, audit_hook=with_hook)
    assert "cgroup+seccomp+rlimits" in results[0]["isolation"]
    _check(results, with_hook)
    assert _sysv_segments() == segments
    diff = [d for d in hoststate.diff(before, hoststate.snapshot()) if str(marks) not in d]
    assert diff == []


# Without root, the kernel layers alone: the boundary that must hold by itself (the audit
# hook, a second line, is run with it as root above).
@pytest.mark.parametrize("with_hook", [False], ids=["kernel layers only"])
def test_without_root(victim_and_marks, with_hook):
    """The same suite in the supported unprivileged mode, really as uid 65534."""
    victim, marks = victim_and_marks
    segments = _sysv_segments()
    home = Path(tempfile.mkdtemp(prefix="ngs-home-"))
    home.chmod(0o777)
    command = [
        "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
        "--inh-caps=-all", sys.executable, "-B", "-m", "tests.pysandbox_hostile",
        *([] if with_hook else ["--no-audit-hook"]), str(marks), str(victim.pid),
    ]  # fmt: skip
    env = {"HOME": str(home), "TMPDIR": str(home), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
    finally:
        leftover = sorted(p.name for p in home.iterdir())
        shutil.rmtree(home)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    isolation = results[0]["isolation"]
    assert "not root" in isolation
    if IN_CI or "seccomp" in isolation:
        assert "seccomp+rlimits" in isolation, isolation
    _check(results, with_hook)
    assert _sysv_segments() == segments
    assert leftover == []


SYSV_CALLS = {"shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "msgget": 68}


def test_the_seccomp_filter_refuses_sysv_ipc_calls():
    """What makes a SysV segment impossible in a child: shmget and its kin are not on the
    allow-list, so the filter answers EPERM. Checked by installing the very filter in a
    forked process and calling them there (ctypes here is the test's, never agent code's)."""
    require(kernel.available() and kernel.seccomp_supported(), "needs the seccomp filter")
    assert not set(SYSV_CALLS) & set(kernel.NAMES.values())
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    segments = _sysv_segments()
    pid = os.fork()
    if pid == 0:  # the child: filter, then try each call; exit 0 only if all got EPERM
        code = 0
        try:
            kernel.no_new_privs()
            kernel.SeccompFilter().install()
            for bit, number in enumerate(SYSV_CALLS.values()):
                if syscall(number, 0, 1 << 20, 0o1600) != -1 or ctypes.get_errno() != errno.EPERM:
                    code |= 1 << bit
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _sysv_segments() == segments
