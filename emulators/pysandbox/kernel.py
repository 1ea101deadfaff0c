"""Linux process controls for the zygote and its children: prctl flags and a seccomp filter.

Python 3.11 has no binding for prctl(2), so it is called through ctypes. All ctypes
objects are built in the zygote, before any untrusted code exists; the child only calls
`install()`. The seccomp filter is a denylist (x86-64 only): it makes the kernel refuse
opening files, executing programs, creating processes or threads, sockets, signals to
other processes, tracing and filesystem changes, so these stay impossible even if
hostile code gets past the audit hook (e.g. through an interpreter memory-safety bug).
"""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_RET_KILL_PROCESS = 0x80000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO_EPERM = 0x00050000 | 1
_LD_ABS_W = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

# x86-64 syscall numbers (asm/unistd_64.h) refused with EPERM.
DENIED_SYSCALLS = {
    "open": 2, "openat": 257, "openat2": 437, "creat": 85, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "execve": 59, "execveat": 322, "fork": 57, "vfork": 58,
    "clone": 56, "clone3": 435, "socket": 41, "socketpair": 53, "connect": 42, "bind": 49,
    "listen": 50, "accept": 43, "accept4": 288, "ptrace": 101, "process_vm_readv": 310,
    "process_vm_writev": 311, "kill": 62, "tkill": 200, "tgkill": 234, "pidfd_open": 434,
    "pidfd_send_signal": 424, "pidfd_getfd": 438, "mount": 165, "umount2": 166,
    "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308, "mkdir": 83,
    "mkdirat": 258, "rmdir": 84, "unlink": 87, "unlinkat": 263, "rename": 82,
    "renameat": 264, "renameat2": 316, "link": 86, "linkat": 265, "symlink": 88,
    "symlinkat": 266, "chmod": 90, "fchmod": 91, "fchmodat": 268, "chown": 92, "fchown": 93,
    "lchown": 94, "fchownat": 260, "truncate": 76, "mknod": 133, "mknodat": 259, "bpf": 321,
    "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "keyctl": 250, "add_key": 248, "request_key": 249,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246,
    "kexec_file_load": 320, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
    "personality": 135, "modify_ldt": 154, "iopl": 172, "ioperm": 173, "quotactl": 179,
    "fanotify_init": 300, "inotify_init": 253, "inotify_init1": 294, "move_mount": 429,
    "fsopen": 430, "fsmount": 432, "fspick": 433, "open_tree": 428, "mount_setattr": 442,
    "memfd_secret": 447, "process_madvise": 440, "memfd_create": 319,
    # Path lookups that the audit hook does not see: they would leak which files exist.
    "stat": 4, "lstat": 6, "newfstatat": 262, "statx": 332, "access": 21, "faccessat": 269,
    "faccessat2": 439, "readlink": 89, "readlinkat": 267, "chdir": 80, "getdents": 78,
    "getdents64": 217, "statfs": 137,
}  # fmt: skip


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint32),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter)))


_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl
_prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
_prctl.restype = ctypes.c_int


def prctl(option: int, arg: int = 0) -> None:
    """prctl(2) with one argument; raises OSError on failure."""
    if _prctl(option, arg, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl({option}) failed")


def set_parent_death_signal(sig: int = signal.SIGKILL) -> None:
    prctl(PR_SET_PDEATHSIG, sig)


def seccomp_supported() -> bool:
    """Whether this machine can take the filter: an x86-64 kernel built with seccomp."""
    if os.uname().machine != "x86_64":
        return False
    with open("/proc/self/status", encoding="ascii") as status:
        return any(line.startswith("Seccomp:") for line in status)


class SeccompFilter:
    """The compiled denylist; build it in the zygote, `install()` it in the child."""

    def __init__(self) -> None:
        denied = sorted(set(DENIED_SYSCALLS.values()))
        count = len(denied)
        rules = [
            (_LD_ABS_W, 0, 0, 4),  # seccomp_data.arch
            (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
            (_RET_K, 0, 0, _RET_KILL_PROCESS),  # i386/x32 entry points have other numbers
            (_LD_ABS_W, 0, 0, 0),  # seccomp_data.nr
            (_JGE_K, count + 1, 0, _X32_SYSCALL_BIT),
        ]
        # Each jump lands on the final EPERM return: skip the rest of the list and ALLOW.
        rules += [(_JEQ_K, count - i, 0, nr) for i, nr in enumerate(denied)]
        rules += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_ERRNO_EPERM)]
        self._filters = (_SockFilter * len(rules))(*[_SockFilter(*rule) for rule in rules])
        self._prog = _SockFprog(len(rules), self._filters)

    def install(self) -> None:
        """Apply to the calling process for good (no_new_privs first, as the kernel asks)."""
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(self._prog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "installing the seccomp filter failed")
