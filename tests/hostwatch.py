"""Who changed the host: the test run's own process tree, told apart from everyone else's.

A host-state comparison (tests/hoststate.py) sees every process and file of the machine;
on a shared machine most changes are other users'. `Tracker` follows, from the kernel,
which processes descend from this test process and which files they touched, so a
comparison can keep exactly what the project could have done:

  - processes: the proc connector (netlink, CONFIG_PROC_EVENTS) reports every fork as
    (parent, child): a child of a process of ours is ours, whatever it does next (setsid,
    double fork, new namespaces, another uid), and a pid handed to a child of someone
    else's is not ours any more;
  - files: fanotify (CONFIG_FANOTIFY, a mark on the whole filesystem of each watched
    folder) reports each create, delete, move, write and attribute change with the pid
    that made it and the directory and name it touched.

Each round reads the file events first, then drains the fork events, then attributes: a
fork happens before its child can touch a file, so its event is always drained in time.
Both need root (CAP_NET_ADMIN, CAP_SYS_ADMIN); `Tracker.start()` returns None where they
are missing, and the comparison then stays as strict as before, about everything.
"""

from __future__ import annotations

import ctypes
import os
import select
import socket
import struct
import threading
from pathlib import Path

NETLINK_CONNECTOR = 11
CN_IDX_PROC = CN_VAL_PROC = 1
PROC_CN_MCAST_LISTEN = 1
PROC_EVENT_FORK = 0x1
NLMSG_DONE = 3
FAN_CLOEXEC, FAN_NONBLOCK, FAN_UNLIMITED_QUEUE = 0x1, 0x2, 0x10
FAN_REPORT_DFID_NAME = 0x400 | 0x800
FAN_MARK_ADD, FAN_MARK_FILESYSTEM = 0x1, 0x100
# attrib, close_write, moved from/to, create, delete, on directories too; not FAN_MODIFY,
# which every write() call raises (a file written is seen when it is closed).
FAN_EVENTS = 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x40000000
FAN_EVENT_INFO_TYPE_DFID_NAME = 2
FAN_Q_OVERFLOW = 0x4000
AT_FDCWD = -100
O_PATH = 0o10000000
_META = struct.Struct("=IBBHQii")  # fanotify_event_metadata


class Tracker:
    """See the module docstring; `start(folders)` or None."""

    def __init__(self, folders: tuple[str, ...]) -> None:
        self.root_pid = os.getpid()
        self.ours: set[int] = _descendants(self.root_pid)
        self.touched: set[tuple[bytes, bytes]] = set()  # (directory handle, entry name)
        self.lost = ""  # why attribution may have missed something ("": it did not)
        self._lock = threading.Lock()
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._mounts: list[int] = []  # a folder of each watched filesystem (for handles)
        self._procs = _connector()
        self._fan = self._fanotify(folders)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="hostwatch", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, folders: tuple[str, ...]) -> Tracker | None:
        if os.geteuid() != 0:
            return None
        try:
            return cls(folders)
        except OSError:
            return None

    def _fanotify(self, folders: tuple[str, ...]) -> int:
        libc = self._libc
        libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64,
                                       ctypes.c_int, ctypes.c_char_p]  # fmt: skip
        flags = FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE | FAN_REPORT_DFID_NAME
        fd = libc.fanotify_init(flags, os.O_RDONLY)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "fanotify_init")
        for folder in folders:
            done = libc.fanotify_mark(
                fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_EVENTS, AT_FDCWD, folder.encode()
            )
            if done < 0:
                os.close(fd)
                raise OSError(ctypes.get_errno(), f"fanotify_mark {folder}")
            self._mounts.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY))
        return fd

    def _loop(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fan, self._procs], [], [], 0.2)
            if ready:
                self.sync()

    def sync(self) -> None:
        """Take every event queued so far (file events first, then forks; see above)."""
        with self._lock:
            files = self._read_files()
            self._read_forks()
            for pid, handle, name in files:
                if pid in self.ours:
                    self.touched.add((handle, name))

    def _read_files(self) -> list[tuple[int, bytes, bytes]]:
        out = []
        while True:
            try:
                data = os.read(self._fan, 1 << 16)
            except BlockingIOError:
                return out
            pos = 0
            while pos + _META.size <= len(data):
                length, _, _, meta_len, mask, fd, pid = _META.unpack_from(data, pos)
                if mask & FAN_Q_OVERFLOW:
                    self.lost = "the kernel's file event queue overflowed"
                if fd >= 0:
                    os.close(fd)
                info = pos + meta_len
                while info + 4 <= pos + length:
                    kind, _, size = struct.unpack_from("=BBH", data, info)
                    if kind == FAN_EVENT_INFO_TYPE_DFID_NAME and size > 20:
                        fsid = data[info + 4 : info + 12]
                        nbytes = struct.unpack_from("=I", data, info + 12)[0]
                        handle = data[info + 12 : info + 20 + nbytes]
                        name = data[info + 20 + nbytes : info + size].split(b"\0", 1)[0]
                        out.append((pid, fsid + handle, name))
                    info += max(size, 4)
                pos += max(length, _META.size)

    def _read_forks(self) -> None:
        while True:
            try:
                data = self._procs.recv(1 << 16, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError as err:  # ENOBUFS: fork events were dropped
                self.lost = f"fork events were lost ({err.strerror})"
                continue
            pos = 0
            while pos + 16 <= len(data):
                length = struct.unpack_from("=I", data, pos)[0]
                what = struct.unpack_from("=I", data, pos + 36)[0]
                if what == PROC_EVENT_FORK:
                    _, ptgid, cpid, ctgid = struct.unpack_from("=IIII", data, pos + 52)
                    if cpid == ctgid:  # a process, not a thread
                        if ptgid in self.ours:
                            self.ours.add(ctgid)
                        else:
                            self.ours.discard(ctgid)  # a pid of ours reused by someone else
                pos += max((length + 3) & ~3, 16)

    def is_ours(self, pid: int) -> bool:
        self.sync()
        return pid in self.ours

    def pid_of_ours(self, key: tuple[int, int]) -> bool:
        """Whether a snapshot's process key (pid, start time) is one of ours."""
        return self.is_ours(key[0])

    def paths(self) -> set[str]:
        """The paths our processes touched (directories still there to be resolved)."""
        self.sync()
        with self._lock:
            touched = set(self.touched)
        folders: dict[bytes, str | None] = {}
        out = set()
        for handle, name in touched:
            if handle not in folders:
                folders[handle] = self._resolve(handle)
            folder = folders[handle]
            if folder is not None:
                out.add(folder if name in (b"", b".") else os.path.join(folder, os.fsdecode(name)))
        return out

    def _resolve(self, handle: bytes) -> str | None:
        fh = ctypes.create_string_buffer(handle[8:], len(handle) - 8)
        for mount in self._mounts:
            fd = self._libc.open_by_handle_at(mount, fh, O_PATH)
            if fd >= 0:
                try:
                    return os.readlink(f"/proc/self/fd/{fd}")
                finally:
                    os.close(fd)
        return None  # the folder is gone

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        os.close(self._fan)
        self._procs.close()
        for fd in self._mounts:
            os.close(fd)


def _connector() -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
    try:
        sock.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE: no drops
        sock.bind((0, CN_IDX_PROC))
        op = struct.pack("=I", PROC_CN_MCAST_LISTEN)
        cn = struct.pack("=IIIIHH", CN_IDX_PROC, CN_VAL_PROC, 0, 0, len(op), 0) + op
        sock.send(struct.pack("=IHHII", 16 + len(cn), NLMSG_DONE, 0, 0, 0) + cn)
    except OSError:
        sock.close()
        raise
    return sock


def _descendants(root: int) -> set[int]:
    """`root` and every process descending from it now (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo += children.get(pid, [])
    return out
