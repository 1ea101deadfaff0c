"""The lease probe: a DHCP DISCOVER from a host's namespace, and the OFFER it gets back.

From this process (no program in the lab): a UDP socket opened inside the host's network
namespace (emulators/setns.py), bound to port 68 on the host's port, broadcasts a
DISCOVER with the broadcast flag set (so the relay answers by broadcast, which reaches a
host that already has an address) and the port's own MAC. Every client's DISCOVER is sent
at once and the answers are read together until WAIT_S. An OFFER is read for what the
intent says: the address offered (it must be in the host's LAN) and the router option
(it must be the LAN's gateway as the lab's hosts use it).
"""

from __future__ import annotations

import fcntl
import os
import select
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from emulators.setns import entered

WAIT_S = 2.0
SIOCGIFHWADDR = 0x8927
MAGIC = b"\x63\x82\x53\x63"


@dataclass(frozen=True)
class Offer:
    address: str  # yiaddr
    router: str  # option 3's first address, "" when absent


def _discover(xid: int, mac: bytes) -> bytes:
    head = struct.pack("!BBBBIHHIIII", 1, 1, 6, 0, xid, 0, 0x8000, 0, 0, 0, 0)
    options = MAGIC + b"\x35\x01\x01" + b"\x37\x02\x01\x03" + b"\xff"
    return head + mac + b"\x00" * 10 + b"\x00" * 192 + options


def _offer(data: bytes, xid: int) -> Offer | None:
    if len(data) < 240 or struct.unpack("!I", data[4:8])[0] != xid or data[236:240] != MAGIC:
        return None
    address = socket.inet_ntoa(data[16:20])
    options, i, router, kind = data[240:], 0, "", 0
    while i < len(options) and options[i] != 255:
        if options[i] == 0:
            i += 1
            continue
        code, size = options[i], options[i + 1]
        value = options[i + 2 : i + 2 + size]
        if code == 53 and size == 1:
            kind = value[0]
        if code == 3 and size >= 4:
            router = socket.inet_ntoa(value[:4])
        i += 2 + size
    return Offer(address, router) if kind == 2 else None


def leases(netns: Mapping[str, int], clients: Sequence[tuple[str, str]]) -> dict[str, Offer | None]:
    """{host: the OFFER it got, or None} for each (host, its port)."""
    socks: dict[socket.socket, tuple[str, int]] = {}
    out: dict[str, Offer | None] = {host: None for host, _ in clients}
    try:
        for host, port in clients:
            with entered(netns[host], host):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, port.encode())
            sock.bind(("0.0.0.0", 68))
            info = fcntl.ioctl(sock.fileno(), SIOCGIFHWADDR, struct.pack("256s", port.encode()))
            xid = int.from_bytes(os.urandom(4), "big")
            socks[sock] = (host, xid)
            sock.sendto(_discover(xid, info[18:24]), ("255.255.255.255", 67))
        deadline = time.monotonic() + WAIT_S
        poller = select.poll()
        by_fd = {s.fileno(): s for s in socks}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        while any(out[h] is None for h, _ in socks.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for fd, _ in poller.poll(left * 1000):
                sock = by_fd[fd]
                host, xid = socks[sock]
                offer = _offer(sock.recv(2048), xid)
                if offer is not None:
                    out[host] = offer
    finally:
        for sock in socks:
            sock.close()
    return out
