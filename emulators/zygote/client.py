"""`Zygote`: NetGauge's handle on one running ngzygote (a persistent jail for one root).

Started with a SOCK_SEQPACKET socketpair as its only channel (its end is the only
descriptor it gets besides /dev/null) and our pid, whose exit it watches. Each command
gets a memory and pids cgroup of its own (pipeline/cgroup.py), made one command ahead:
once a command is sent, the next one's cgroup is made and sent ("prepare"), and the
zygote forks the child that will run it into it while this one runs (joining a cgroup
can wait a full RCU grace period, ~10-20 ms here; off the command's path this way).
`run` sends one `Turn` with the descriptors the command needs (the write end of an
output pipe, the device's network namespace, a stdin file), reads the pipe until the
command ends, at its time limit or past its output cap (then asks the zygote to kill
it), and takes the exit status the zygote reports once the command's whole pid
namespace is gone. Used cgroups are removed while the next command runs, and all on
`close`. Nothing waits without a deadline: a zygote that does not answer in time, or
dies, is killed and the call raises EnvironmentFailure; a zygote found dead between
commands is restarted.

A zygote's root holds its host sources (binds, copied files, staged folders) as they
were when it started: a file or folder replaced since (a binary upgraded by rename, a
folder made anew under the same path) is not what a command would get in a fresh jail,
so before each command every source is compared with the one held, and the zygote
restarts when one differs. Each source is held open (O_PATH) from before the zygote
staged it, so its inode cannot be freed and reused by another file: the same (device,
inode) is the same file. What changes inside a bound or staged folder (a file rewritten,
a subfolder made anew) is seen by the next command as it is: that restarts nothing.
"""

from __future__ import annotations

import array
import contextlib
import logging
import os
import selectors
import socket
import subprocess
import threading
import time
import weakref
from pathlib import Path

from emulators.base import CommandResult
from emulators.zygote.spec import Root, Turn
from pipeline import cgroup
from pipeline.cgroup import MemoryCgroup
from pipeline.errors import EnvironmentFailure

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
BINARY = HERE / "ngzygote"
SOURCES = ("ngzygote.h", "ngzygote.c", "root.c", "turn.c", "child.c")
READY_TIMEOUT_S = 30.0  # building the root: a few ms idle; generous for a loaded machine
KILL_GRACE_S = 10.0  # from "kill" to the report that the command's namespace is gone
STOP_TIMEOUT_S = 5.0
REPLY_BYTES = 8192
# `prepared` when a child was prepared but the machine gives no cgroups (not root).
NO_CGROUP = MemoryCgroup("none")


def binary() -> str:
    """The built ngzygote, or EnvironmentFailure saying how to build it."""
    try:
        built = BINARY.stat().st_mtime
    except FileNotFoundError:
        raise EnvironmentFailure(
            f"{BINARY} is not built; run `make setup` (scripts/setup.d/61-zygote.sh)"
        ) from None
    if any((HERE / name).stat().st_mtime > built for name in SOURCES):
        raise EnvironmentFailure(f"{BINARY} is older than its sources; run `make setup`")
    return str(BINARY)


class _Process:
    """The running zygote's waiter and socket, apart from `Zygote` so that a finalizer
    can stop them without keeping the `Zygote` alive."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.prepared: MemoryCgroup | None = None  # the next command's, its child in it
        self.used: list[MemoryCgroup] = []  # commands' that ended, to remove
        self.held: dict[str, tuple[int, tuple[int, int]]] = {}  # source -> (O_PATH fd, id)

    def hold(self, sources: tuple[str, ...]) -> None:
        """Open every source (before the zygote stages it): see the module docstring."""
        self.release()
        for path in sources:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                self.held[path] = (-1, (0, 0))  # absent: a "try" source, or gone
                continue
            st = os.fstat(fd)
            self.held[path] = (fd, (st.st_dev, st.st_ino))

    def replaced(self) -> str | None:
        """The first held source that is no longer at its path, or None."""
        for path, (_, held) in self.held.items():
            if _identity(path) != held:
                return path
        return None

    def release(self) -> None:
        while self.held:
            fd, _ = self.held.popitem()[1]
            if fd >= 0:
                os.close(fd)

    def remove_used(self) -> None:
        while self.used:
            self.used.pop().remove()

    def stop(self, kill: bool = False) -> None:
        self._stop(kill)
        self.release()
        self.remove_used()
        if self.prepared is not None and self.prepared is not NO_CGROUP:
            self.prepared.remove()
        self.prepared = None

    def _stop(self, kill: bool) -> None:
        proc, sock, self.proc, self.sock = self.proc, self.sock, None, None
        if kill and proc is not None and proc.poll() is None:
            proc.kill()  # the zygote's PDEATHSIG takes it, and its commands, along
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.send(b"stop\0")
            sock.close()
        if proc is None:
            return
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Zygote:
    """One persistent jail (see the module docstring); `close` it, or let it be collected."""

    def __init__(self, root: Root, *, name: str = "jail") -> None:
        self.root = root
        self.name = name
        self.starts = 0
        self.cgroup: MemoryCgroup | None = None  # the running command's, else the last one's
        self._sources = host_sources(root)
        self._lock = threading.Lock()
        self._p = _Process()
        self._finalizer = weakref.finalize(self, self._p.stop)
        self._start()

    # -- lifecycle --------------------------------------------------------------------
    def _start(self) -> None:
        if self.starts:
            log.warning("restarting the %s zygote (start %d)", self.name, self.starts + 1)
        self.starts += 1
        self._p.hold(self._sources)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._p.proc = subprocess.Popen(
                [binary(), str(theirs.fileno()), str(os.getpid())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                cwd="/",
                start_new_session=True,
            )
        except (OSError, EnvironmentFailure) as err:
            ours.close()
            raise EnvironmentFailure(f"cannot start the {self.name} zygote: {err}") from err
        finally:
            theirs.close()
        self._p.sock = ours
        try:
            ours.send(self.root.message())
            kind, _, _, text = self._reply(time.monotonic() + READY_TIMEOUT_S)
        except OSError as err:
            self._p.stop(kill=True)
            raise EnvironmentFailure(f"the {self.name} zygote did not start: {err}") from err
        if kind != "ready":
            self._p.stop(kill=True)
            raise EnvironmentFailure(f"the {self.name} zygote could not build its root: {text}")

    @property
    def pid(self) -> int | None:
        """The process NetGauge started (the zygote's waiter), while it runs."""
        proc = self._p.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def alive(self) -> bool:
        return self.pid is not None

    def close(self) -> None:
        """Stop the zygote (and any command it runs); idempotent."""
        with self._lock:
            self._p.stop()

    # -- commands ---------------------------------------------------------------------
    def run(
        self,
        turn: Turn,
        *,
        net_fd: int,
        timeout_s: float,
        output_bytes: int,
        stdin: int | None = None,
    ) -> CommandResult:
        """Run `turn` in the network namespace open as `net_fd`, with `stdin` (a
        descriptor) or /dev/null; stop it at `timeout_s` or past `output_bytes`."""
        with self._lock:
            if self._p.proc is None or self._p.proc.poll() is not None:
                if self._p.proc is not None:
                    log.warning("the %s zygote died between commands", self.name)
                    self._p.stop(kill=True)
                self._start()
            elif (replaced := self._p.replaced()) is not None:
                log.warning(
                    "a source of the %s zygote was replaced (%s); restarting it",
                    self.name,
                    replaced,
                )
                self._p.stop()
                self._start()
            if self._p.sock is not None and self._p.prepared is None:
                self._prepare()  # none made ahead (the first command, or no cgroups)
            read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
            try:
                group, self._p.prepared = self._p.prepared, None
                self.cgroup = group if group is not NO_CGROUP else None
                if self.cgroup is not None:
                    self._p.used.append(self.cgroup)
                fds, roles = [write_fd, net_fd], ["o", "n"]
                if stdin is not None:
                    fds.append(stdin)
                    roles.append("i")
                started = time.perf_counter()
                self._send(turn.message(roles), fds)
                try:
                    self._ahead()
                except EnvironmentFailure as err:  # the next command prepares its own
                    log.warning("preparing the next %s command: %s", self.name, err)
            except BaseException:
                os.close(read_fd)
                raise
            finally:
                os.close(write_fd)
            return self._collect(read_fd, turn, started, timeout_s, output_bytes)

    def _ahead(self) -> None:
        """While the command runs: remove the cgroups of the ones before it, and prepare
        the next one's."""
        used, self._p.used = self._p.used[:-1], self._p.used[-1:]
        for group in used:
            group.remove()
        self._prepare()

    def _prepare(self) -> None:
        """Make the next command's cgroup; the zygote forks its child into it."""
        r = self.root
        group = cgroup.MemoryCgroup.create(r.label, r.memory_bytes, pids=r.pids)
        paths = group.procs_files if group is not None else []
        fds = [os.open(path, os.O_WRONLY | os.O_CLOEXEC) for path in paths]
        try:
            self._send(b"prepare\0", fds)
        finally:
            for fd in fds:
                os.close(fd)
        self._p.prepared = group if group is not None else NO_CGROUP

    def _send(self, message: bytes, fds: list[int]) -> None:
        sock = self._p.sock
        assert sock is not None
        try:
            if fds:
                rights = array.array("i", fds)
                sock.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
            else:
                sock.send(message)
        except OSError as err:
            self._p.stop(kill=True)
            raise EnvironmentFailure(f"the {self.name} zygote is gone ({err})") from err

    def _collect(
        self, read_fd: int, turn: Turn, started: float, timeout_s: float, output_bytes: int
    ) -> CommandResult:
        sock = self._p.sock
        assert sock is not None
        chunks: list[bytes] = []
        size = 0
        timed_out = truncated = False
        report: tuple[str, int, int, str] | None = None
        deadline = time.monotonic() + timeout_s
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(read_fd, selectors.EVENT_READ)
                sel.register(sock, selectors.EVENT_READ)
                while report is None and not truncated:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        timed_out = True
                        break
                    for key, _ in sel.select(left):
                        if key.fileobj == read_fd:
                            data = os.read(read_fd, 65536)
                            if not data:
                                sel.unregister(read_fd)
                            chunks.append(data)
                            size += len(data)
                            truncated = size > output_bytes
                        else:
                            report = self._reply(time.monotonic() + KILL_GRACE_S)
            if report is None:
                self._send(b"kill\0", [])
                report = self._reply(time.monotonic() + KILL_GRACE_S)
            else:  # every writer is gone with the command's namespace: EOF is near
                size += self._drain(read_fd, chunks, output_bytes + 1 - size)
                truncated = size > output_bytes
        finally:
            os.close(read_fd)
        kind, code, _, text = report
        if kind in ("setup", "refused", "busy"):  # nothing ran; the zygote serves on
            raise EnvironmentFailure(f"the {self.name} jail could not run {turn.argv[0]}: {text}")
        if kind not in ("exit", "signal"):
            self._p.stop(kill=True)
            raise EnvironmentFailure(f"the {self.name} zygote answered {kind}: {text}")
        exit_code: int | None = code if kind == "exit" else 128 + code
        if timed_out or truncated:
            exit_code = None
        output = b"".join(chunks)[:output_bytes].decode("utf-8", errors="replace")
        return CommandResult(
            argv=tuple(turn.argv),
            exit_code=exit_code,
            output=output,
            exec_s=time.perf_counter() - started,
            timed_out=timed_out,
            truncated=truncated,
        )

    def _reply(self, deadline: float) -> tuple[str, int, int, str]:
        """The zygote's next message as (kind, a, b, text); a silent or dead zygote is
        killed and raises EnvironmentFailure."""
        sock = self._p.sock
        assert sock is not None
        with selectors.DefaultSelector() as sel:
            sel.register(sock, selectors.EVENT_READ)
            ready = sel.select(max(0.0, deadline - time.monotonic()))
        data = b""
        if ready:
            with contextlib.suppress(OSError):
                data = sock.recv(REPLY_BYTES)
        parts = data.split(b"\0")
        if len(parts) < 4:
            self._p.stop(kill=True)
            what = "did not answer in time" if not ready else f"died (it sent {data[:80]!r})"
            raise EnvironmentFailure(f"the {self.name} zygote {what}")
        kind, a, b, text = (p.decode("utf-8", "replace") for p in parts[:4])
        return kind, int(a), int(b), text

    def _drain(self, fd: int, chunks: list[bytes], room: int) -> int:
        """Read `fd` to its end (or past `room` bytes); the bytes read. Its writers are
        gone, so the end is near: one that is not is a broken jail."""
        got = 0
        deadline = time.monotonic() + KILL_GRACE_S
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while got <= room:
                if not sel.select(max(0.0, deadline - time.monotonic())):
                    self._p.stop(kill=True)
                    raise EnvironmentFailure(f"the {self.name} jail left its output open")
                data = os.read(fd, 65536)
                if not data:
                    break
                chunks.append(data)
                got += len(data)
        return got


def host_sources(root: Root) -> tuple[str, ...]:
    """Every host path `root` takes in when the zygote starts: bound, bound where it
    exists, copied, staged. Kept as named, not resolved: each look follows the symlinks
    on the way as Root.message does, so a symlink pointed elsewhere is a replacement."""
    paths = [
        *(src for src, _ in root.ro_binds),
        *root.ro_binds_try,
        *root.copies,
        *(src for src, _ in root.stages),
    ]
    return tuple(dict.fromkeys(paths))


def _identity(path: str) -> tuple[int, int]:
    """(device, inode) of `path`; (0, 0) when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_dev, st.st_ino)
