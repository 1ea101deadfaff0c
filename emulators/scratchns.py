"""A throwaway network namespace, held by one sleeping process of ours.

`Popen(["unshare", "--net", "sleep", ...])` returns before `unshare` has called unshare(2):
for a moment `/proc/<pid>/ns/net` is still the caller's namespace, and a command entered
there with nsenter changes the host (a CI run added addresses to the host's loopback that
way, and the test failed only later, in the new namespace). The holder here prints a line
after unshare(2), and the namespace is used only after that line arrived and its inode
differs from ours.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.errors import EnvironmentFailure


@contextmanager
def scratch_netns(seconds: int = 3600) -> Iterator[str]:
    """The `/proc/<pid>/ns/net` path of a new network namespace, gone when the block ends."""
    holder = subprocess.Popen(
        ["unshare", "--net", "sh", "-c", f"echo ready; exec sleep {int(seconds)}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        if holder.stdout.readline().strip() != "ready":
            raise EnvironmentFailure(f"unshare --net did not start (exit {holder.wait()})")
        path = f"/proc/{holder.pid}/ns/net"
        if os.stat(path).st_ino == os.stat("/proc/self/ns/net").st_ino:
            raise EnvironmentFailure("unshare --net left its holder in our own namespace")
        yield path
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
