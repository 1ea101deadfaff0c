"""Memory and pids cgroups for sandboxed agent actions, on cgroup v2 or v1 hierarchies.

Untrusted actions (a lab command, a kubectl call, agent Python) run in a cgroup of their
own so the kernel bounds what they hold: `memory` caps resident and kernel memory the
kernel charges to them, `pids` caps how many tasks exist at once. One cgroup per sandbox
is made by the trusted side, which moves the untrusted process into it before it runs
anything the agent sent (`join_prefix` for a spawned argv, `join_self` after a fork).

Names: `netgauge-<pid>-<label>` directly under the cgroup our own process is in (v1:
per controller; v2: under a `netgauge` group beside the root). `cleanup_stale()` removes
groups whose owning pid is gone. Without root or without a writable controller,
`MemoryCgroup.create` returns None and callers say so in their isolation description.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import EnvironmentFailure

ROOT = Path("/sys/fs/cgroup")
PREFIX = "netgauge-"
_NAME = re.compile(rf"^{PREFIX}(\d+)-")
_counter = itertools.count(1)


@dataclass(frozen=True)
class _Layout:
    """Where the groups go: one directory per controller (v1) or one for both (v2)."""

    version: int
    memory: Path  # the parent directory new memory groups are made in
    pids: Path | None  # v1 only: the parent for pids groups (None: no pids controller)


def _own_path(controller: str) -> str | None:
    """Our process's cgroup path for a v1 controller, or the v2 path ('' key)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    return None


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _layout() -> _Layout | None:
    """The hierarchy this machine offers us, or None when we cannot make groups."""
    unified = ROOT / "cgroup.controllers"
    if unified.exists():  # pure v2
        controllers = unified.read_text().split()
        base = ROOT / "netgauge"
        if "memory" not in controllers or not _writable(ROOT):
            return None
        try:
            base.mkdir(exist_ok=True)
            wanted = [c for c in ("memory", "pids") if c in controllers]
            (ROOT / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
            (base / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
        except OSError:
            return None
        return _Layout(2, base, None)
    memory_path = _own_path("memory")
    if memory_path is None or not (ROOT / "memory").is_dir():
        return None
    memory = ROOT / "memory" / memory_path.lstrip("/")
    if not _writable(memory):
        return None
    pids_path = _own_path("pids")
    pids = ROOT / "pids" / pids_path.lstrip("/") if pids_path is not None else None
    return _Layout(1, memory, pids if pids is not None and _writable(pids) else None)


_LAYOUT: list[_Layout | None] = []


def layout() -> _Layout | None:
    if not _LAYOUT:
        _LAYOUT.append(_layout())
    return _LAYOUT[0]


def available() -> bool:
    """Whether this process can make memory cgroups (root with a writable hierarchy)."""
    return layout() is not None


@dataclass
class MemoryCgroup:
    """One cgroup (memory, and pids where the machine has it) owned by this process."""

    name: str
    dirs: list[Path] = field(default_factory=list)  # v1: memory (+ pids); v2: one
    version: int = 2
    memory_bytes: int = 0

    @classmethod
    def create(cls, label: str, memory_bytes: int, pids: int | None = None) -> MemoryCgroup | None:
        """A fresh group with the limits set, or None when cgroups are not available."""
        found = layout()
        if found is None:
            return None
        cleanup_stale()
        name = f"{PREFIX}{os.getpid()}-{label}-{next(_counter)}"
        group = cls(name, version=found.version, memory_bytes=memory_bytes)
        try:
            mem = found.memory / name
            mem.mkdir()
            group.dirs.append(mem)
            if found.version == 2:
                (mem / "memory.max").write_text(str(memory_bytes))
                if (mem / "memory.swap.max").exists():
                    (mem / "memory.swap.max").write_text("0")
                if pids is not None and (mem / "pids.max").exists():
                    (mem / "pids.max").write_text(str(pids))
            else:
                (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
                memsw = mem / "memory.memsw.limit_in_bytes"
                if memsw.exists():
                    with contextlib.suppress(OSError):
                        memsw.write_text(str(memory_bytes))
                if pids is not None and found.pids is not None:
                    pid_dir = found.pids / name
                    pid_dir.mkdir()
                    group.dirs.append(pid_dir)
                    (pid_dir / "pids.max").write_text(str(pids))
        except OSError as err:
            group.remove()
            raise EnvironmentFailure(f"cannot set up cgroup {name}: {err}") from err
        return group

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def join_self(self) -> None:
        """Move the calling process into the group (a freshly forked child, as root)."""
        pid = str(os.getpid())
        for path in self.procs_files:
            with open(path, "w") as f:
                f.write(pid)

    def join_prefix(self) -> list[str]:
        """An argv prefix that joins the group, then execs the rest of the argv.

        A fixed script of ours: the untrusted argv follows as positional parameters
        ("$@"), so no agent text is ever read by the shell."""
        script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; done; '
        script += 'while [ "$1" != -- ]; do shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "ngjoin", *self.procs_files, "--"]

    def memory_peak(self) -> int:
        """The most memory the group held (bytes; 0 when unknown)."""
        mem = self.dirs[0]
        for name in ("memory.max_usage_in_bytes", "memory.peak"):
            with contextlib.suppress(OSError, ValueError):
                return int((mem / name).read_text())
        return 0

    def oom_kills(self) -> int:
        """How many tasks the kernel killed for passing the memory limit."""
        mem = self.dirs[0]
        files = ("memory.events", "memory.oom_control")
        for name in files:
            with contextlib.suppress(OSError):
                for line in (mem / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return 0

    def failcnt(self) -> int:
        """v1: times the limit was hit; v2: `max` events. A sign the group ran out."""
        mem = self.dirs[0]
        with contextlib.suppress(OSError, ValueError):
            return int((mem / "memory.failcnt").read_text())
        with contextlib.suppress(OSError):
            for line in (mem / "memory.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
        return 0

    def pids(self) -> list[int]:
        out: set[int] = set()
        for path in self.procs_files:
            with contextlib.suppress(OSError):
                out.update(int(p) for p in Path(path).read_text().split())
        return sorted(out)

    def kill_all(self, timeout_s: float = 2.0) -> None:
        """SIGKILL every task in the group and wait until it is empty."""
        kill = self.dirs[0] / "cgroup.kill"
        deadline = time.monotonic() + timeout_s
        while True:
            left = self.pids()
            if not left:
                return
            if kill.exists():
                with contextlib.suppress(OSError):
                    kill.write_text("1")
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise EnvironmentFailure(f"cgroup {self.name} still has tasks {left} after kill")
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and delete the group; idempotent."""
        with contextlib.suppress(EnvironmentFailure):
            self.kill_all()
        for d in reversed(self.dirs):
            _rmdir(d)
        self.dirs.clear()

    def __enter__(self) -> MemoryCgroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _rmdir(path: Path, timeout_s: float = 2.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY while the last task is being reaped
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)


def alive(pid: int) -> bool:
    """Whether process `pid` exists (owned by anyone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cleanup_stale() -> list[str]:
    """Remove groups of ours whose owning process is gone (a run killed with -9)."""
    found = layout()
    if found is None:
        return []
    removed = []
    for parent in (found.memory, found.pids):
        if parent is None or not parent.is_dir():
            continue
        for d in parent.iterdir():
            m = _NAME.match(d.name)
            if m and d.is_dir() and not alive(int(m.group(1))):
                group = MemoryCgroup(d.name, [d], found.version)
                group.remove()
                removed.append(str(d))
    return removed


def leftovers(pid: int | None = None) -> list[str]:
    """Groups of ours (of `pid`, default: any) that still exist."""
    found = layout()
    if found is None:
        return []
    out = []
    for parent in (found.memory, found.pids):
        if parent is None or not parent.is_dir():
            continue
        for d in parent.iterdir():
            m = _NAME.match(d.name)
            if m and (pid is None or int(m.group(1)) == pid):
                out.append(str(d))
    return out
