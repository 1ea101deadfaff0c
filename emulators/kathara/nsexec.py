"""Commands in a Kathará device's network namespace, run from the host with `nsenter`.

The device is named by the pid of its container's init; `nsenter --net=/proc/<pid>/ns/net`
joins only its network namespace, so the host's tools (ip, tc, iptables, sysctl, fping)
act on the device's network state. Children get their own session, a fixed environment,
no stdin and `/` as working directory; the whole group is killed at a timeout or cap.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from emulators.base import CommandResult
from pipeline.errors import EnvironmentFailure

SAFE_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C", "HOME": "/"}
INLINE_CHARS = 4000


def spawn(pid: int, argv: Sequence[str]) -> subprocess.Popen:
    if not os.path.exists(f"/proc/{pid}/ns/net"):
        raise EnvironmentFailure(f"the device process {pid} is gone; the lab is unusable")
    try:
        return subprocess.Popen(
            ["nsenter", f"--net=/proc/{pid}/ns/net", "--", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=SAFE_ENV,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
    except OSError as err:
        raise EnvironmentFailure(f"cannot start nsenter for {argv[0]!r}: {err}") from err


def kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run_capped(
    pid: int, argv: Sequence[str], *, timeout_s: float, output_bytes: int
) -> CommandResult:
    """Run argv in `pid`'s network namespace; stop it at `timeout_s` or past `output_bytes`."""
    started = time.perf_counter()
    proc = spawn(pid, argv)
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
            kill_group(proc)
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


def run_scripts(
    pids: dict[str, int], scripts: dict[str, str], folder: Path, timeout_s: float
) -> dict[str, tuple[int, str]]:
    """Run scripts[name] with bash in pids[name]'s namespace, all at once:
    {name: (exit code, stdout and stderr)}. Not finishing in time is a backend failure."""
    procs = {}
    for name, script in scripts.items():
        if len(script) > INLINE_CHARS or "\n" in script:
            path = folder / f"{name}.sh"
            path.write_text(script + "\n")
            script = f"bash {shlex.quote(str(path))}"
        procs[name] = spawn(pids[name], ["bash", "-c", script])
    deadline = time.monotonic() + timeout_s
    results = {}
    try:
        for name, proc in procs.items():
            try:
                out, _ = proc.communicate(timeout=max(0.01, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as err:
                raise EnvironmentFailure(
                    f"a script on {name} did not finish in {timeout_s:.0f} s"
                ) from err
            results[name] = (proc.returncode, out.decode("utf-8", errors="replace"))
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                kill_group(proc)
            if proc.stdout is not None:
                proc.stdout.close()
    return results
