"""What the zygote tests share: a lab jail with a shell in reach, a throwaway network
namespace, and a look at the processes a zygote is made of.

The hostile payloads need a program that does hostile things, so `hostile_root` is the
lab's own root (confine.lab_root) with a few more host programs a command may bind
(dash, coreutils, util-linux); the jail around them is the same code and the same
namespaces, cgroups and identity as every lab command's.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from emulators.netcmd import confine
from emulators.zygote.spec import Root, Turn

SHELL = "/usr/bin/dash"
PROGRAMS = (SHELL, "/usr/bin/sleep", "/usr/bin/ls", "/usr/bin/id", "/usr/bin/ipcmk",
            "/usr/bin/ipcs", "/usr/bin/env", "/usr/bin/unshare")  # fmt: skip


def _stage_of(root: Root, folder: str) -> str:
    return next(name for src, name in root.stages if os.path.realpath(src) == folder)


def hostile_root(root: Root | None = None) -> Root:
    """`root` (default: the lab's) with PROGRAMS bindable too (their folder staged)."""
    root = root or confine.lab_root()
    stages = root.stages
    if not any(os.path.realpath(src) == "/usr/bin" for src, _ in stages):
        stages = (*stages, ("/usr/bin", "hostile"))
    targets = [t for t in root.targets if t[1] not in PROGRAMS]
    targets += [("f", p) for p in PROGRAMS]
    targets += [("f", "/usr/bin/cat")] if ("f", "/usr/bin/cat") not in targets else []
    return dataclasses.replace(root, stages=stages, targets=tuple(targets))


def sh(root: Root, script: str, writes: tuple[str, ...] = ()) -> Turn:
    """`dash -c script` in `root` (from hostile_root), with PROGRAMS and cat bound."""
    stage = _stage_of(root, "/usr/bin")
    programs = (*PROGRAMS, "/usr/bin/cat")
    return Turn(
        argv=(SHELL, "-c", script),
        binds=tuple((f"{stage}/{Path(p).name}", p) for p in programs),
        writable_sysctls=writes,
    )


@contextmanager
def netns(holder_argv: str = "sleep 600") -> Iterator[int]:
    """A descriptor of a fresh network namespace (held by a sleeping process of ours)."""
    holder = subprocess.Popen(["unshare", "--net", "--", *holder_argv.split()])
    try:
        path = f"/proc/{holder.pid}/ns/net"
        deadline = time.monotonic() + 10
        while os.readlink(path) == os.readlink("/proc/self/ns/net"):
            if time.monotonic() > deadline:
                raise RuntimeError("unshare did not make a network namespace")
            time.sleep(0.005)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)
    finally:
        holder.kill()
        holder.wait()


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def family(pid: int) -> set[int]:
    """`pid` and every process below it."""
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        out.add(p)
        todo += children(p)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def running(marker: str) -> list[int]:
    """Host pids whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def gone_within(pids: set[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def kill(pid: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
