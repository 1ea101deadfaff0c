"""The MALT sandbox: each way issue 11 bent it, as a test that fails on the code before the
fix, and the seccomp program checked instruction by instruction (a classic-BPF reader of
our own runs it for every system call number)."""

from __future__ import annotations

import struct

import networkx as nx
import pytest

from emulators.pysandbox import GraphSandbox, SandboxLimits, kernel
from pipeline.core import StepStatus
from tests.pysandbox_hostile import OS

LIMITS = SandboxLimits(wall_timeout_s=8, cpu_time_s=4, memory_mb=384)
ALLOW, EPERM, KILL = 0x7FFF0000, 0x00050001, 0x80000000
X86_64 = 0xC000003E

pytestmark = pytest.mark.integration  # every test starts a sandbox


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_edge("a", "b")
    return g


def test_ctypes_is_not_loaded_where_agent_code_runs():
    code = (
        "def process_graph(graph):\n"
        f"    modules = {OS}['sys'].modules\n"
        "    return sorted(m for m in modules if 'ctypes' in m)\n"
    )
    with GraphSandbox(_graph(), LIMITS) as box:
        result = box.run(code)
    assert result.status is StepStatus.OK, result.error
    assert result.value == {"type": "list", "value": []}


def test_latency_is_what_the_sandbox_measured_not_what_the_code_claims():
    """Sleep 3 s, then write a report claiming 0 s before the real one."""
    forged = (
        b'{"status": "ok", "stdout": "", "error": null, "exec_s": 0.0, "blocked": []}'
        b'\\n{"type": "scalar", "value": 1}'
    )
    code = (
        "def process_graph(graph):\n"
        f"    {OS}['sys'].modules['time'].sleep(3)\n"
        f"    {OS}['write'](3, b'{forged.decode()}')\n"
        f"    {OS}['_exit'](0)\n"
    )
    with GraphSandbox(_graph(), LIMITS) as box:
        result = box.run(code)
    assert result.status is StepStatus.OK, result.error
    assert result.exec_s >= 3.0, result


def _run_bpf(program: bytes, nr: int, args: tuple[int, ...] = (), arch: int = X86_64) -> int:
    """Run a classic-BPF seccomp program over struct seccomp_data {nr, arch, ip, args[6]}."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    insns = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # LD W ABS
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code == 0x15:  # JEQ K
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x35:  # JGE K
            pc += 1 + (jt if acc >= k else jf)
        elif code == 0x05:  # JA
            pc += 1 + k
        elif code == 0x06:  # RET K
            return k
        else:
            raise AssertionError(f"unexpected BPF instruction {code:#x}")


@pytest.fixture(scope="module")
def program() -> bytes:
    return kernel.program()


def test_the_filter_is_an_allow_list(program):
    allowed = set(kernel.ALLOWED_SYSCALLS.values())
    for nr in range(512):
        verdict = _run_bpf(program, nr)
        if nr in allowed:
            assert verdict == ALLOW, nr
        elif nr not in (302, 72):
            assert verdict == EPERM, nr


@pytest.mark.parametrize(
    ("name", "nr", "args", "verdict"),
    [
        ("rt_sigqueueinfo to another process", 129, (1, 9), EPERM),
        ("rt_tgsigqueueinfo", 297, (1, 1, 9), EPERM),
        ("kill", 62, (1, 9), EPERM),
        ("tgkill", 234, (1, 1, 9), EPERM),
        ("pidfd_send_signal", 424, (3, 9), EPERM),
        ("setpriority", 141, (0, 1, 19), EPERM),
        ("prlimit64 on another process", 302, (1, 7, 0, 0), EPERM),
        ("prlimit64 on itself", 302, (0, 7, 0, 0), ALLOW),
        ("shmget", 29, (0, 1 << 30, 0o1000), EPERM),
        ("shmat", 30, (1, 0, 0), EPERM),
        ("memfd_create", 319, (0, 0), EPERM),
        ("openat", 257, (0, 0, 0), EPERM),
        ("clone", 56, (0,), EPERM),
        ("socket", 41, (2, 1, 0), EPERM),
        ("fcntl F_SETOWN", 72, (3, 8, 1), EPERM),
        ("fcntl F_GETFL", 72, (3, 3), ALLOW),
        ("io_uring_setup", 425, (8, 0), EPERM),
        ("a call a future kernel adds", 499, (), EPERM),
        ("x32 entry point", 0x40000000 | 1, (), KILL),
    ],
)
def test_the_filter_refuses_what_reaches_other_processes(program, name, nr, args, verdict):
    assert _run_bpf(program, nr, args) == verdict, name


def test_other_architectures_are_killed(program):
    assert _run_bpf(program, 1, arch=0x40000003) == KILL  # i386
