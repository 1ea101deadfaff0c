"""Running a command for an emulator backend: no shell, a timeout and an output cap.

Backends differ only in how they enter a device (`mnexec -a PID` for Mininet, `nsenter
--net=…` for Kathará); they build that command prefix and call `start` and `collect`.
Every child gets its own session, a fixed environment, no stdin (unless a file is given)
and `/` as its working directory; at the timeout or past the output cap its whole process
group is killed.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from emulators.base import CommandResult
from pipeline.errors import EnvironmentFailure

SAFE_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C", "HOME": "/"}


def start(
    command: Sequence[str], *, stderr: int = subprocess.STDOUT, stdin: Any = subprocess.DEVNULL
) -> subprocess.Popen:
    """Start `command` (a device-entering prefix plus argv) with stdout piped; stdin is
    nothing unless a file is given."""
    try:
        return subprocess.Popen(
            list(command),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=SAFE_ENV,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
    except OSError as err:
        raise EnvironmentFailure(f"cannot start {command[0]!r}: {err}") from err


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (its own session), then reap the child."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def collect(
    proc: subprocess.Popen, argv: Sequence[str], *, timeout_s: float, output_bytes: int
) -> CommandResult:
    """Read `proc`'s output until it exits; stop it at `timeout_s` or past `output_bytes`."""
    started = time.perf_counter()
    assert proc.stdout is not None
    chunks: list[bytes] = []
    size = 0
    timed_out = truncated = False
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not sel.select(left):
                continue
            data = os.read(proc.stdout.fileno(), 65536)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if size > output_bytes:
                truncated = True
                break
    if timed_out or truncated:
        kill_group(proc)
        code = None
    else:
        try:
            code = proc.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            kill_group(proc)  # closed its output but kept running: still a timeout
            timed_out, code = True, None
    proc.stdout.close()
    output = b"".join(chunks)[:output_bytes].decode("utf-8", errors="replace")
    return CommandResult(
        argv=tuple(argv),
        exit_code=code,
        output=output,
        exec_s=time.perf_counter() - started,
        timed_out=timed_out,
        truncated=truncated,
    )
