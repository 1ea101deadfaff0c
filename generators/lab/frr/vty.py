"""In-process vty sessions with FRR daemons: one Unix socket per daemon of a router, kept open.

vtysh talks to each daemon over the daemon's vty socket (`<vty dir>/<daemon>.vty`) with a
small protocol: a command line ends with a NUL byte; the daemon answers with the command's
output followed by four bytes, three NULs and the command's return code (0 success, 1
warning, 2 and up errors). A session starts in the view node; `enable` (sent once, on
connecting) makes `show running-config` and `configure terminal` available. Each session
has its own node, so a configuration sent here never mixes with an agent's vtysh.

Reading state this way costs the daemon's rendering only: no vtysh process per router per
poll (a vtysh connects to every daemon of its router before its first command). Requests
to several daemons are sent before any answer is read, so the daemons render in parallel.
Trusted: the environment's own reads and the restore's configuration; an agent's vtysh
runs in its jail (emulators/netcmd/vtysh.py). A session that fails (a daemon restarted,
an answer not complete by the deadline) is closed and the failure raised as an
EnvironmentFailure; the next request opens a new one.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from pipeline.api import EnvironmentFailure

END = b"\0\0\0"  # three NULs, then the return code, end every answer
CMD_SUCCESS, CMD_WARNING = 0, 1
READ_CHUNK = 1 << 16
TIMEOUT_S = 10.0
# Answers decoded with replacement: FRR keeps whatever bytes it was told (a neighbour
# description holding 0xFF), and no such byte may break a later read.
ENCODING = ("utf-8", "replace")


class VtySession:
    """One open vty session with one daemon; see the module docstring."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name  # router/daemon, for messages
        self._sock: socket.socket | None = None

    def _open(self) -> socket.socket:
        if self._sock is not None and select.select([self._sock], [], [], 0)[0]:
            # Readable between requests: the daemon closed the session (a vty idle past
            # its exec-timeout, a daemon restarted). A new one is opened.
            self.close()
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            try:
                sock.connect(str(self.path))
            except OSError as err:
                sock.close()
                raise EnvironmentFailure(f"vty of {self.name}: {err}") from err
            self._sock = sock
            self._send(b"enable")
            self._receive(time.monotonic() + TIMEOUT_S)
        return self._sock

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def _send(self, line: bytes) -> None:
        assert self._sock is not None
        try:
            self._sock.sendall(line + b"\0")
        except OSError as err:
            self.close()
            raise EnvironmentFailure(f"vty of {self.name}: sending failed: {err}") from err

    def send(self, line: str) -> None:
        if "\0" in line or "\n" in line:
            raise ValueError(f"a vty line holds no NUL or newline: {line!r}")
        self._open()
        self._send(line.encode())

    def _receive(self, deadline: float) -> tuple[int, str]:
        assert self._sock is not None
        buf = bytearray()
        while not (len(buf) >= 4 and buf[-4:-1] == END):
            left = deadline - time.monotonic()
            ready = select.select([self._sock], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self.close()
                raise EnvironmentFailure(f"vty of {self.name}: no complete answer in time")
            try:
                chunk = self._sock.recv(READ_CHUNK)
            except OSError as err:
                chunk = b""
                reason = str(err)
            else:
                reason = "the daemon closed the session"
            if not chunk:
                self.close()
                raise EnvironmentFailure(f"vty of {self.name}: {reason}")
            buf += chunk
        return buf[-1], bytes(buf[:-4]).decode(*ENCODING)

    def receive(self, deadline: float) -> tuple[int, str]:
        if self._sock is None:
            raise EnvironmentFailure(f"vty of {self.name}: nothing was sent")
        return self._receive(deadline)

    def command(self, line: str, timeout_s: float = TIMEOUT_S) -> tuple[int, str]:
        """(return code, output) of one line."""
        self.send(line)
        return self.receive(time.monotonic() + timeout_s)


class Vty:
    """The vty sessions of every daemon of a lab's routers, opened when first used."""

    def __init__(self, vty_dirs: Mapping[str, Path], daemons: Sequence[str]) -> None:
        self.daemons = tuple(daemons)
        self._sessions = {
            (router, daemon): VtySession(Path(folder) / f"{daemon}.vty", f"{router}/{daemon}")
            for router, folder in vty_dirs.items()
            for daemon in self.daemons
        }

    def session(self, router: str, daemon: str) -> VtySession:
        try:
            return self._sessions[(router, daemon)]
        except KeyError:
            raise EnvironmentFailure(f"no vty session {router}/{daemon}") from None

    def ask(
        self, requests: Mapping[tuple[str, str], Sequence[str]], timeout_s: float = TIMEOUT_S
    ) -> dict[tuple[str, str], list[tuple[int, str]]]:
        """{(router, daemon): [lines]} -> {(router, daemon): [(code, output) per line]}:
        the n-th line of every session is sent before any n-th answer is read."""
        deadline = time.monotonic() + timeout_s
        answers: dict[tuple[str, str], list[tuple[int, str]]] = {key: [] for key in requests}
        rounds = max((len(lines) for lines in requests.values()), default=0)
        try:
            for n in range(rounds):
                sent = []
                for key, lines in requests.items():
                    if n < len(lines):
                        self.session(*key).send(lines[n])
                        sent.append(key)
                for key in sent:
                    answers[key].append(self.session(*key).receive(deadline))
        except BaseException:
            # A round left half read would answer the next request with this one's reply.
            for key in requests:
                self.session(*key).close()
            raise
        return answers

    def show(
        self, routers: Sequence[str], commands: Mapping[str, Sequence[str]],
        timeout_s: float = TIMEOUT_S,
    ) -> dict[str, str]:  # fmt: skip
        """`show` commands per daemon ({daemon: [lines]}) on every router: {router: the
        outputs one after another, daemons in `commands` order}, as one vtysh with the same
        -c lines prints them."""
        requests = {
            (router, daemon): list(lines)
            for router in routers
            for daemon, lines in commands.items()
            if lines and daemon in self.daemons
        }
        answers = self.ask(requests, timeout_s)
        return {
            router: "".join(
                out for daemon in commands for _, out in answers.get((router, daemon), [])
            )
            for router in routers
        }

    def configure(
        self, router: str, daemon: str, lines: Sequence[str], timeout_s: float = TIMEOUT_S
    ) -> list[tuple[str, int, str]]:
        """Configuration lines on one daemon, from `configure terminal` to `end`:
        [(line, return code, output)]."""
        session = self.session(router, daemon)
        out = []
        deadline = time.monotonic() + timeout_s
        try:
            for line in ["configure terminal", *lines, "end"]:
                session.send(line)
                code, text = session.receive(deadline)
                out.append((line, code, text))
        except BaseException:
            session.close()
            raise
        return out[1:-1]

    def close(self, routers: Collection[str] | None = None) -> None:
        """Close the sessions of `routers` (every router's by default)."""
        for (router, _), session in self._sessions.items():
            if routers is None or router in routers:
                with contextlib.suppress(OSError):
                    session.close()
