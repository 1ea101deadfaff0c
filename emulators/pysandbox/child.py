"""The forked child: confine the process, run the agent's code once, report, `os._exit`.

Report written to the result pipe (fd 3), in this order:
    b"S"                      the child is confined; agent code starts now
    envelope JSON, b"\\n"      {"status", "stdout", "error", "exec_s", "blocked"}
    record JSON               the return-value record (see records.py); empty unless OK.
                              A graph record holds the diff of the graph the code was
                              given (and "copy" when another graph was returned); a value
                              record carries "state", that graph's diff, when the code
                              changed it
or, when confinement itself fails, b"E" + reason. Bytes after the b"S" come from a
process that ran hostile code and are parsed by the parent as untrusted JSON.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import networkx as nx

from emulators.pysandbox import fastdiff, graphdiff, kernel, policy, records
from pipeline.core import StepStatus

RESULT_FD = 3
REPLY_FILENAME = "<reply>"
_OPEN_FILES = 8  # RLIMIT_NOFILE: fds 0-3 plus a little slack, so pipe() cannot hoard fds
_RESERVE_BYTES = 4 << 20  # released on MemoryError so the report itself can be built
_TAIL_FRAMES = 3
_ERROR_CHARS = 2000
_PACKAGE_DIR = str(Path(__file__).resolve().parent)


@dataclass
class ChildContext:
    """Everything a child needs, prepared once in the zygote and inherited by fork."""

    graph: nx.DiGraph
    base: fastdiff.BaseIndex
    entry: str
    audit_hook: bool
    memory_mb: int
    cpu_time_s: int
    output_bytes: int
    result_bytes: int
    devnull_fd: int
    jail: str | None  # chroot target and uid/gid to drop to; None when not root
    uid: int
    gid: int
    seccomp: kernel.SeccompFilter | None
    cgroup: tuple[str, ...] = ()  # cgroup.procs files to join (root only)


def run_child(code: str, ctx: ChildContext, result_fd: int) -> NoReturn:
    """Body of the forked child. Never returns; the caller guards it with os._exit too."""
    try:
        output = _confine(ctx, result_fd)
        blocked = policy.install_audit_hook() if ctx.audit_hook else []
    except (OSError, ValueError) as exc:
        _write_all(RESULT_FD, f"Esandbox setup failed: {exc}".encode())
        os._exit(1)
    _write_all(RESULT_FD, b"S")
    _write_all(RESULT_FD, _execute(code, ctx, output, blocked))
    os._exit(0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _confine(ctx: ChildContext, result_fd: int) -> policy.CappedOutput:
    # Own session and process group, so the zygote can kill anything this child starts.
    os.setsid()
    for fd in (0, 1, 2):
        os.dup2(ctx.devnull_fd, fd)
    if result_fd != RESULT_FD:
        os.dup2(result_fd, RESULT_FD)
    # Drops the zygote's protocol pipes, log and every other inherited descriptor.
    os.closerange(RESULT_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    limits = {
        resource.RLIMIT_AS: ctx.memory_mb << 20,
        resource.RLIMIT_FSIZE: 0,
        resource.RLIMIT_NOFILE: _OPEN_FILES,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_NPROC: 0,  # no fork or thread once we are not root
        resource.RLIMIT_MEMLOCK: 0,
        resource.RLIMIT_MSGQUEUE: 0,
    }
    for which, value in limits.items():
        resource.setrlimit(which, (value, value))
    # One extra second between SIGXCPU and SIGKILL, for code that ignores SIGXCPU.
    resource.setrlimit(resource.RLIMIT_CPU, (ctx.cpu_time_s, ctx.cpu_time_s + 1))
    # The memory and pids cgroup first, while /sys/fs/cgroup is in reach and we are root.
    for procs in ctx.cgroup:
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))
    if ctx.jail is not None:
        os.chroot(ctx.jail)
        os.chdir("/")
        os.setgroups([])
        os.setresgid(ctx.gid, ctx.gid, ctx.gid)
        os.setresuid(ctx.uid, ctx.uid, ctx.uid)
    # After the uid change, which resets both flags.
    if kernel.available():
        kernel.not_dumpable()
        kernel.set_parent_death_signal(signal.SIGKILL)
    if ctx.seccomp is not None:
        ctx.seccomp.install()
    output = policy.CappedOutput(ctx.output_bytes)
    sys.stdout = sys.stderr = output
    sys.stdin = None
    return output


def _envelope(
    status: StepStatus, error: str | None, exec_s: float, stdout: str, blocked: list[str]
) -> bytes:
    envelope = {
        "status": status.value,
        "stdout": stdout,
        "error": error,
        "exec_s": exec_s,
        "blocked": blocked[:20],
    }
    return json.dumps(envelope).encode() + b"\n"


def _execute(
    code: str, ctx: ChildContext, output: policy.CappedOutput, blocked: list[str]
) -> bytes:
    """Run the code and build the report; every failure becomes a status, never an escape."""
    memory_error = f"memory limit of {ctx.memory_mb} MB exceeded (MemoryError)"
    out_of_memory = json.dumps({"status": "resource_limit", "error": memory_error}).encode()
    reserve = [bytearray(_RESERVE_BYTES)]
    clock = [time.perf_counter()]  # _call appends the moment the entry function returned
    status, record, error = _call(code, ctx, memory_error, clock, blocked)
    exec_s = (clock[1] if len(clock) > 1 else time.perf_counter()) - clock[0]
    reserve.clear()
    try:
        body = record if status is StepStatus.OK else b""
        return _envelope(status, error, exec_s, output.text(), list(blocked)) + body
    except MemoryError:
        return out_of_memory + b"\n"


def _call(
    code: str, ctx: ChildContext, memory_error: str, clock: list[float], blocked: list[str]
) -> tuple[StepStatus, bytes, str | None]:
    try:
        compiled = compile(code, REPLY_FILENAME, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return StepStatus.EXEC_ERROR, b"", f"syntax error: {exc.msg} (line {exc.lineno})"
    except (ValueError, MemoryError, RecursionError) as exc:
        return StepStatus.EXEC_ERROR, b"", f"the code could not be compiled: {exc!r:.200}"
    namespace = {"__builtins__": policy.guarded_builtins(blocked), "__name__": "__reply__"}
    try:
        exec(compiled, namespace)
        function = namespace.get(ctx.entry)
        if not callable(function):
            return StepStatus.EXEC_ERROR, b"", f"the reply defines no function {ctx.entry}(graph)"
        value = function(ctx.graph)
        clock.append(time.perf_counter())
        # A graph answer is the graph the code was given, as it left it: a returned copy
        # is not the graph (the caller judges what the code leaves behind).
        record = records.encode_value(value, ctx.base, ctx.result_bytes, given=ctx.graph)
        if record["type"] != "graph" and not fastdiff.is_unchanged(ctx.base, ctx.graph):
            # The graph the code leaves is part of its answer: the caller judges it too.
            state = fastdiff.graph_diff(ctx.base, ctx.graph)
            if not graphdiff.is_empty(state):
                record["state"] = state
        try:
            body = json.dumps(record, allow_nan=False, separators=(",", ":")).encode()
        except ValueError as exc:  # NaN/inf inside a graph's attributes, a too-long int
            raise records.UnsupportedValue(f"the return value is not valid JSON: {exc}") from exc
        if len(body) > ctx.result_bytes:
            raise records.ValueTooLarge(f"the return value is {len(body)} bytes of JSON")
        return StepStatus.OK, body, None
    except MemoryError:
        # Nothing may be allocated while the traceback still holds the user's memory.
        return StepStatus.RESOURCE_LIMIT, b"", memory_error
    except BaseException as exc:  # the sandbox boundary: whatever the code raised is an outcome
        return _classify(exc, code, ctx)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 20:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _classify(exc: BaseException, code: str, ctx: ChildContext) -> tuple[StepStatus, bytes, str]:
    for link in _chain(exc):
        if isinstance(link, policy.SandboxBlocked):
            return StepStatus.BLOCKED, b"", _text(link)[:_ERROR_CHARS]
        if isinstance(link, MemoryError):
            return StepStatus.RESOURCE_LIMIT, b"", f"memory limit of {ctx.memory_mb} MB exceeded"
    if isinstance(exc, records.ValueTooLarge):
        limit = f"{exc} (limit {ctx.result_bytes} bytes)"
        return StepStatus.RESOURCE_LIMIT, b"", limit
    if isinstance(exc, records.UnsupportedValue):
        return StepStatus.EXEC_ERROR, b"", _text(exc)
    if isinstance(exc, SystemExit):
        reason = f"the code raised SystemExit({_text(exc)}); process_graph must return a value"
        return StepStatus.EXEC_ERROR, b"", reason
    if isinstance(exc, KeyboardInterrupt):
        return StepStatus.EXEC_ERROR, b"", "the code raised KeyboardInterrupt"
    message = f"{type(exc).__name__}: {_text(exc)}"[:_ERROR_CHARS]
    return StepStatus.EXEC_ERROR, b"", message + _traceback_tail(exc, code)


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:  # a hostile __str__; the type name still says what happened
        return f"<unprintable {type(exc).__name__}>"


def _traceback_tail(exc: BaseException, code: str) -> str:
    """The last few frames outside this package, with source lines for the reply's own."""
    lines = code.splitlines()
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frame_code = tb.tb_frame.f_code
        if not frame_code.co_filename.startswith(_PACKAGE_DIR):
            frames.append((frame_code.co_filename, tb.tb_lineno, frame_code.co_name))
        tb = tb.tb_next
    out = []
    for filename, lineno, name in frames[-_TAIL_FRAMES:]:
        where = f'\n  File "{Path(filename).name if filename != REPLY_FILENAME else filename}"'
        source = ""
        if filename == REPLY_FILENAME and 0 < lineno <= len(lines):
            source = f": {lines[lineno - 1].strip()[:120]}"
        out.append(f"{where}, line {lineno}, in {name}{source}")
    return "".join(out)
