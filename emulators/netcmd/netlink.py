"""Netlink from this process into a device's network namespace: dumps, deletes, attributes.

`in_netns` runs a function on a short-lived thread that joined the namespace (setns), so
the sockets it opens belong to it and no process is started. `dump` sends one dump
request and returns every message's payload; `attrs` reads a payload's attributes;
`delete` sends requests (a dumped object sent back with the matching DEL type, as
iproute2's `flush` does) and collects the kernel's answers; `nft_batch` sends nf_tables
requests as one transaction (NFNL_MSG_BATCH_BEGIN ... END), all or nothing.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

CLONE_NEWNET = 0x40000000
NETLINK_ROUTE, NETLINK_NETFILTER = 0, 12
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLM_F_DUMP = 0x300  # NLM_F_ROOT | NLM_F_MATCH
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER
NFNL_SUBSYS_NFTABLES = 10
NFNL_MSG_BATCH_BEGIN, NFNL_MSG_BATCH_END = 0x10, 0x11
TIMEOUT_S = 5.0

_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


def in_netns(path: str, work: Callable[[], T]) -> T:
    """`work()` run by a thread that joined the network namespace at `path`; sockets it
    opens belong to that namespace. The thread, and its namespace, end with the call."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({path}): {os.strerror(err)}")
            finally:
                os.close(fd)
            box["value"] = work()
        except BaseException as err:  # handed to the caller, raised there
            box["error"] = err

    thread = threading.Thread(target=body, name="netns-netlink", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def _socket(protocol: int) -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, protocol)
    sock.settimeout(TIMEOUT_S)  # the kernel answers at once; a silent one is a failure
    return sock


def route_socket() -> socket.socket:
    return _socket(NETLINK_ROUTE)


def netfilter_socket() -> socket.socket:
    return _socket(NETLINK_NETFILTER)


def message(kind: int, flags: int, payload: bytes, seq: int = 1) -> bytes:
    return struct.pack("=IHHII", 16 + len(payload), kind, flags, seq, 0) + payload


def _messages(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(type, sequence number, payload) of every message in one datagram."""
    at = 0
    while at + 16 <= len(data):
        length, kind, _, seq, _ = struct.unpack_from("=IHHII", data, at)
        if length < 16:
            return
        yield kind, seq, data[at + 16 : at + length]
        at += (length + 3) & ~3


def dump(sock: socket.socket, kind: int, payload: bytes) -> list[bytes]:
    """The payloads of every message a dump request answers with."""
    sock.send(message(kind, NLM_F_REQUEST | NLM_F_DUMP, payload))
    out: list[bytes] = []
    while True:
        for msg_type, _, body in _messages(sock.recv(1 << 20)):
            if msg_type == NLMSG_DONE:
                return out
            if msg_type == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", body)
                if code:
                    raise OSError(-code, f"netlink dump {kind}: {os.strerror(-code)}")
                return out
            out.append(body)


def _acks(sock: socket.socket, count: int) -> dict[int, int]:
    """{sequence number: errno (0 for success)} of up to `count` acknowledged requests:
    an aborted nf_tables batch may leave some unanswered, so a pause ends the wait."""
    codes: dict[int, int] = {}
    while len(codes) < count:
        try:
            data = sock.recv(1 << 16)
        except TimeoutError:
            break
        for msg_type, seq, body in _messages(data):
            if msg_type == NLMSG_ERROR:
                codes[seq] = -struct.unpack_from("=i", body)[0]
    return codes


def delete(sock: socket.socket, requests: Sequence[tuple[int, bytes]]) -> list[int]:
    """Send each (type, payload) as an acknowledged request, one at a time (a later one
    may depend on an earlier one having gone); the errno of each (0: done)."""
    codes = []
    for seq, (kind, payload) in enumerate(requests, start=1):
        sock.send(message(kind, NLM_F_REQUEST | NLM_F_ACK, payload, seq))
        codes.append(_acks(sock, 1).get(seq, 0))
    return codes


def nft_batch(sock: socket.socket, requests: Sequence[tuple[int, int, bytes]]) -> int:
    """Send nf_tables requests (message, family, attributes) as one transaction; the
    first errno the kernel reports (0: all applied; otherwise none was)."""
    if not requests:
        return 0
    res_id = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(NFNL_SUBSYS_NFTABLES))
    parts = [message(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, res_id, 1)]
    for seq, (msg, family, body) in enumerate(requests, start=2):
        header = struct.pack("=BBH", family, 0, 0)
        kind = (NFNL_SUBSYS_NFTABLES << 8) | msg
        parts.append(message(kind, NLM_F_REQUEST | NLM_F_ACK, header + body, seq))
    parts.append(message(NFNL_MSG_BATCH_END, NLM_F_REQUEST, res_id, len(requests) + 2))
    sock.send(b"".join((p + b"\0" * (-len(p) % 4)) for p in parts))
    codes = _acks(sock, len(requests))
    return next((c for _, c in sorted(codes.items()) if c), 0)


def attrs(payload: bytes, header: int) -> dict[int, bytes]:
    """The attributes after a `header`-byte family header: {type: value}; a type seen
    more than once keeps its first value."""
    return dict(reversed(list(attr_list(payload, header))))


def attr_list(payload: bytes, start: int = 0) -> list[tuple[int, bytes]]:
    """Every (type, value) in order, from `start`."""
    out = []
    at = start
    while at + 4 <= len(payload):
        length, kind = struct.unpack_from("=HH", payload, at)
        if length < 4:
            break
        out.append((kind & NLA_TYPE_MASK, payload[at + 4 : at + length]))
        at += (length + 3) & ~3
    return out


def attr(kind: int, value: bytes) -> bytes:
    """One attribute, padded."""
    raw = struct.pack("=HH", 4 + len(value), kind) + value
    return raw + b"\0" * (-len(raw) % 4)


def text(value: bytes) -> str:
    return value.split(b"\0", 1)[0].decode("utf-8", "replace")
