"""Commands in a Kathará device's network namespace, run from the host with `nsenter`.

The device is named by the pid of its container's init; `nsenter --net=/proc/<pid>/ns/net`
joins only its network namespace, so the host's tools (ip, tc, iptables, nft, sysctl)
act on the device's network state. Children get their own session, a fixed environment,
no stdin and `/` as working directory; the whole group is killed at a timeout or cap.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from emulators.base import CommandResult
from emulators.process import collect, kill_group, start
from pipeline.errors import EnvironmentFailure

INLINE_CHARS = 4000


def spawn(pid: int, argv: Sequence[str], host_prefix: Sequence[str] = ()) -> subprocess.Popen:
    """Start argv in the network namespace of process `pid` (after `host_prefix`, on the
    host); stdout and stderr piped."""
    if not os.path.exists(f"/proc/{pid}/ns/net"):
        raise EnvironmentFailure(f"the device process {pid} is gone; the lab is unusable")
    return start([*host_prefix, "nsenter", f"--net=/proc/{pid}/ns/net", "--", *argv])


def run_capped(
    pid: int,
    argv: Sequence[str],
    *,
    timeout_s: float,
    output_bytes: int,
    host_prefix: Sequence[str] = (),
) -> CommandResult:
    """Run argv in `pid`'s network namespace; stop it at `timeout_s` or past `output_bytes`."""
    proc = spawn(pid, argv, host_prefix)
    return collect(proc, argv, timeout_s=timeout_s, output_bytes=output_bytes)


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
