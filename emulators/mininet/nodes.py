"""Mininet itself: importing it without its global side effects, our node classes, and
running the emulator's own scripts in node shells.

The emulator's scripts (configuration, state dumps, restores, probes) run in the shells
Mininet keeps open in every node, all nodes at once: the forks happen inside the nodes,
in parallel, not in this process (a fork of this process costs ~5 ms, serialised). A
script is one line of shell; a longer one goes through a file (a tty line holds 4 KiB).
Agents' commands never reach these shells (see process.py).

Every read from a node shell has a deadline and notices the shell's death: Mininet's own
`Node.cmd` (used while a lab is built and started) has neither (its poll also waits for
POLLOUT, always ready, so it blocks in the read itself), and a dead shell's pty never
reads as end of file (Mininet keeps the other end open), so a shell killed under it hung
the run for good (issue 26). Our nodes (`Bounded`) wait for POLLIN in slices of
LIVENESS_S, checking their shell, for at most READ_TIMEOUT_S (a hung-up pty is a dead
shell), and decode what they read with replacement: a byte stored in the kernel (an
iptables comment, an interface alias) that is not UTF-8 is shown as U+FFFD, never raised
as a UnicodeDecodeError.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import resource
import select
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from pipeline.errors import EnvironmentFailure

SENTINEL = chr(127)  # Mininet's shell prompt: printed when a command line is done
INLINE_CHARS = 1000
READ_TIMEOUT_S = 30.0  # a node shell silent this long while we wait for it is stuck
LIVENESS_S = 0.2  # how often a wait for a node shell checks that it still runs


def shell_status(node: Any) -> str:
    """What became of a node's shell, as the end of a sentence ("died (SIGKILL)")."""
    shell = getattr(node, "shell", None)
    code = None if shell is None else shell.poll()
    if shell is None:
        return "is closed"
    if code is None:
        return "is running"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"died (killed by {signal.Signals(-code).name})"
    return f"died (exit status {code})"


def hung_up(node: Any) -> EnvironmentFailure:
    """The failure of a node whose pty hung up: its shell (the session leader) died, as
    the short wait for its exit status shows."""
    if node.shell is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.shell.wait(timeout=1.0)
    return EnvironmentFailure(f"the shell of {node.name} {shell_status(node)} (its pty hung up)")


def wait_readable(node: Any, timeout_s: float = READ_TIMEOUT_S) -> None:
    """Return once `node`'s shell has output to read; raise EnvironmentFailure when the
    shell is gone or silent for `timeout_s`. A hung-up pty (its shell, the session leader,
    died) polls as POLLHUP without data, and a read of it would block: that is a death."""
    deadline = time.monotonic() + timeout_s
    poller = select.poll()  # not Mininet's pollOut: it also waits for POLLOUT, always ready
    poller.register(node.stdout.fileno(), select.POLLIN)
    while True:
        events = sum(e for _, e in poller.poll(LIVENESS_S * 1000))
        if events & select.POLLIN:
            return
        if events:
            raise hung_up(node)
        if node.shell is None or node.shell.poll() is not None:
            raise EnvironmentFailure(f"the shell of {node.name} {shell_status(node)}")
        if time.monotonic() >= deadline:
            raise EnvironmentFailure(
                f"the shell of {node.name} printed nothing for {timeout_s:.0f} s"
            )


def terminate(node: Any, timeout_s: float = 5.0) -> None:
    """Kill a node's shell and everything in its session (SIGKILL: Mininet's SIGHUP can be
    ignored), reap it within `timeout_s`, then let Mininet close its pty (without its own
    unbounded wait). The shell is our unreaped child while `poll()` says it runs, so its
    pid (and its session's id) is its own."""
    if node.shell is not None and node.shell.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.shell.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.shell.wait(timeout=timeout_s)
    node.waitExited = False
    try:
        node.terminate()
    except OSError as err:  # a pty already closed
        raise EnvironmentFailure(f"closing the shell of {node.name}: {err}") from err


def load_mininet() -> dict[str, Any]:
    """Import Mininet (only when a lab is built) and switch off its global side effects."""
    try:
        from mininet.link import Link
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.node import Host
        from mininet.nodelib import LinuxBridge
    except ImportError as err:
        raise EnvironmentFailure(
            f"Mininet is not importable ({err}); run scripts/setup.d/20-mininet.sh as root"
        ) from err
    if os.geteuid() != 0:
        raise EnvironmentFailure("Mininet needs root (network namespaces, veth pairs)")
    # Mininet.init() would raise sysctls of the root namespace (fixLimits); we raise only
    # this process's open-file limit, which many node shells need.
    Mininet.inited = True
    setLogLevel("error")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    class Bounded:
        """Node reads with a deadline and liveness checks, decoded with replacement (see the
        module docstring); mixed in before Mininet's node classes."""

        def startShell(self, mnopts: Any = None) -> None:
            self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            super().startShell(mnopts)

        def read(self, size: int = 1024) -> str:
            if self.readbuf:  # what is buffered, without a read that could block on the pty
                result, self.readbuf = self.readbuf[:size], self.readbuf[size:]
                return result
            wait_readable(self)
            return super().read(size)

        def waitReadable(self, timeoutms: Any = None) -> Any:
            if timeoutms is None and not self.readbuf:
                wait_readable(self)
                timeoutms = 0
            return super().waitReadable(timeoutms)

    class BoundedHost(Bounded, Host):
        """A Mininet host whose shell reads are bounded."""

    class Bridge(Bounded, LinuxBridge):
        """A Linux bridge inside its own namespace, enslaving all of its ports."""

        def __init__(self, name: str, **params: Any) -> None:
            super().__init__(name, **params)
            self.controlIntf = None

        def start(self, _controllers: Any) -> None:
            ports = [i.name for i in self.intfList() if i.name != "lo"]
            steps = [
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1",
                f"ip link add name {self.name} type bridge",
                *(f"ip link set {p} master {self.name} up" for p in ports),
                f"ip link set {self.name} up",
            ]
            self.cmd(" && ".join(steps), printPid=False)

        def stop(self, deleteIntfs: bool = True) -> None:
            """Nothing: the namespace, with the bridge and its ports, dies with the node."""

    return {"Mininet": Mininet, "Host": BoundedHost, "Link": Link, "Bridge": Bridge}


def run_scripts(
    nodes: dict[str, Any], scripts: dict[str, str], folder: Path, timeout_s: float
) -> dict[str, tuple[int, str]]:
    """Run scripts[name] in nodes[name]'s shell, all at once: {name: (exit code, output)}.

    Output is stdout and stderr together. A shell that does not answer in time is a
    backend failure: that lab is unusable (its shell is still busy)."""
    by_fd = {}
    for name, script in scripts.items():
        node = nodes[name]
        if node.shell is None or node.shell.poll() is not None:
            why = f"the shell of {name} {shell_status(node)}; the lab is unusable"
            raise EnvironmentFailure(why)
        if node.waiting:
            raise EnvironmentFailure(f"the shell of {name} is busy; the lab is unusable")
        if len(script) > INLINE_CHARS or "\n" in script:
            path = folder / f"{name}.sh"
            path.write_text(script + "\n")
            script = f"bash {shlex.quote(str(path))}"
        node.sendCmd(f"{script}; echo @@rc=$?", printPid=False)
        by_fd[node.stdout.fileno()] = (name, node)
    chunks: dict[str, list[str]] = {name: [] for name in scripts}
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout_s
    waiting = len(by_fd)
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            late = sorted(name for name, node in by_fd.values() if node.waiting)
            raise EnvironmentFailure(f"the shells of {late} did not answer in {timeout_s:.0f} s")
        ready = poller.poll(min(left, LIVENESS_S) * 1000)
        if not ready:  # a dead shell never becomes readable: look at the ones waited for
            for name, node in by_fd.values():
                if node.waiting and (node.shell is None or node.shell.poll() is not None):
                    raise EnvironmentFailure(f"the shell of {name} {shell_status(node)}")
        for fd, events in ready:
            name, node = by_fd[fd]
            if not events & select.POLLIN:  # hung up: its shell died (see wait_readable)
                raise hung_up(node)
            try:
                data = node.read(1 << 16)
            except OSError as err:  # EIO: the shell died
                raise EnvironmentFailure(f"the shell of {name} died: {err}") from err
            if SENTINEL in data:
                node.waiting = False
                data = data.replace(SENTINEL, "")
            chunks[name].append(data)
            if not node.waiting:
                poller.unregister(fd)
                waiting -= 1
    results = {}
    for name, parts in chunks.items():
        body, _, tail = "".join(parts).replace("\r\n", "\n").rpartition("@@rc=")
        results[name] = (int(tail.strip()) if tail.strip().isdigit() else -1, body)
    return results
