"""Mininet's side of instances (emulators/instances.py): their processes and namespaces,
and cleanup after dead ones.

Naming scheme: every Mininet node an instance starts is named `<prefix><device>` (its
shell's command line ends in `mininet:<prefix><device>`), every switch `<prefix><domain>`.
Switches live in namespaces of their own, so nothing is created in the root namespace at
all. Lock files live in `/run/netgauge/mininet/`. `cleanup_stale()` takes every prefix
whose lock nobody holds (instances.dead_prefixes), kills its processes by pid (the node
shells found by their command line, and whatever runs in their namespaces) and lets its
lock file go.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from emulators.instances import dead_prefixes

STATE_DIR = Path("/run/netgauge/mininet")


def netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def shell_pids(prefix: str) -> list[int]:
    """Pids of the Mininet node shells of `prefix` (their argv ends in mininet:<prefix>...)."""
    tag = f"mininet:{prefix}".encode()
    found = []
    for pid in _pids():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.startswith(tag) for arg in argv):
            found.append(pid)
    return found


def pids_in_netns(inodes: set[int]) -> list[int]:
    """Pids of every process whose network namespace is one of `inodes`."""
    own = netns_inode(os.getpid())
    inodes = inodes - {own}  # never anything in our own (the root) namespace
    return [pid for pid in _pids() if netns_inode(pid) in inodes] if inodes else []


def kill_prefix(prefix: str) -> list[int]:
    """SIGKILL the node shells of `prefix` and every process in their namespaces."""
    shells = shell_pids(prefix)
    inodes = {ino for ino in map(netns_inode, shells) if ino is not None}
    victims = sorted(set(shells) | set(pids_in_netns(inodes)))
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return victims


def leftovers(prefix: str, state_dir: Path = STATE_DIR) -> list[str]:
    """What of instance `prefix` still exists: node shells, root-namespace interfaces
    (bridges, veths) named with it, its lock file and script folder."""
    found = [f"process {pid}" for pid in shell_pids(prefix)]
    found += [f"interface {name}" for name in os.listdir("/sys/class/net") if prefix in name]
    found += [f"file {p}" for p in (state_dir / f"{prefix}.lock", state_dir / prefix) if p.exists()]
    return found


def cleanup_stale(state_dir: Path = STATE_DIR) -> list[str]:
    """Remove what dead instances left: their processes, namespaces and lock files."""
    return [
        f"{prefix}: {len(kill_prefix(prefix))} process(es)" for prefix in dead_prefixes(state_dir)
    ]
