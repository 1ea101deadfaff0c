"""Entering a network namespace on the calling thread only, with setns(2).

A socket belongs to the namespace it was created in, whatever thread uses it later: so a
process can hold sockets in many namespaces at once (the k8s data plane's listeners, the lab
probes of emulators/probe.py) by creating each inside `entered(fd)`. Other threads of the
process stay where they are.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.errors import EnvironmentFailure

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def open_netns(pid: int) -> int:
    """A descriptor of the network namespace of process `pid` (close it when done)."""
    try:
        return os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as err:
        raise EnvironmentFailure(f"the namespace of process {pid} is gone: {err}") from err


@contextmanager
def entered(fd: int, name: str) -> Iterator[None]:
    """Run the block on this thread in the network namespace open as `fd`."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise EnvironmentFailure(f"setns into {name} failed: {os.strerror(ctypes.get_errno())}")
        try:
            yield
        finally:
            if _libc.setns(own, CLONE_NEWNET) != 0:
                raise EnvironmentFailure("could not return to the original network namespace")
    finally:
        os.close(own)
