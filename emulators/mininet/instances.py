"""Unique instance prefixes, their lock files, and cleanup after dead instances.

Naming scheme: an instance prefix is `ngr` + 5 hex digits (e.g. `ngr3fa01`). Every
Mininet node the instance starts is named `<prefix><device>` (its shell's command line
ends in `mininet:<prefix><device>`), every switch `<prefix><domain>`. Switches live in
namespaces of their own, so nothing is created in the root namespace at all.

An instance holds an exclusive flock on `/run/netgauge/mininet/<prefix>.lock` for as long
as it lives; the kernel drops the lock when the holder dies, even by `kill -9`. The lock
file also records the holder's pid. `cleanup_stale()` takes every lock nobody holds,
kills the processes of that prefix (by pid: the node shells found by their command
line, and whatever runs in their namespaces) and deletes the lock file. It never touches
a prefix whose lock is held, nor anything outside the `ngr` family.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from pipeline.errors import EnvironmentFailure

FAMILY = "ngr"
STATE_DIR = Path("/run/netgauge/mininet")
PREFIX_RE = re.compile(rf"^{FAMILY}[0-9a-f]{{5}}$")


class Instance:
    """A reserved prefix: a lock file created already locked (link of a locked temp file),
    so a concurrent cleanup can never mistake a starting instance for a dead one."""

    def __init__(self, state_dir: Path = STATE_DIR) -> None:
        self.state_dir = state_dir
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise EnvironmentFailure(f"cannot create {state_dir}: {err} (run as root)") from err
        self._fd, self.prefix = self._reserve()

    @property
    def lock_path(self) -> Path:
        return self.state_dir / f"{self.prefix}.lock"

    def _reserve(self) -> tuple[int, str]:
        tmp = self.state_dir / f".{FAMILY}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps({"pid": os.getpid(), "started": time.time()}).encode())
            for _ in range(64):
                prefix = FAMILY + secrets.token_hex(3)[:5]
                try:
                    os.link(tmp, self.state_dir / f"{prefix}.lock")
                except FileExistsError:
                    continue
                return fd, prefix
        except BaseException:
            os.close(fd)
            raise
        finally:
            tmp.unlink(missing_ok=True)
        os.close(fd)
        raise EnvironmentFailure(f"no free instance prefix in {self.state_dir} after 64 tries")

    def release(self) -> None:
        """Delete the lock file, then drop the lock (the order keeps cleanups off it)."""
        if self._fd < 0:
            return
        self.lock_path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = -1


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


def dead_prefixes(state_dir: Path = STATE_DIR) -> Iterator[str]:
    """Prefixes of instances whose lock nobody holds (their owner died), one at a time.

    The lock is held while the caller removes what the prefix left; when the caller moves
    on, the instance's script folder and lock file are deleted.
    """
    if not state_dir.is_dir():
        return
    for path in sorted(state_dir.glob(f"{FAMILY}*.lock")):
        prefix = path.stem
        if not PREFIX_RE.match(prefix):
            continue
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # alive
            yield prefix
            shutil.rmtree(state_dir / prefix, ignore_errors=True)  # its script folder
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)


def cleanup_stale(state_dir: Path = STATE_DIR) -> list[str]:
    """Remove what dead instances left: their processes, namespaces and lock files."""
    return [
        f"{prefix}: {len(kill_prefix(prefix))} process(es)" for prefix in dead_prefixes(state_dir)
    ]
