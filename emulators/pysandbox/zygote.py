"""The zygote process: holds the base graph, forks one confined child per request.

Started by `GraphSandbox` as `python -I -c <boot> <config.pickle>` (under `unshare` when
root). It reads its trusted config (graph, limits, isolation choices), preloads the
allowed modules, then serves frames on stdin/stdout (see protocol.py) until stdin
closes. It never runs agent code itself: each request is run by a forked child
(copy-on-write, so the child gets its own copy of the graph for free), and the zygote
only measures, bounds and kills it.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import math
import os
import pickle
import select
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from emulators.pysandbox import child, fastdiff, kernel, policy, protocol
from pipeline.core import StepStatus

_PIPE_BYTES = 1 << 20
_ENVELOPE_SLACK = 1 << 16


@dataclass
class _Collected:
    data: bytearray = field(default_factory=bytearray)
    started: float | None = None  # when the b"S" marker arrived
    ended: float | None = None
    timed_out: bool = False
    too_large: bool = False


def _host_pid() -> int:
    # In a new pid namespace getpid() is 1; /proc still belongs to the host's namespace.
    return int(os.readlink("/proc/self"))


def _collect(read_fd: int, pidfd: int, wall_s: float, cap: int) -> _Collected:
    """Read the child's report until it exits, the wall clock runs out or the cap is hit."""
    got = _Collected()
    deadline = time.monotonic() + wall_s
    eof = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            got.timed_out = True
            return got
        ready, _, _ = select.select([pidfd] if eof else [read_fd, pidfd], [], [], left)
        if read_fd in ready:
            chunk = os.read(read_fd, _PIPE_BYTES)
            eof = not chunk
            if not got.data and chunk[:1] == b"S":
                got.started = time.monotonic()
            if len(got.data) + len(chunk) > cap:
                got.too_large = True
                return got
            got.data += chunk
        if pidfd in ready:
            got.ended = time.monotonic()
            # The child is gone; take what is still buffered without waiting for EOF.
            while not eof and select.select([read_fd], [], [], 0)[0]:
                chunk = os.read(read_fd, _PIPE_BYTES)
                eof = not chunk
                if len(got.data) + len(chunk) > cap:
                    got.too_large = True
                    return got
                got.data += chunk
            return got


def _verdict(
    got: _Collected, status: int, cpu_s: float, config: dict[str, Any]
) -> tuple[StepStatus | None, str | None]:
    """The zygote's own ruling; (None, None) means 'parse the child's report'."""
    marker = bytes(got.data[:1])
    if marker == b"E":
        return StepStatus.ENV_ERROR, got.data[1:500].decode("utf-8", "replace")
    if marker != b"S":
        return StepStatus.ENV_ERROR, (
            f"the sandbox child died before running the code ({_exit_text(status)})"
        )
    if got.timed_out:
        return StepStatus.TIMEOUT, f"wall-clock limit of {config['wall_timeout_s']:g} s exceeded"
    if got.too_large:
        return StepStatus.RESOURCE_LIMIT, f"the result exceeded {config['result_bytes']} bytes"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        cpu_limit = config["cpu_time_s"]
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s >= cpu_limit - 0.05):
            return StepStatus.TIMEOUT, f"CPU-time limit of {cpu_limit} s exceeded"
        if sig == signal.SIGKILL:
            return StepStatus.RESOURCE_LIMIT, (
                f"memory limit of {config['memory_mb']} MB exceeded (killed by the kernel)"
            )
        if sig == signal.SIGXFSZ:
            return StepStatus.RESOURCE_LIMIT, "the file-size limit was exceeded (SIGXFSZ)"
        return StepStatus.EXEC_ERROR, f"the code crashed the interpreter ({_exit_text(status)})"
    if os.WEXITSTATUS(status) != 0 or len(got.data) <= 1:
        return StepStatus.EXEC_ERROR, (
            f"the code ended the process without a result ({_exit_text(status)})"
        )
    return None, None


def _exit_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        return f"killed by {name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def serve(code: str, ctx: child.ChildContext, config: dict[str, Any]) -> tuple[dict, bytes]:
    """Run `code` in a fresh child; return the header and the child's raw report."""
    read_fd, write_fd = os.pipe()
    # A lower pipe-max-size on this machine only costs speed, so a refusal is fine.
    with contextlib.suppress(OSError):
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            child.run_child(code, ctx, write_fd)
        finally:
            os._exit(70)
    os.close(write_fd)
    pidfd = os.pidfd_open(pid)
    cap = 1 + config["result_bytes"] + 6 * config["output_bytes"] + _ENVELOPE_SLACK
    try:
        got = _collect(read_fd, pidfd, config["wall_timeout_s"], cap)
    finally:
        # The group id is the child's pid (setsid); it stays reserved until we reap it.
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
        os.close(pidfd)
        os.close(read_fd)
        _reap_strays()
    verdict, error = _verdict(got, status, usage.ru_utime + usage.ru_stime, config)
    end = got.ended or time.monotonic()
    header = {
        "status": verdict.value if verdict else None,
        "error": error,
        "exec_s": end - got.started if got.started else 0.0,
    }
    return header, bytes(got.data[1:]) if verdict is None else b""


def _reap_strays() -> None:
    # As a pid-namespace init we inherit orphans; none should exist, but never keep zombies.
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str]) -> int:
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # a stray print goes to the log, never into the protocol
    with open(argv[0], "rb") as handle:
        config = pickle.load(handle)  # written by our own parent: trusted
    os.unlink(argv[0])
    if kernel.available():
        kernel.set_parent_death_signal(signal.SIGKILL)
        # Unprivileged children share our uid: keep them out of /proc/<zygote>/mem, ptrace.
        kernel.not_dumpable()
    for failure in policy.preload_allowed_modules():
        print(f"zygote: allowed module not available: {failure}", file=sys.stderr)
    policy.compile_networkx_wrappers()
    graph = config.pop("graph")
    ctx = child.ChildContext(
        graph=graph,
        base=fastdiff.BaseIndex(graph),
        entry=config["entry"],
        audit_hook=bool(config.get("audit_hook", True)),
        memory_mb=int(config["memory_mb"]),
        cpu_time_s=math.ceil(config["cpu_time_s"]),
        output_bytes=config["output_bytes"],
        result_bytes=config["result_bytes"],
        devnull_fd=devnull,
        jail=config["jail"],
        uid=config["uid"],
        gid=config["gid"],
        seccomp=kernel.SeccompFilter() if config["seccomp"] else None,
        cgroup=tuple(config["cgroup"]),
    )
    # Children must not touch (and so copy) every page of the base graph's objects.
    gc.collect()
    gc.freeze()
    ready = {"pid": _host_pid(), "vm_kb": _vm_kb()}
    protocol.write_frame(proto_out, json.dumps(ready).encode())
    request_limit = 8 * config["code_bytes"] + 1024
    while True:
        frame = protocol.read_frame(proto_in, request_limit)
        request = json.loads(frame) if frame is not None else {}
        if request.get("stop"):
            return 0
        if "code" not in request:
            break  # our parent died without saying goodbye
        header, report = serve(request["code"], ctx, config)
        try:
            protocol.write_frame(proto_out, json.dumps(header).encode())
            protocol.write_frame(proto_out, report)
        except BrokenPipeError:
            break
    # Nobody else will remove the sandbox's temp dir (jail and log) now.
    shutil.rmtree(os.path.dirname(argv[0]), ignore_errors=True)
    return 0


def _vm_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0
