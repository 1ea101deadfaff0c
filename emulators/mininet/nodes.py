"""Mininet itself: importing it without its global side effects, our bridge switch, and
running the emulator's own scripts in node shells.

The emulator's scripts (configuration, state dumps, restores, probes) run in the shells
Mininet keeps open in every node, all nodes at once: the forks happen inside the nodes,
in parallel, not in this process (a fork of this process costs ~5 ms, serialised). A
script is one line of shell; a longer one goes through a file (a tty line holds 4 KiB).
Agents' commands never reach these shells (see process.py).
"""

from __future__ import annotations

import os
import resource
import select
import shlex
import time
from pathlib import Path
from typing import Any

from pipeline.errors import EnvironmentFailure

SENTINEL = chr(127)  # Mininet's shell prompt: printed when a command line is done
INLINE_CHARS = 1000


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

    class Bridge(LinuxBridge):
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

    return {"Mininet": Mininet, "Host": Host, "Link": Link, "Bridge": Bridge}


def run_scripts(
    nodes: dict[str, Any], scripts: dict[str, str], folder: Path, timeout_s: float
) -> dict[str, tuple[int, str]]:
    """Run scripts[name] in nodes[name]'s shell, all at once: {name: (exit code, output)}.

    Output is stdout and stderr together. A shell that does not answer in time is a
    backend failure: that lab is unusable (its shell is still busy)."""
    by_fd = {}
    for name, script in scripts.items():
        node = nodes[name]
        if node.waiting or node.shell is None or node.shell.poll() is not None:
            raise EnvironmentFailure(f"the shell of {name} is busy or gone; the lab is unusable")
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
        for fd, _ in poller.poll(left * 1000):
            name, node = by_fd[fd]
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
