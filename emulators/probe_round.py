"""One round of emulators/probe.py: the sockets it opens in the namespaces, the poll loop that
serves them, and what each answer means for its flow.

Every socket is created inside its device's namespace (emulators/setns.py) and served by
one poll loop. A round sends every flow at once, waits until each is decided or its time is
over, then reads whatever arrived meanwhile (the process may not have been scheduled)
before anything is judged silent. A flow is decided when it was refused (an ICMP error, a
reset, EPERM at the source, the wrong device receiving it; not a send that failed for
want of kernel memory, TRANSIENT) or when its payload came back
from the probed address and the target's namespace received the request; a reply whose
request the target never saw is judged after the wait (the two may be read in either
order).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import select
import socket
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from emulators.flow import ECHO_PORT, PAYLOAD_BYTES, Flow
from emulators.setns import entered

DRAIN_S = 1.0  # the longest a round reads what arrived after its wait
# A send that fails for want of kernel memory was never sent: the flow stays silent (asked
# again), not refused. ENOBUFS is what a send gets when the neighbour table, which every
# namespace on the machine shares, is full (ip_finish_output2 cannot create the entry).
TRANSIENT = {errno.ENOBUFS, errno.ENOMEM, errno.EAGAIN}
MAGIC = b"NGprobe!"
_ECHO_REPLY, _UNREACHABLE, _ECHO_REQUEST, _TIME_EXCEEDED = 0, 3, 8, 11
_SOL_RAW, _ICMP_FILTER = 255, 1
_IP_PKTINFO = 8  # Linux's IP_PKTINFO (Python 3.11's socket module does not name it)
_PKTINFO = struct.Struct("=I4s4s")  # struct in_pktinfo: ifindex, spec_dst, addr
_LINGER_RESET = struct.pack("ii", 1, 0)
_round_ids = itertools.count(int.from_bytes(os.urandom(2), "big"))


@dataclass
class _Result:
    seen: bool = False  # the target's namespace received the request
    replied: float | None = None  # seconds from sending to the echo from the probed address
    refused: str = ""  # why the flow was answered negatively (final)
    # The refusal was "host unreachable" (ICMP 3/1, EHOSTUNREACH): what a router or the
    # source says when a neighbour (ARP) entry could not be resolved. Real when a fault
    # cut the neighbour off; also what the machine-wide neighbour table's overflow and
    # forced garbage collection produce, so probe.py does not trust it from such a round.
    unresolved: bool = False

    @property
    def ok(self) -> bool:
        return not self.refused and self.seen and self.replied is not None

    @property
    def decided(self) -> bool:
        return bool(self.refused) or self.ok


Handler = Callable[[socket.socket, object], None]


class Round:
    """One round: its sockets, their handlers and the flows' results."""

    def __init__(self, netns: Mapping[str, int], flows: list[Flow]) -> None:
        self.netns = netns
        self.flows = flows
        self.round_id = next(_round_ids) & 0xFFFF
        self.results = [_Result() for _ in flows]
        self.sent = [0.0] * len(flows)
        self.watched: dict[int, tuple[socket.socket, Handler, object]] = {}
        self.new: list[int] = []  # watched fds not yet registered with the poller
        self.raw: dict[str, socket.socket] = {}  # device -> its raw ICMP socket
        self.connecting: set[int] = set()  # TCP flows whose connect is pending
        self.received: dict[int, bytes] = {}  # fd or flow index -> TCP bytes so far
        self.kept: list[socket.socket] = []  # served connections, closed when the round ends

    def run(self, timeout: float) -> dict[Flow, _Result]:
        try:
            self._open()
            self._send()
            self._wait(timeout)
        finally:
            for sock in [*(s for s, _, _ in self.watched.values()), *self.kept]:
                sock.close()
        for index, result in enumerate(self.results):
            if result.replied is not None and not result.refused and not result.seen:
                flow = self.flows[index]
                result.refused = f"{flow.address} answered, but {flow.target} never saw it"
        return dict(zip(self.flows, self.results, strict=True))

    def payload(self, index: int) -> bytes:
        head = MAGIC + struct.pack("!II", self.round_id, index)
        return head + b"\0" * (PAYLOAD_BYTES - len(head))

    def index_of(self, data: bytes) -> int | None:
        if len(data) < len(MAGIC) + 8 or not data.startswith(MAGIC):
            return None
        round_id, index = struct.unpack("!II", data[len(MAGIC) : len(MAGIC) + 8])
        return index if round_id == self.round_id and index < len(self.flows) else None

    def _watch(self, sock: socket.socket, handler: Handler, tag: object) -> None:
        sock.setblocking(False)
        self.watched[sock.fileno()] = (sock, handler, tag)
        self.new.append(sock.fileno())

    def _close(self, sock: socket.socket) -> None:
        self.watched.pop(sock.fileno(), None)
        sock.close()

    # -- sockets ---------------------------------------------------------------------------
    def _open(self) -> None:
        """Raw ICMP sockets, listeners and echo sockets in the namespaces that need them."""
        wanted: dict[str, set[str]] = {}
        for flow in self.flows:
            if flow.protocol == "icmp":
                wanted.setdefault(flow.source, set()).add("raw")
                wanted.setdefault(flow.target, set()).add("raw")
            else:
                wanted.setdefault(flow.target, set()).add(flow.protocol)
        for device, kinds in sorted(wanted.items()):
            with entered(self.netns[device], device):
                socks = {kind: _socket(kind) for kind in sorted(kinds)}
            for kind, sock in socks.items():
                if kind == "raw":
                    sock.setsockopt(_SOL_RAW, _ICMP_FILTER, _ICMP_BLOCKED)
                    self.raw[device] = sock
                    self._watch(sock, self._on_icmp, device)
                    continue
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("0.0.0.0", ECHO_PORT))
                if kind == "udp":  # to answer from the address probed (see _on_udp_server)
                    sock.setsockopt(socket.IPPROTO_IP, _IP_PKTINFO, 1)
                if kind == "tcp":
                    sock.listen(1024)
                    self._watch(sock, self._on_accept, device)
                else:
                    self._watch(sock, self._on_udp_server, device)

    def _send(self) -> None:
        by_source: dict[str, list[int]] = {}
        for index, flow in enumerate(self.flows):
            if flow.protocol != "icmp":
                by_source.setdefault(flow.source, []).append(index)
        clients: dict[int, socket.socket] = {}
        for source, indexes in sorted(by_source.items()):
            with entered(self.netns[source], source):
                clients.update({i: _socket(self.flows[i].protocol) for i in indexes})
        for index, flow in enumerate(self.flows):
            self.sent[index] = time.monotonic()
            try:
                if flow.protocol == "icmp":
                    self.raw[flow.source].sendto(self._echo(index), (flow.address, 0))
                    continue
                sock = clients.pop(index)
                self._watch(sock, self._on_client, index)
                if flow.protocol == "udp":
                    sock.connect((flow.address, ECHO_PORT))
                    sock.send(self.payload(index))
                    continue
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
                code = sock.connect_ex((flow.address, ECHO_PORT))
                if code not in (0, errno.EINPROGRESS):
                    raise OSError(code, os.strerror(code))
                self.connecting.add(index)
            except OSError as err:  # refused at the source: EPERM, unreachable, ...
                if err.errno not in TRANSIENT:  # else: nothing was sent; silent, asked again
                    self.results[index].refused = f"refused at the source: {err.strerror or err}"
                    self.results[index].unresolved = err.errno == errno.EHOSTUNREACH
        for sock in clients.values():
            sock.close()

    def _echo(self, index: int) -> bytes:
        packet = struct.pack("!BBHHH", _ECHO_REQUEST, 0, 0, self.round_id, index & 0xFFFF)
        packet += self.payload(index)
        return packet[:2] + struct.pack("!H", _checksum(packet)) + packet[4:]

    def _wait(self, timeout: float) -> None:
        """Serve every socket until each flow is decided or the wait is over; then read
        whatever is ready, without waiting, until two passes in a row find nothing (or, at
        most, DRAIN_S more)."""
        deadline = time.monotonic() + timeout
        poller = select.poll()
        quiet = 0
        while time.monotonic() < deadline + DRAIN_S:
            for fd in self.new:
                if fd in self.watched:
                    tag = self.watched[fd][2]
                    connecting = self.watched[fd][1] == self._on_client and tag in self.connecting
                    poller.register(fd, select.POLLOUT if connecting else select.POLLIN)
            self.new.clear()
            if all(r.decided for r in self.results):
                return
            left = deadline - time.monotonic()
            if left <= 0 and quiet >= 2:
                return
            ready = poller.poll(left * 1000 if left > 0 else 5)
            quiet = 0 if ready else quiet + 1
            for fd, _ in ready:
                if fd not in self.watched:
                    continue
                sock, handler, tag = self.watched[fd]
                handler(sock, tag)
                if fd not in self.watched:  # closed by its handler
                    poller.unregister(fd)
                elif handler == self._on_client and tag not in self.connecting:
                    poller.modify(fd, select.POLLIN)

    # -- what arrives ------------------------------------------------------------------------
    def _arrived_at(self, index: int, device: object) -> None:
        """The request of flow `index` reached `device`'s namespace."""
        flow, result = self.flows[index], self.results[index]
        if device == flow.target:
            result.seen = True
        elif device != flow.source:
            result.refused = f"{device} received it instead of {flow.target}"

    def _on_icmp(self, sock: socket.socket, device: object) -> None:
        while True:
            try:
                data = sock.recv(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                continue
            if len(data) < 28:
                continue
            ihl = (data[0] & 0x0F) * 4
            source = socket.inet_ntoa(data[12:16])
            kind, code, _, ident, _ = struct.unpack("!BBHHH", data[ihl : ihl + 8])
            if kind in (_UNREACHABLE, _TIME_EXCEEDED):
                why = f"icmp {kind}/{code} from {source}"
                self._icmp_error(data[ihl + 8 :], device, why, (kind, code) == (_UNREACHABLE, 1))
                continue
            index = self.index_of(data[ihl + 8 :]) if ident == self.round_id else None
            if index is None or self.flows[index].protocol != "icmp":
                continue
            flow, result = self.flows[index], self.results[index]
            if kind == _ECHO_REQUEST:
                self._arrived_at(index, device)
            elif device == flow.source and result.replied is None:
                if source != flow.address:
                    result.refused = f"answered from {source}, not {flow.address}"
                else:
                    result.replied = time.monotonic() - self.sent[index]

    def _icmp_error(self, quoted: bytes, device: object, why: str, unresolved: bool) -> None:
        """An ICMP error quoting one of this round's echo requests sent by `device`."""
        if len(quoted) < 28:
            return
        ihl = (quoted[0] & 0x0F) * 4
        kind, _, _, ident, seq = struct.unpack("!BBHHH", quoted[ihl : ihl + 8])
        if kind != _ECHO_REQUEST or ident != self.round_id:
            return
        for index in range(seq, len(self.flows), 0x10000):
            flow, result = self.flows[index], self.results[index]
            if flow.protocol == "icmp" and flow.source == device and result.replied is None:
                result.refused, result.unresolved = why, unresolved
                return

    def _on_accept(self, sock: socket.socket, device: object) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:  # nothing more to accept (or the queue broke): done
                return
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            self.received[-1 - conn.fileno()] = b""
            self._watch(conn, self._on_tcp_server, device)

    def _on_tcp_server(self, conn: socket.socket, device: object) -> None:
        key = -1 - conn.fileno()
        try:
            chunk = conn.recv(PAYLOAD_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        data = self.received[key] = self.received.get(key, b"") + chunk
        if len(data) >= PAYLOAD_BYTES:
            index = self.index_of(data)
            if index is not None and self.flows[index].protocol == "tcp":
                self._arrived_at(index, device)
                with contextlib.suppress(OSError):
                    conn.send(data)
        if not chunk or len(data) >= PAYLOAD_BYTES:  # served: kept open, no longer watched
            self.watched.pop(conn.fileno(), None)
            self.kept.append(conn)

    def _on_udp_server(self, sock: socket.socket, device: object) -> None:
        """Echo each datagram from the address it was sent to: a reply from the address
        routing would pick (the outgoing interface's) is not the probed address's answer,
        and a router's loopback or other-side address would never seem to answer."""
        while True:
            try:
                data, ancillary, _, peer = sock.recvmsg(2048, socket.CMSG_SPACE(_PKTINFO.size))
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # an ICMP error of an earlier echo; not a datagram
                continue
            index = self.index_of(data)
            if index is not None and self.flows[index].protocol == "udp":
                self._arrived_at(index, device)
                source = [
                    (socket.IPPROTO_IP, _IP_PKTINFO, _PKTINFO.pack(0, _PKTINFO.unpack(d)[2], b""))
                    for level, kind, d in ancillary
                    if level == socket.IPPROTO_IP and kind == _IP_PKTINFO
                ]
                with contextlib.suppress(OSError):  # refused on its way: the source waits
                    sock.sendmsg([data], source, 0, peer)

    def _on_client(self, sock: socket.socket, tag: object) -> None:
        index = int(tag)  # type: ignore[call-overload]
        flow, result = self.flows[index], self.results[index]
        if index in self.connecting:
            self.connecting.discard(index)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            try:
                if code:
                    raise OSError(code, os.strerror(code))
                sock.send(self.payload(index))
            except OSError as err:
                if err.errno not in TRANSIENT:
                    result.refused = f"tcp: {err.strerror or err}"
                    result.unresolved = err.errno == errno.EHOSTUNREACH
                self._close(sock)
            return
        try:
            data = sock.recv(2048)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as err:  # ECONNREFUSED, a reset, an ICMP error
            result.refused = f"{flow.protocol}: {err.strerror or err}"
            result.unresolved = err.errno == errno.EHOSTUNREACH
            self._close(sock)
            return
        if flow.protocol == "tcp":
            data = self.received[index] = self.received.get(index, b"") + data
            if data and len(data) < PAYLOAD_BYTES:
                return
        if data == self.payload(index):
            result.replied = time.monotonic() - self.sent[index]
        else:
            result.refused = "the echo came back altered or cut"
        self._close(sock)


_ICMP_PASS = sum(1 << t for t in (_ECHO_REPLY, _UNREACHABLE, _ECHO_REQUEST, _TIME_EXCEEDED))
_ICMP_BLOCKED = struct.pack("I", ~_ICMP_PASS & 0xFFFFFFFF)


def _socket(kind: str) -> socket.socket:
    if kind == "raw":
        return socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF
