"""Linux process controls for the zygote and its children: prctl flags and a seccomp filter.

The controls come from `_confine`, a tiny C extension of ours (built by
scripts/setup.d/60-pysandbox.sh) that can only take privileges away; ctypes is never
loaded, so agent code cannot reach a foreign-function interface to write memory with.

The seccomp filter is an ALLOW-list (x86-64): a child running agent code may only use
the calls CPython needs to run code that is already loaded, allocate memory, read the
clock, sleep, write to its own descriptors and exit. Everything else, including calls a
future kernel adds, returns EPERM: opening or creating files, executing, processes and
threads, sockets, signals to any process, SysV IPC and memfd, ptrace, io_uring, bpf,
keys, namespaces, mounts, and resource limits or priorities of other processes. i386
and x32 entry points kill the process.
"""

from __future__ import annotations

import os
import struct
from typing import Any

try:
    from emulators.pysandbox import _confine
except ImportError:  # not built (no compiler at setup): the sandbox says so in `isolation`
    _confine = None  # type: ignore[assignment]

CONFINE_MISSING = "the _confine extension is not built (scripts/setup.d/60-pysandbox.sh)"
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_RET_KILL_PROCESS = 0x80000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO_EPERM = 0x00050000 | 1
_LD_ABS_W = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_JA = 0x05  # BPF_JMP | BPF_JA
_ARGS = 16  # offsetof(struct seccomp_data, args)

# x86-64 syscall numbers (asm/unistd_64.h) a child may make, whatever their arguments.
ALLOWED_SYSCALLS = {
    "read": 0, "write": 1, "close": 3, "fstat": 5, "lseek": 8, "mmap": 9, "mprotect": 10,
    "munmap": 11, "brk": 12, "rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15,
    "pread64": 17, "readv": 19, "writev": 20, "sched_yield": 24, "mremap": 25,
    "madvise": 28, "nanosleep": 35, "getpid": 39, "exit": 60, "uname": 63,
    "gettimeofday": 96, "getrusage": 98, "times": 100, "getuid": 102, "getgid": 104,
    "geteuid": 107, "getegid": 108, "getppid": 110, "getpgrp": 111, "sigaltstack": 131,
    "gettid": 186, "time": 201, "futex": 202, "sched_getaffinity": 204,
    "restart_syscall": 219, "clock_gettime": 228, "clock_getres": 229,
    "clock_nanosleep": 230, "exit_group": 231, "getcpu": 309, "getrandom": 318,
    "rseq": 334,
}  # fmt: skip
# Calls allowed only with one argument equal to a value: (name, number, arg index, values).
ALLOWED_IF = (
    ("prlimit64", 302, 0, (0,)),  # its own limits only (pid 0); reading them, in practice
    ("fcntl", 72, 1, (1, 3)),  # F_GETFD, F_GETFL: not F_SETOWN/F_SETSIG (signals elsewhere)
)
NAMES = {**{v: k for k, v in ALLOWED_SYSCALLS.items()}, **{n: s for s, n, _, _ in ALLOWED_IF}}


def available() -> bool:
    return _confine is not None


def no_new_privs() -> None:
    _require().no_new_privs()


def not_dumpable() -> None:
    _require().not_dumpable()


def set_parent_death_signal(sig: int) -> None:
    _require().parent_death_signal(sig)


def _require() -> Any:
    if _confine is None:
        raise OSError(CONFINE_MISSING)
    return _confine


def seccomp_supported() -> bool:
    """Whether this machine can take the filter: an x86-64 kernel built with seccomp, and
    the extension that installs it."""
    if os.uname().machine != "x86_64" or _confine is None:
        return False
    with open("/proc/self/status", encoding="ascii") as status:
        return any(line.startswith("Seccomp:") for line in status)


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program() -> bytes:
    """The allow-list as a classic BPF program (an array of struct sock_filter).

    Layout: check the architecture (else kill); load the call number; kill x32 numbers;
    one JEQ per always-allowed number, each jumping to a shared ALLOW; then, per call
    allowed with a fixed argument, compare that argument's low word (the kernel reads
    these arguments as 32-bit ints); everything that falls through returns EPERM."""
    allowed = sorted(set(ALLOWED_SYSCALLS.values()))
    n = len(allowed)
    insns = [
        (_LD_ABS_W, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),  # i386 entry points have other numbers
        (_LD_ABS_W, 0, 0, 0),  # seccomp_data.nr
        (_JGE_K, 0, 1, _X32_SYSCALL_BIT),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
    ]
    insns += [(_JEQ_K, n - i, 0, nr) for i, nr in enumerate(allowed)]  # to the ALLOW below
    insns += [(_JA, 0, 0, 1), (_RET_K, 0, 0, _RET_ALLOW)]
    for _, nr, index, values in ALLOWED_IF:
        insns += [(_JEQ_K, 0, 2 + 2 * len(values), nr), (_LD_ABS_W, 0, 0, _ARGS + 8 * index)]
        for value in values:
            insns += [(_JEQ_K, 0, 1, value), (_RET_K, 0, 0, _RET_ALLOW)]
        insns += [(_LD_ABS_W, 0, 0, 0)]  # the call number again, for the next block
    insns += [(_RET_K, 0, 0, _RET_ERRNO_EPERM)]
    return b"".join(_insn(*i) for i in insns)


class SeccompFilter:
    """The compiled allow-list; build it in the zygote, `install()` it in the child."""

    def __init__(self) -> None:
        self._program = program()

    def install(self) -> None:
        """Apply to the calling process for good (no_new_privs first, as the kernel asks)."""
        _require().install_filter(self._program)
