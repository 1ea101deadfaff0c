"""A device's IPv4 main routing table, read over netlink from this process (no `ip` run).

Routing daemons change routes on their own, so waiting for them to converge means reading
every router's routes many times a second: a netlink socket opened once in each device's
namespace (emulators/setns.py) and asked for a route dump costs no process. A route is
read as a tuple that compares equal when the route is the same: destination, type,
protocol, scope, metric, preferred source and its next hops (gateway, interface index,
flags), sorted; the kernel nexthop-object id zebra routes carry (a new one after a route
is installed again) and the carrier flags (linkdown, dead: state, not configuration) are
left out.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import struct
from collections.abc import Mapping

from emulators.setns import entered
from pipeline.errors import EnvironmentFailure

NETLINK_ROUTE = 0
RTM_NEWROUTE, RTM_GETROUTE = 24, 26
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
RT_TABLE_MAIN = 254
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_PREFSRC, RTA_MULTIPATH, RTA_TABLE = (
    1, 4, 5, 6, 7, 9, 15,
)  # fmt: skip
RTNH_F_DEAD, RTNH_F_LINKDOWN = 1, 16
_NLMSG = struct.Struct("=IHHII")
_RTMSG = struct.Struct("=BBBBBBBBI")
_RTATTR = struct.Struct("=HH")
_RTNH = struct.Struct("=HBBi")
_seq = itertools.count(1)

Route = tuple[object, ...]


def _align(n: int) -> int:
    return (n + 3) & ~3


def _attrs(data: bytes, offset: int, end: int) -> dict[int, bytes]:
    out = {}
    while offset + _RTATTR.size <= end:
        length, kind = _RTATTR.unpack_from(data, offset)
        if length < _RTATTR.size:
            break
        out[kind] = data[offset + _RTATTR.size : offset + length]
        offset += _align(length)
    return out


def _ip(raw: bytes | None) -> str:
    return socket.inet_ntop(socket.AF_INET, raw) if raw and len(raw) == 4 else ""


def _u32(raw: bytes | None) -> int:
    return struct.unpack("=I", raw[:4])[0] if raw and len(raw) >= 4 else 0


def _hops(attrs: dict[int, bytes], flags: int) -> tuple[tuple[str, int, int], ...]:
    keep = ~(RTNH_F_DEAD | RTNH_F_LINKDOWN) & 0xFF
    if RTA_MULTIPATH not in attrs:
        return ((_ip(attrs.get(RTA_GATEWAY)), _u32(attrs.get(RTA_OIF)), flags & keep),)
    raw, hops, offset = attrs[RTA_MULTIPATH], [], 0
    while offset + _RTNH.size <= len(raw):
        length, hop_flags, _, ifindex = _RTNH.unpack_from(raw, offset)
        if length < _RTNH.size:
            break
        inner = _attrs(raw, offset + _RTNH.size, offset + length)
        hops.append((_ip(inner.get(RTA_GATEWAY)), ifindex, hop_flags & keep))
        offset += _align(length)
    return tuple(sorted(hops))


def parse_routes(data: bytes) -> tuple[list[Route], bool]:
    """The main-table routes in a chunk of a dump, and whether the dump is done."""
    routes: list[Route] = []
    offset = 0
    while offset + _NLMSG.size <= len(data):
        length, kind, _, _, _ = _NLMSG.unpack_from(data, offset)
        if length < _NLMSG.size:
            break
        body = offset + _NLMSG.size
        if kind == NLMSG_DONE:
            return routes, True
        if kind == NLMSG_ERROR:
            code = struct.unpack_from("=i", data, body)[0]
            raise OSError(-code, os.strerror(-code))
        if kind == RTM_NEWROUTE:
            family, dst_len, _, _, table, proto, scope, rtype, flags = _RTMSG.unpack_from(
                data, body
            )
            attrs = _attrs(data, body + _RTMSG.size, offset + length)
            number = _u32(attrs.get(RTA_TABLE)) or table
            if family == socket.AF_INET and number == RT_TABLE_MAIN:
                dst = _ip(attrs.get(RTA_DST)) or "0.0.0.0"
                routes.append(
                    (f"{dst}/{dst_len}", rtype, proto, scope, _u32(attrs.get(RTA_PRIORITY)),
                     _ip(attrs.get(RTA_PREFSRC)), _hops(attrs, flags))
                )  # fmt: skip
        offset += _align(length)
    return routes, False


class RouteReader:
    """Netlink sockets in the namespaces of some devices, opened when first read."""

    def __init__(self, netns: Mapping[str, int]) -> None:
        self._netns = netns  # device -> an open descriptor of its namespace
        self._socks: dict[str, socket.socket] = {}

    def _socket(self, device: str) -> socket.socket:
        sock = self._socks.get(device)
        if sock is None:
            if device not in self._netns:
                raise EnvironmentFailure(f"no namespace for {device}")
            with entered(self._netns[device], device):
                sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                                     NETLINK_ROUTE)  # fmt: skip
            sock.settimeout(5.0)
            self._socks[device] = sock
        return sock

    def routes(self, device: str) -> tuple[Route, ...]:
        """The device's main-table IPv4 routes, sorted (see the module docstring)."""
        sock = self._socket(device)
        seq = next(_seq) & 0xFFFFFFFF
        request = _NLMSG.pack(_NLMSG.size + _RTMSG.size, RTM_GETROUTE,
                              NLM_F_REQUEST | NLM_F_DUMP, seq, 0)  # fmt: skip
        out: list[Route] = []
        try:
            sock.send(request + _RTMSG.pack(socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0))
            done = False
            while not done:
                chunk, done = parse_routes(sock.recv(1 << 16))
                out += chunk
        except OSError as err:
            self.close(device)
            raise EnvironmentFailure(f"reading the routes of {device}: {err}") from err
        return tuple(sorted(out, key=repr))

    def close(self, device: str | None = None) -> None:
        for name in [device] if device else list(self._socks):
            sock = self._socks.pop(name, None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
