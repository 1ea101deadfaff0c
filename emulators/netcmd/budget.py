"""Per-device bounds on the kernel objects lab commands add, counted in the device's namespace.

A memory cgroup bounds what a command's process holds, not what it leaves in the kernel:
rules, qdiscs, routes and addresses are allocated for the namespace and outlive the
command (xt_hashlimit's tables are not even charged to a cgroup). So before a command
that adds one of those runs, the objects of that kind already in the device's network
namespace are counted, and the command is refused (Status.LIMIT, a `resource_limit` step)
when the device already holds LIMITS[kind] of them. One command adds one object, so a
device never holds more than its bound; a reset empties it again.

Counting is one netlink dump per kind (rtnetlink for addresses, routes, rules, permanent
neighbours, qdiscs, classes and filters; nfnetlink for the nf_tables rules and chains that
iptables-nft makes), from a short-lived thread of this process that joins the device's
namespace (setns), so no process is started: a fraction of a millisecond, and only for
commands that add.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from emulators.netcmd import getopt, iproute, iptables
from emulators.netcmd.tc import TC_OBJECTS, TC_VERBS

LIMITS = {
    "iptables rules and chains": 256,
    "tc qdiscs, classes and filters": 64,
    "routes": 512,
    "addresses": 64,
    "permanent neighbour entries": 256,
    "policy routing rules": 64,
}
RULES, TC, ROUTES, ADDRESSES, NEIGHBOURS, IP_RULES = LIMITS

CLONE_NEWNET = 0x40000000
NETLINK_ROUTE, NETLINK_NETFILTER = 0, 12
NLM_F_DUMP_REQUEST = 0x301  # NLM_F_REQUEST | NLM_F_ROOT | NLM_F_MATCH
NLMSG_ERROR, NLMSG_DONE = 2, 3
RTM_GETADDR, RTM_GETROUTE, RTM_GETNEIGH, RTM_GETRULE = 22, 26, 30, 34
RTM_GETQDISC, RTM_GETTCLASS, RTM_GETTFILTER = 38, 42, 46
NFT_GETCHAIN, NFT_GETRULE = (10 << 8) | 4, (10 << 8) | 7  # NFNL_SUBSYS_NFTABLES
NUD_PERMANENT = 0x80

_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


def adds(argv: Sequence[str]) -> str | None:
    """The kind of kernel object the checked `argv` would add, if any (a key of LIMITS)."""
    tool, args = os.path.basename(argv[0]), list(argv[1:])
    if tool == "ip":
        rest, why = iproute._globals(args, iproute.IP_OPTIONS, iproute.IP_OPTIONS_ALLOWED, "ip")
        if why or len(rest) < 2:
            return None
        obj = iproute.dispatch(rest[0], iproute.IP_OBJECTS)
        verb = iproute.dispatch(rest[1], iproute.IP_VERBS.get(obj or "", []))
        kinds = {"address": ADDRESSES, "route": ROUTES, "rule": IP_RULES,
                 "neighbor": NEIGHBOURS, "neighbour": NEIGHBOURS}  # fmt: skip
        if verb in ("add", "replace", "prepend", "append"):
            return kinds.get(obj or "")
        return None
    if tool == "tc":
        rest, _ = iproute._globals(args, iproute.TC_OPTIONS, iproute.TC_OPTIONS_ALLOWED, "tc")
        if len(rest) > 1 and iproute.dispatch(rest[0], TC_OBJECTS) in ("qdisc", "class", "filter"):
            return TC if iproute.dispatch(rest[1], TC_VERBS) in ("add", "replace") else None
        return None
    if tool == "iptables":
        names = {name for name, _ in iptables.read_iptables(args)}
        return RULES if names & {"append", "insert", "new-chain"} else None
    if tool == "route":
        return ROUTES if "add" in args else None
    if tool == "arp":
        options, _ = getopt.parse(args, "A:H:adfp:nsei:t:vh?DNV", {"set": getopt.NONE})
        return NEIGHBOURS if any(o.name in ("-s", "--set") for o in options) else None
    if tool == "ifconfig":
        return ADDRESSES if any(iproute.ipv4(a) or a == "add" for a in args[1:]) else None
    return None


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

    thread = threading.Thread(target=body, name="netns-count", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def _dump(sock: socket.socket, kind: int, payload: bytes) -> list[bytes]:
    """The payloads of every message a netlink dump request answers with."""
    sock.send(struct.pack("=IHHII", 16 + len(payload), kind, NLM_F_DUMP_REQUEST, 1, 0) + payload)
    out: list[bytes] = []
    while True:
        data = sock.recv(1 << 20)
        at = 0
        while at + 16 <= len(data):
            length, msg_type, _, _, _ = struct.unpack_from("=IHHII", data, at)
            if msg_type == NLMSG_DONE:
                return out
            if msg_type == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", data, at + 16)
                if code:
                    raise OSError(-code, f"netlink dump {kind}: {os.strerror(-code)}")
                return out
            out.append(data[at + 16 : at + length])
            at += (length + 3) & ~3


def _tcmsg(ifindex: int = 0, parent: int = 0) -> bytes:
    return struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, 0, parent, 0)


def _count_tc(sock: socket.socket) -> int:
    qdiscs = [struct.unpack_from("=xxxxiI", m) for m in _dump(sock, RTM_GETQDISC, _tcmsg())]
    total = len(qdiscs)
    for ifindex in {i for i, _ in qdiscs}:
        classes = [struct.unpack_from("=xxxxiI", m)[1] for m in
                   _dump(sock, RTM_GETTCLASS, _tcmsg(ifindex))]  # fmt: skip
        total += len(classes)
        parents = [h for i, h in qdiscs if i == ifindex] + classes
        for parent in parents:
            total += len(_dump(sock, RTM_GETTFILTER, _tcmsg(ifindex, parent)))
    return total


def _count(kind: str) -> int:
    if kind == RULES:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER) as sock:
            header = struct.pack("=BBH", socket.AF_UNSPEC, 0, 0)
            return len(_dump(sock, NFT_GETRULE, header)) + len(_dump(sock, NFT_GETCHAIN, header))
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as sock:
        if kind == TC:
            return _count_tc(sock)
        if kind == NEIGHBOURS:
            found = _dump(sock, RTM_GETNEIGH, bytes(12))
            return sum(1 for m in found if struct.unpack_from("=H", m, 8)[0] & NUD_PERMANENT)
        request = {ADDRESSES: (RTM_GETADDR, 8), ROUTES: (RTM_GETROUTE, 12),
                   IP_RULES: (RTM_GETRULE, 12)}[kind]  # fmt: skip
        # IPv4 and IPv6 only (an unspecified family also dumps the multicast rule tables)
        found = _dump(sock, request[0], bytes(request[1]))
        return sum(1 for m in found if m[0] in (socket.AF_INET, socket.AF_INET6))


def count(netns: str, kind: str) -> int:
    """How many objects of `kind` the network namespace at `netns` holds now."""
    return in_netns(netns, lambda: _count(kind))


def refusal(netns: str, argv: Sequence[str]) -> str | None:
    """Why `argv` may not run in the device at `netns`: it would add an object of a kind
    the device already holds its bound of. None when it may."""
    kind = adds(argv)
    if kind is None:
        return None
    held = count(netns, kind)
    if held >= LIMITS[kind]:
        return (
            f"this machine already holds {held} {kind}, the most allowed per machine here "
            f"({LIMITS[kind]}); delete some before adding more"
        )
    return None
