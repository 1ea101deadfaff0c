"""The jail every agent command runs in, inside its device's network namespace.

What a lab command can touch is decided here, by the kernel, before any argument check:
  - uid 0 of the host holding only CAP_NET_ADMIN and CAP_NET_RAW (the network namespace
    the backend entered is the lab device's, so that is all those reach), no_new_privs;
  - new pid, IPC, UTS, cgroup and mount namespaces: a fresh root holding only the allowed
    tools (bound at their own paths), the shared libraries and the few /etc files they
    read; no shell, no interpreter, no host files; /tmp and /run are empty tmpfs;
  - /proc/sys read-only, except the keys the checked command writes with `sysctl` (each
    one the kernel keeps per network namespace: sysctls.py), bound writable for it alone;
  - a memory and pids cgroup of its own, killed and removed after the command; its pid
    namespace dies with it, so nothing it starts outlives it.

Two ways to build it, one boundary: `lab_root` and `lab_turn` describe it for the lab's
persistent jail (emulators/zygote: the root built once per lab with every allowed tool
staged, each command binding only its own tool), which the sandbox uses; `jail` and
`confined` build it afresh with bubblewrap for one command (the reference the zygote's
jail is tested against, and the way for a backend without `run_jailed`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from emulators.jail import Jail, joined_cgroup, library_binds
from emulators.netcmd.policy import tool_path
from emulators.netcmd.tools import ALL_TOOL_NAMES
from emulators.zygote.spec import Root, Turn
from pipeline.errors import EnvironmentFailure

CAPS = ("CAP_NET_ADMIN", "CAP_NET_RAW")
MEMORY_BYTES = 256 << 20
PIDS = 32
# What the allowed tools read besides their libraries: iproute2's tables, protocol and
# service names, iptables' alternatives link target, name service configuration.
ETC = (
    "/etc/iproute2", "/usr/share/iproute2", "/etc/protocols", "/etc/services",
    "/etc/ethertypes", "/etc/networks", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf",
    "/etc/ld.so.cache", "/usr/lib/tc", "/usr/lib/x86_64-linux-gnu/tc",
)  # fmt: skip


@functools.cache
def staged_tools() -> dict[str, tuple[str, str]]:
    """{absolute tool path: (its folder's stage name, its file's name there)} for every
    allowed tool here; the stages are the folders the tools really are in."""
    real = {p: os.path.realpath(p) for p in map(tool_path, ALL_TOOL_NAMES) if p is not None}
    folders = {
        f: f"d{i}" for i, f in enumerate(sorted({os.path.dirname(r) for r in real.values()}))
    }
    return {p: (folders[os.path.dirname(r)], os.path.basename(r)) for p, r in sorted(real.items())}


@functools.cache
def lab_root() -> Root:
    """The lab's persistent jail: no tool in reach until a command binds its own."""
    tools = staged_tools()
    folders = {os.path.dirname(os.path.realpath(p)): stage for p, (stage, _) in tools.items()}
    libs = library_binds()
    etc = [p for p in ETC if not any(p.startswith(f"{lib}/") for lib in libs)]
    return Root(
        ro_binds=tuple((path, path) for path in libs),
        ro_binds_try=tuple(p for p in etc if os.path.isdir(p)),
        copies=tuple(p for p in etc if not os.path.isdir(p)),
        stages=tuple((folder, stage) for folder, stage in sorted(folders.items())),
        targets=(*(("f", path) for path in tools), ("d", "/proc"), ("d", "/tmp"), ("d", "/run")),
        hostname="lab",
        tmpfs=("/tmp", "/run", "/dev/shm"),
        caps=CAPS,
        label="labcmd",
        memory_bytes=MEMORY_BYTES,
        pids=PIDS,
    )


def lab_turn(argv: Sequence[str], writes: Sequence[str] = ()) -> Turn:
    """One checked command (`argv[0]` an allowed tool's path) writing `writes`."""
    staged = staged_tools().get(argv[0])
    if staged is None:
        raise EnvironmentFailure(f"{argv[0]} is not a tool the lab jail holds")
    return Turn(
        argv=tuple(argv), binds=(("/".join(staged), argv[0]),), writable_sysctls=tuple(writes)
    )


def jail(tools: Sequence[str], writes: Sequence[str] = ()) -> Jail:
    """The jail for one command using `tools` (absolute paths) and writing `writes`
    (/proc/sys paths already checked)."""
    return Jail(
        ro_binds=[*tools, *library_binds()],
        ro_binds_try=ETC,
        tmpfs=("/tmp", "/run"),
        caps=CAPS,
        writable_sysctls=writes,
        hostname="lab",
    )


@contextmanager
def confined(
    argv: Sequence[str], tools: Sequence[str], writes: Sequence[str] = ()
) -> Iterator[tuple[list[str], list[str]]]:
    """(host prefix, device argv) that run `argv` jailed in a fresh cgroup, for the block's
    duration: the prefix joins the cgroup on the host, before the backend enters the
    device (a Mininet node's mount namespace has no /sys/fs/cgroup); the argv is the jail.
    The cgroup, and anything left in it, is gone after the block."""
    with joined_cgroup("labcmd", MEMORY_BYTES, PIDS) as joined:
        yield joined, jail(tools, writes).argv(argv)
