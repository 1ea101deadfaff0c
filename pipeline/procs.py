"""Process helpers shared by the daemons NetGauge starts itself (vLLM servers, a local
SLURM cluster): a free loopback port, death with the starting thread, and /proc scans.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the starting thread dies (kill -9 included)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _stat_fields(pid: int | str) -> list[str] | None:
    """/proc/<pid>/stat after the parenthesised command: state, ppid, pgrp, ..."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids in process group `pgid`, read from /proc."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(entry.name)
        if fields is not None and int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def ancestors(pid: int | None = None) -> set[int]:
    """`pid` (default: this process) and every process above it up to init."""
    found: set[int] = set()
    current = os.getpid() if pid is None else pid
    while current > 0 and current not in found:
        found.add(current)
        fields = _stat_fields(current)
        if fields is None:
            break
        current = int(fields[1])
    return found


def environ(pid: int) -> dict[str, str]:
    """The environment `pid` was started with ({} when unreadable, e.g. a kernel thread)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}


def command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
