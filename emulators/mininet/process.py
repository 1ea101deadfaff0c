"""Running an agent's argv inside a Mininet node's namespaces, without a shell.

`mnexec -a PID` (Mininet's helper) joins the network and mount namespaces of the node's
shell process and execs the command; `emulators.process` does the rest (session, fixed
environment, timeout, output cap).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from emulators.base import CommandResult
from emulators.process import collect, start

MNEXEC = "mnexec"


def spawn(
    pid: int,
    argv: Sequence[str],
    *,
    stderr: int = subprocess.STDOUT,
    host_prefix: Sequence[str] = (),
) -> subprocess.Popen:
    """Start argv in the namespaces of process `pid` (after `host_prefix`, on the host);
    stdout (and stderr) piped."""
    return start([*host_prefix, MNEXEC, "-a", str(pid), *argv], stderr=stderr)


def run_capped(
    pid: int,
    argv: Sequence[str],
    *,
    timeout_s: float,
    output_bytes: int,
    host_prefix: Sequence[str] = (),
) -> CommandResult:
    """Run argv in `pid`'s namespaces; stop it at `timeout_s` or past `output_bytes`."""
    proc = spawn(pid, argv, host_prefix=host_prefix)
    return collect(proc, argv, timeout_s=timeout_s, output_bytes=output_bytes)
