"""The user's agent program, run for one episode and gone when it ends.

The program is the user's own (trusted like the user: same uid, same filesystem, same
network), but what it inherits and how long it lives are bounded by mechanism:

  - environment: only PATH, LANG, HOME and TMPDIR (both a fresh per-episode folder), the
    NETGAUGE_* variables of its episode, the config's `env`, and the variables named in
    `pass_env` copied from NetGauge's own; nothing else (no API keys by accident);
  - lifetime: its own session and process group, and (as root) a memory and pids cgroup
    of its own; at episode end it gets `grace_s` to exit, then its group gets SIGTERM,
    then SIGKILL, and every task left in its cgroup (a daemon that left the group with
    setsid included) is killed; the per-episode folder is removed;
  - stdin is /dev/null; stdout and stderr go to a log file in that folder, whose tail is
    the reason of an agent_error when it exits badly.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.cgroup import MemoryCgroup
from pipeline.errors import AgentFailure, AgentStopped, EnvironmentFailure

PIDS = 1024  # tasks the agent's cgroup may hold at once
TAIL = 1500  # characters of its log quoted when it fails
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def environment(
    workdir: Path,
    episode: Mapping[str, str],
    env: Mapping[str, str],
    pass_env: Sequence[str],
    source: Mapping[str, str] = os.environ,
) -> dict[str, str]:
    """What the agent's program is started with (see the module docstring)."""
    out = {
        "PATH": source.get("PATH", DEFAULT_PATH),
        "LANG": "C.UTF-8",
        "HOME": str(workdir),
        "TMPDIR": str(workdir / "tmp"),
    }
    out |= {name: source[name] for name in pass_env if name in source}
    out |= dict(env)
    out |= dict(episode)
    return out


class AgentProcess:
    """Start with `start(...)`; `ended()` says whether it is gone; `stop()` ends it."""

    def __init__(self, memory_mb: int) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="netgauge-agent-"))
        (self.workdir / "tmp").mkdir()
        self.log = self.workdir / "agent.log"
        self._memory_mb = memory_mb
        self._proc: subprocess.Popen[bytes] | None = None
        self._group: MemoryCgroup | None = None

    def start(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | Path) -> None:
        self._group = MemoryCgroup.create("agent", self._memory_mb << 20, pids=PIDS)
        prefix = self._group.join_prefix() if self._group is not None else []
        with open(self.log, "wb") as log:
            try:
                self._proc = subprocess.Popen(
                    [*prefix, *argv],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=dict(env),
                    cwd=str(cwd),
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as err:
                self.stop(0.0)
                raise AgentFailure(f"cannot start the agent's command {argv[0]!r}: {err}") from err

    @property
    def isolation(self) -> str:
        return "cgroup" if self._group is not None else "process group"

    def ended(self) -> AgentFailure | None:
        """None while it runs; else why it is gone (AgentStopped for exit code 0)."""
        code = self._proc.poll() if self._proc is not None else None
        if code is None:
            return None
        if code == 0:
            return AgentStopped("the agent's program exited (code 0)")
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        if code == 125 and self._group is not None:
            how += " (or could not join its cgroup)"
        return AgentFailure(f"the agent's program {how}; its output ends: {self.tail()!r}")

    def tail(self) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, grace_s: float) -> None:
        """Wait up to `grace_s` for it to exit, then end its group and cgroup; idempotent."""
        proc, self._proc = self._proc, None
        try:
            if proc is not None:
                _end(proc, grace_s)
            if self._group is not None:
                self._group.kill_all()
        finally:
            if self._group is not None:
                self._group.remove()
                self._group = None
            shutil.rmtree(self.workdir, ignore_errors=True)


def _end(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """Let it exit by itself, then SIGTERM its group, then SIGKILL what is left."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    _signal(proc.pid, signal.SIGTERM)  # the group outlives its leader: signal it anyway
    deadline = time.monotonic() + 1.0
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        proc.poll()  # reap the leader, or its zombie keeps the group alive
        time.sleep(0.02)
    _signal(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired as err:
        raise EnvironmentFailure(f"the agent's process {proc.pid} survived SIGKILL") from err


def _signal(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_gone(pgid: int, timeout_s: float = 2.0) -> bool:
    """Whether process group `pgid` is empty within `timeout_s` (for tests)."""
    deadline = time.monotonic() + timeout_s
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
