"""Unique instance prefixes and their lock files, for every namespace-based backend.

Naming scheme: an instance prefix is `ngr` + 5 hex digits (e.g. `ngr3fa01`); a backend
names whatever it creates with it (Mininet nodes `<prefix><device>`, the Kathará lab
`<prefix>`), so many instances run at once and leftovers of a dead one can be found.

An instance holds an exclusive flock on `<state dir>/<prefix>.lock` for as long as it
lives; the kernel drops the lock when the holder dies, even by `kill -9`. The lock file
also records the holder's pid; `<state dir>/<prefix>/` is its script folder. Each backend
has a state dir of its own (`/run/netgauge/mininet`, `/run/netgauge/kathara/instances`).
`dead_prefixes` hands out the prefixes whose lock nobody holds so that the backend
removes what they left; it never yields a prefix whose lock is held, nor anything
outside the `ngr` family.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from pipeline.errors import EnvironmentFailure

FAMILY = "ngr"
PREFIX_RE = re.compile(rf"^{FAMILY}[0-9a-f]{{5}}$")


class Instance:
    """A reserved prefix: a lock file created already locked (link of a locked temp file),
    so a concurrent cleanup can never mistake a starting instance for a dead one."""

    def __init__(self, state_dir: Path) -> None:
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


def dead_prefixes(state_dir: Path) -> Iterator[str]:
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
            if not _still_named(fd, path):
                continue  # released meanwhile: the name may be a new instance's now
            yield prefix
            shutil.rmtree(state_dir / prefix, ignore_errors=True)  # its script folder
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)


def _still_named(fd: int, path: Path) -> bool:
    """Whether the lock file open as `fd` is still the one at `path`. An instance deletes
    its lock file before it drops the lock, so a file opened just before that is locked
    here once it is no longer the instance's name, which a new instance may hold by then."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)
