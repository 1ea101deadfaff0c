"""Operating-system jails for untrusted actions: a bubblewrap (`bwrap`) command line per spec.

A `Jail` says what one sandboxed process may see and hold; `argv(command)` turns it into a
bwrap invocation that builds a fresh root of tmpfs with only the named files bound in,
new pid, IPC, UTS and cgroup namespaces, a new session (no terminal to inject into), a
cleared environment, and, by default, no capabilities at all. The network namespace is
the caller's: enter the lab's (or the API server's) namespace first, e.g.

    nsenter --net=/run/netns/X  <cgroup.join_prefix()>  bwrap ...  tool args

Two ways to run:
  - `uid=None`: stays uid 0 of the initial user namespace, holding only `caps` (e.g.
    CAP_NET_ADMIN for a lab's own network namespace); `no_new_privs` is always set, so
    no setuid or file capability adds to that.
  - `uid=N`: a new user namespace in which the process is uid N and holds nothing;
    creating further user namespaces is disabled. Started by root, bwrap itself is first
    made uid N (setpriv), so uid N inside is uid N outside too: as root, bwrap would map
    the jail's uid to root, which still owns files and signals by that name. Every path
    bound into such a jail must therefore be reachable by uid N.

The jail's pid namespace dies with its first process: when the tool exits or is killed,
everything it started is killed by the kernel (`--die-with-parent` covers the rest).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import cgroup
from pipeline.errors import EnvironmentFailure

BWRAP = "bwrap"
MERGED_USR = ("bin", "sbin", "lib", "lib64")  # Debian 12: /bin -> usr/bin, ...


def bwrap_path() -> str:
    found = shutil.which(BWRAP, path="/usr/bin:/bin:/usr/local/bin")
    if found is None:
        raise EnvironmentFailure(
            "bubblewrap (bwrap) is not installed; run scripts/setup.sh (apt package bubblewrap)"
        )
    return found


@dataclass(frozen=True)
class Jail:
    """What one jailed process can touch. Paths are host paths bound at the same place
    unless given as (source, destination)."""

    ro_binds: Sequence[str | tuple[str, str]] = ()
    ro_binds_try: Sequence[str] = ()  # bound only if they exist on this machine
    binds: Sequence[str | tuple[str, str]] = ()  # writable
    tmpfs: Sequence[str] = ("/tmp",)
    proc: bool = True  # a /proc of the jail's pid namespace, with /proc/sys read-only
    writable_sysctls: Sequence[str] = ()  # /proc/sys files made writable (if they exist)
    dev: bool = True  # a minimal /dev (null, zero, random, urandom, tty, pts)
    caps: Sequence[str] = ()  # kept when uid is None, e.g. ("CAP_NET_ADMIN",)
    uid: int | None = None  # None: root of the initial user namespace with `caps` only
    gid: int | None = None
    env: dict[str, str] = field(default_factory=lambda: {"PATH": "/usr/sbin:/usr/bin"})
    cwd: str = "/"
    hostname: str = "netgauge"
    files: Sequence[tuple[int, str]] = ()  # (fd, destination): read-only data from an fd
    merged_usr: bool = True  # /bin, /sbin, /lib, /lib64 as symlinks into /usr
    # Folders made 0755 before any bind (bwrap makes a bind's missing parents 0700, which a
    # jail with `uid` set could not cross).
    dirs: Sequence[str] = ()

    def argv(self, command: Sequence[str]) -> list[str]:
        """The bwrap command line that runs `command` inside this jail."""
        if not command:
            raise ValueError("a jailed command needs an argv")
        args = [
            bwrap_path(),
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            self.hostname,
            "--clearenv",
        ]
        if self.uid is not None:
            gid = self.uid if self.gid is None else self.gid
            args += ["--unshare-user", "--uid", str(self.uid), "--gid", str(gid)]
            args += ["--disable-userns", "--cap-drop", "ALL"]
        else:
            args += ["--cap-drop", "ALL"]
            for cap in self.caps:
                args += ["--cap-add", cap]
        if self.merged_usr:
            for name in MERGED_USR:
                if Path(f"/usr/{name}").exists():
                    args += ["--symlink", f"usr/{name}", f"/{name}"]
        for path in self.dirs:
            args += ["--perms", "0755", "--dir", path]
        for spec in self.ro_binds:
            src, dst = _pair(spec)
            args += ["--ro-bind", src, dst]
        for path in self.ro_binds_try:
            args += ["--ro-bind-try", path, path]
        for spec in self.binds:
            src, dst = _pair(spec)
            args += ["--bind", src, dst]
        for fd, dst in self.files:
            args += ["--ro-bind-data", str(fd), dst]
        if self.dev:
            args += ["--dev", "/dev"]
        if self.proc:
            # bwrap's own cover of /proc/sys is skipped for root; make it explicit.
            args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
            for key in self.writable_sysctls:
                args += ["--bind-try", key, key]
        for path in self.tmpfs:
            args += ["--tmpfs", path]
        for key, value in self.env.items():
            args += ["--setenv", key, value]
        args += ["--chdir", self.cwd, "--remount-ro", "/", "--", *command]
        if self.uid is not None and os.geteuid() == 0:
            gid = self.uid if self.gid is None else self.gid
            drop = ["setpriv", f"--reuid={self.uid}", f"--regid={gid}", "--clear-groups"]
            return [*drop, "--inh-caps=-all", "--", *args]
        return args


def _pair(spec: str | tuple[str, str]) -> tuple[str, str]:
    if isinstance(spec, tuple):
        return spec
    return spec, spec


def library_binds() -> list[str]:
    """The shared-library folders a dynamically linked tool needs (no executables of
    /usr/bin or /usr/sbin come with them)."""
    out = []
    for path in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64"):
        if os.path.isdir(path) and not os.path.islink(path):
            out.append(path)
    return out


@contextmanager
def joined_cgroup(label: str, memory_bytes: int, pids: int) -> Iterator[list[str]]:
    """A host argv prefix that joins a fresh memory and pids cgroup (none where the machine
    gives no cgroups), for the block's duration: how a one-shot jail's command is bounded.
    The cgroup, and anything left in it, is gone after the block."""
    group = cgroup.MemoryCgroup.create(label, memory_bytes, pids=pids)
    try:
        yield group.join_prefix() if group is not None else []
    finally:
        if group is not None:
            group.remove()
