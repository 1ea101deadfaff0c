"""What a zygote's jail is (`Root`) and what one command brings to it (`Turn`).

Both become the NUL-separated messages ngzygote.c reads. A `Root` is sent once, when the
zygote starts: the read-only root (binds, copied files, the sources staged for
per-command binds, empty bind targets, /dev, host name) and what every command gets on
top of it (a /proc, tmpfs folders, its identity, environment, working folder and cgroup
limits). A `Turn` is sent per command: its argv, its binds from the staged sources, the
sysctls it may write, a host name. Paths are absolute and normalized; ngzygote checks
them again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipeline.errors import ConfigError

MERGED_USR = ("bin", "sbin", "lib", "lib64")  # Debian 12: /bin -> usr/bin, ...
CAPS = {"CAP_NET_BIND_SERVICE": 10, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13}


def _path(p: str) -> str:
    if not p.startswith("/") or os.path.normpath(p) != p or p == "/" or "\0" in p:
        raise ConfigError(f"a jail path must be absolute and normalized, got {p!r}")
    return p


@dataclass(frozen=True)
class Root:
    """One zygote's jail: the read-only root and what each command gets on top of it.

    The root: `ro_binds` (host source, destination) bound read-only (nosuid, nodev);
    `ro_binds_try` the same where they exist; `copies` small files copied in where they
    exist (fewer mounts to clone and tear down per command); `stages` (host source,
    name) held as detached read-only mount trees, in no mount namespace, that a `Turn`
    binds from; `targets` (kind "f" or "d", path) the empty files or folders a `Turn`
    binds onto; `dirs` (mode, path) made first (bubblewrap makes missing parents 0700).

    Each command: a /proc of its own pid namespace if `proc` (/proc/sys read-only but for
    the keys its `Turn` writes); fresh `tmpfs` folders (owned by its uid); uid 0 of the
    initial user namespace holding only `caps`, or `uid`/`gid` in a user namespace that
    allows no more; `env`, `cwd`; a memory and pids cgroup of its own (`memory_bytes`,
    `pids`, named after `label`) when the machine has cgroups."""

    ro_binds: tuple[tuple[str, str], ...] = ()
    ro_binds_try: tuple[str, ...] = ()
    copies: tuple[str, ...] = ()
    stages: tuple[tuple[str, str], ...] = ()
    targets: tuple[tuple[str, str], ...] = ()
    dirs: tuple[tuple[str, str], ...] = ()
    dev: bool = True
    merged_usr: bool = True
    hostname: str = "netgauge"
    proc: bool = True
    tmpfs: tuple[str, ...] = ("/tmp",)
    caps: tuple[str, ...] = ()
    uid: int | None = None
    gid: int | None = None
    env: tuple[tuple[str, str], ...] = (("PATH", "/usr/sbin:/usr/bin"),)
    cwd: str = "/"
    label: str = "jail"
    memory_bytes: int = 256 << 20
    pids: int = 32

    def message(self) -> bytes:
        tokens = ["root"]
        if self.merged_usr:
            for name in MERGED_USR:
                if os.path.exists(f"/usr/{name}"):
                    tokens += ["symlink", f"usr/{name}", f"/{name}"]
        for mode, path in self.dirs:
            tokens += ["dir", mode, _path(path)]
        # Sources are read below the host's root after the pivot, where an absolute
        # symlink would point into the new root: resolve them now, as bubblewrap does.
        for src, dst in self.ro_binds:
            tokens += ["ro-bind", _path(os.path.realpath(src)), _path(dst)]
        for path in self.ro_binds_try:
            tokens += ["ro-bind-try", _path(os.path.realpath(path)), _path(path)]
        for path in self.copies:
            tokens += ["copy-try", _path(os.path.realpath(path)), _path(path)]
        for src, name in self.stages:
            tokens += ["stage", _path(os.path.realpath(src)), name]
        for kind, path in self.targets:
            tokens += ["target", kind, _path(path)]
        if self.dev:
            tokens.append("dev")
        tokens += ["hostname", self.hostname]
        # What every command gets.
        if self.proc:
            tokens.append("proc")
        for path in self.tmpfs:
            tokens += ["tmpfs", _path(path)]
        if self.uid is not None:
            gid = self.uid if self.gid is None else self.gid
            tokens += ["user", str(self.uid), str(gid)]
        else:
            tokens += ["caps", format(sum(1 << CAPS[c] for c in self.caps), "x")]
        for key, value in self.env:
            tokens += ["env", f"{key}={value}"]
        tokens += ["cwd", self.cwd]
        return encode(tokens)


@dataclass(frozen=True)
class Turn:
    """One command: `argv` (run as `exe` when argv[0] is not the program's path), `binds`
    (staged source, destination) with the staged source as `name` or `name/file` (no
    symlink on the way), the /proc/sys files it may write, its host name."""

    argv: tuple[str, ...]
    binds: tuple[tuple[str, str], ...] = ()
    writable_sysctls: tuple[str, ...] = ()
    hostname: str | None = None
    exe: str | None = None

    def message(self, fd_roles: Iterable[str]) -> bytes:
        """`fd_roles`: one letter per descriptor sent along, in order (o: stdout and
        stderr, i: stdin, n: the network namespace)."""
        if not self.argv:
            raise ValueError("a jailed command needs an argv")
        tokens = ["run"]
        for role in fd_roles:
            tokens += ["fd", role]
        for key in self.writable_sysctls:
            tokens += ["rw-sysctl", _path(key)]
        for src, dst in self.binds:
            tokens += ["bind", src, _path(dst)]
        if self.hostname:
            tokens += ["hostname", self.hostname]
        if self.exe is not None:
            tokens += ["exe", _path(self.exe)]
        tokens += ["argv", str(len(self.argv)), *self.argv]
        return encode(tokens)


def encode(tokens: Sequence[str]) -> bytes:
    out = bytearray()
    for token in tokens:
        data = token.encode("utf-8", "surrogateescape")
        if b"\0" in data:
            raise ValueError(f"a jail message cannot carry a NUL byte: {token[:80]!r}")
        out += data + b"\0"
    return bytes(out)
