"""Mininet's side of instances (emulators/instances.py): their processes and namespaces,
and cleanup after dead ones.

Naming scheme: every Mininet node an instance starts is named `<prefix><device>` (its
shell's command line ends in `mininet:<prefix><device>`), every switch `<prefix><domain>`.
Switches live in namespaces of their own, so nothing is created in the root namespace at
all. Lock files live in `/run/netgauge/mininet/`. `cleanup_stale()` takes every prefix
whose lock nobody holds (instances.dead_prefixes), kills its processes (the node shells
found by their command line, and whatever runs in their namespaces) and lets its lock
file go.

A namespace is named by a held descriptor (`pin`), never by its inode number alone: the
kernel gives a dead namespace's number to the next namespace made on the machine at once,
so a number kept past its namespace's death names someone else's (issue 26: a stopping lab
swept the numbers of its dead switches and SIGKILLed other runs' node shells). While a pin
is open its namespace lives and its number is its own. Processes are signalled through
pidfds, so a pid that exits and is reused between the scan and the signal is never hit.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable, Iterator
from pathlib import Path

from emulators.instances import dead_prefixes

STATE_DIR = Path("/run/netgauge/mininet")

NsId = tuple[int, int]  # (st_dev, st_ino) of a namespace, valid while it is pinned


def netns_inode(pid: int) -> int | None:
    """The inode number of `pid`'s network namespace: a name that holds only while the
    namespace lives (see the module docstring); for reports and tests."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _ns_id(pid: int) -> NsId | None:
    try:
        st = os.stat(f"/proc/{pid}/ns/net")
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


@contextlib.contextmanager
def _pidfd(pid: int) -> Iterator[int | None]:
    """A pidfd of `pid` (None: it is gone) for the block."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # ESRCH: gone
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _alive(pidfd: int) -> bool:
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except ProcessLookupError:
        return False
    return True


def pin(pid: int) -> int | None:
    """A descriptor holding `pid`'s network namespace (close it when done), or None when
    the process is gone. The caller makes sure `pid` is the process it means (its own
    unreaped child, or one checked through a pidfd)."""
    try:
        return os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def pinned(fds: Iterable[int]) -> set[NsId]:
    """The identities of the pinned namespaces, less our own (the root namespace)."""
    ids = set()
    for fd in fds:
        st = os.fstat(fd)
        ids.add((st.st_dev, st.st_ino))
    return ids - {_ns_id(os.getpid())}


def pids_in(fds: Iterable[int]) -> list[int]:
    """Pids of the processes in the namespaces the descriptors `fds` hold."""
    ids = pinned(fds)
    return [pid for pid in _pids() if _ns_id(pid) in ids] if ids else []


def kill_in(fds: Iterable[int]) -> list[int]:
    """SIGKILL every process in the namespaces `fds` hold; the pids signalled."""
    ids = pinned(fds)
    if not ids:
        return []
    killed = []
    for pid in _pids():
        if _ns_id(pid) not in ids:
            continue
        with _pidfd(pid) as pidfd:
            # Checked again through the pidfd: if `pid` exited and was reused after the
            # first look, the newcomer is judged by its own namespace, and a signal to the
            # pidfd of a process that exited goes nowhere.
            if pidfd is not None and _ns_id(pid) in ids:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    killed.append(pid)
    return killed


def shell_pids(prefix: str, pids: Iterable[int] | None = None) -> list[int]:
    """Pids of the Mininet node shells of `prefix` (their argv ends in mininet:<prefix>...),
    among `pids` (default: every process)."""
    tag = f"mininet:{prefix}".encode()
    found = []
    for pid in _pids() if pids is None else pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.startswith(tag) for arg in argv):
            found.append(pid)
    return found


def pin_shells(prefix: str) -> list[int]:
    """Pins of the namespaces of `prefix`'s live node shells, each checked to be a shell
    of `prefix` while its namespace was opened (a pid reused meanwhile is left alone)."""
    fds = []
    for pid in shell_pids(prefix):
        with _pidfd(pid) as pidfd:
            fd = pin(pid) if pidfd is not None else None
            if fd is None:
                continue
            # Still alive after both reads: the namespace opened and the command line read
            # are the pidfd's process's (a live process's pid is never reused).
            if shell_pids(prefix, [pid]) and _alive(pidfd):
                fds.append(fd)
            else:
                os.close(fd)
    return fds


def kill_prefix(prefix: str) -> list[int]:
    """SIGKILL the node shells of `prefix` and every process in their namespaces."""
    fds = pin_shells(prefix)
    try:
        return kill_in(fds)
    finally:
        for fd in fds:
            os.close(fd)


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
