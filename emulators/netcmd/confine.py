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
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from emulators.jail import Jail, library_binds
from pipeline import cgroup

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
    group = cgroup.MemoryCgroup.create("labcmd", MEMORY_BYTES, pids=PIDS)
    try:
        joined = group.join_prefix() if group is not None else []
        yield joined, jail(tools, writes).argv(argv)
    finally:
        if group is not None:
            group.remove()
