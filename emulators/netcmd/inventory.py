"""The kernel objects a device's network namespace holds, read by netlink, as the kernel
counts them: what the per-device bounds (budget.py) count, and how to delete each one.

One `take()` dumps, from a thread inside the namespace (netlink.in_netns):
  - rtnetlink: addresses, routes (IPv4 and IPv6, every table; each next hop of a multipath
    route counts), policy rules (IPv4 and IPv6), neighbour entries that stay (permanent or
    noarp) and proxy neighbour entries (IPv4 and IPv6), qdiscs (the invisible default ones
    too: a prio qdisc holds a pfifo per band), classes and filters;
  - nfnetlink: the nf_tables tables, chains and rules that iptables-nft makes, and the
    xt `string` matches inside those rules (each holds a text-search automaton: the one
    expensive match iptables.py allows).
Each object is keyed by what identifies it (not by counters or timers), so two
inventories differ exactly by what was added and removed in between, and carries the
request that deletes it: the dumped message sent back with the DEL type (as iproute2's
`flush` does) or an nf_tables DEL request.
"""

from __future__ import annotations

import socket
import struct
from collections import Counter
from dataclasses import dataclass, field

from emulators.netcmd import netlink
from emulators.netcmd.netlink import attr, attrs, text
from pipeline.errors import EnvironmentFailure

RULES = "iptables rules and chains"
STRINGS = "iptables string matches"
TC = "tc qdiscs, classes and filters"
ROUTES = "routes (each next hop counts)"
ADDRESSES = "addresses"
NEIGHBOURS = "permanent and proxy neighbour entries"
IP_RULES = "policy routing rules"

RTM_DELADDR, RTM_GETADDR = 21, 22
RTM_DELROUTE, RTM_GETROUTE = 25, 26
RTM_DELNEIGH, RTM_GETNEIGH = 29, 30
RTM_DELRULE, RTM_GETRULE = 33, 34
RTM_DELQDISC, RTM_GETQDISC = 37, 38
RTM_DELTCLASS, RTM_GETTCLASS = 41, 42
RTM_DELTFILTER, RTM_GETTFILTER = 45, 46
NFT_GETTABLE, NFT_DELTABLE, NFT_GETCHAIN, NFT_DELCHAIN, NFT_GETRULE, NFT_DELRULE = 1, 2, 4, 5, 7, 8
NUD_NOARP, NUD_PERMANENT, NTF_PROXY = 0x40, 0x80, 0x08
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_MULTIPATH, RTA_TABLE = 1, 4, 5, 6, 9, 15
RTA_CACHEINFO, RTA_EXPIRES = 12, 23
IFA_ADDRESS, IFA_LOCAL = 1, 2
NDA_DST = 1
TCA_KIND, TCA_DUMP_INVISIBLE, TCA_CHAIN = 1, 10, 11
TC_H_INGRESS_BLOCK, TC_H_EGRESS_BLOCK = 0xFFFFFFF2, 0xFFFFFFF3
FAMILIES = (socket.AF_INET, socket.AF_INET6)


@dataclass(frozen=True)
class Obj:
    """One kernel object: what it counts towards, and the request that deletes it."""

    counts: tuple[tuple[str, int], ...]  # (bound, how many it counts as)
    order: int  # deletion order: addresses first (their routes go with them), nft last
    undo: tuple  # ("rtnl", msg type, payload) or ("nft", msg, family, attributes)


@dataclass
class Inventory:
    """Every object of a namespace, by key."""

    objects: dict[tuple, Obj] = field(default_factory=dict)

    def counts(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for obj in self.objects.values():
            for kind, n in obj.counts:
                total[kind] += n
        return total

    def added_since(self, before: Inventory) -> list[Obj]:
        """The objects this inventory has and `before` had not, in deletion order."""
        new = [o for k, o in self.objects.items() if k not in before.objects]
        return sorted(new, key=lambda o: o.order)


def _addresses(sock: socket.socket, inv: Inventory) -> None:
    for msg in netlink.dump(sock, RTM_GETADDR, bytes(8)):
        family, prefixlen, _, _, index = struct.unpack_from("=BBBBI", msg)
        a = attrs(msg, 8)
        key = ("addr", family, index, prefixlen, a.get(IFA_LOCAL), a.get(IFA_ADDRESS))
        inv.objects[key] = Obj(((ADDRESSES, 1),), 0, ("rtnl", RTM_DELADDR, msg))


def _nexthops(value: bytes) -> tuple[int, bytes]:
    """(how many next hops an RTA_MULTIPATH holds, its bytes with their flags zeroed:
    carrier changes set and clear RTNH_F_LINKDOWN)."""
    out, at, hops = bytearray(value), 0, 0
    while at + 8 <= len(value):
        length = struct.unpack_from("=H", value, at)[0]
        if length < 8:
            break
        out[at + 2] = 0
        hops += 1
        at += (length + 3) & ~3
    return hops, bytes(out)


def _routes(sock: socket.socket, inv: Inventory) -> None:
    for msg in netlink.dump(sock, RTM_GETROUTE, bytes(12)):
        if msg[0] not in FAMILIES:
            continue  # the multicast routing tables
        weight, parts = 1, []
        for kind, value in netlink.attr_list(msg, 12):
            if kind in (RTA_CACHEINFO, RTA_EXPIRES):
                continue  # use counters and timers
            if kind == RTA_MULTIPATH:
                weight, value = _nexthops(value)
                weight = max(weight, 1)
            parts.append((kind, value))
        key = ("route", msg[:8], tuple(sorted(parts)))  # rtmsg without its flags
        inv.objects[key] = Obj(((ROUTES, weight),), 1, ("rtnl", RTM_DELROUTE, msg))


def _rules(sock: socket.socket, inv: Inventory) -> None:
    for msg in netlink.dump(sock, RTM_GETRULE, bytes(12)):
        if msg[0] in FAMILIES:
            key = ("rule", msg[:8], tuple(sorted(netlink.attr_list(msg, 12))))
            inv.objects[key] = Obj(((IP_RULES, 1),), 2, ("rtnl", RTM_DELRULE, msg))


def _neighbours(sock: socket.socket, inv: Inventory) -> None:
    for proxy in (False, True):
        request = struct.pack("=BxxxiHBB", socket.AF_UNSPEC, 0, 0, NTF_PROXY if proxy else 0, 0)
        for msg in netlink.dump(sock, RTM_GETNEIGH, request):
            family, ifindex, state = struct.unpack_from("=BxxxiH", msg)
            if family not in FAMILIES or not (proxy or state & (NUD_PERMANENT | NUD_NOARP)):
                continue  # learned entries age out, and each reset flushes them
            key = ("neigh", proxy, family, ifindex, attrs(msg, 12).get(NDA_DST))
            inv.objects[key] = Obj(((NEIGHBOURS, 1),), 3, ("rtnl", RTM_DELNEIGH, msg))


def _tcmsg(ifindex: int = 0, handle: int = 0, parent: int = 0, info: int = 0) -> bytes:
    return struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, handle, parent, info)


def _tc(sock: socket.socket, inv: Inventory) -> None:
    invisible = attr(TCA_DUMP_INVISIBLE, b"")
    parents: dict[int, set[int]] = {}
    for msg in netlink.dump(sock, RTM_GETQDISC, _tcmsg() + invisible):
        ifindex, handle, parent = struct.unpack_from("=xxxxiII", msg)
        kind = text(attrs(msg, 20).get(TCA_KIND, b""))
        undo = ("rtnl", RTM_DELQDISC, _tcmsg(ifindex, handle, parent))
        inv.objects[("qdisc", ifindex, handle, parent)] = Obj(((TC, 1),), 6, undo)
        parents.setdefault(ifindex, set()).add(handle)
        # Their filter blocks are named by these parents (an ingress qdisc answers any
        # of them with its one block, so only clsact is asked for its egress block).
        if kind in ("ingress", "clsact"):
            parents[ifindex].add(TC_H_INGRESS_BLOCK)
        if kind == "clsact":
            parents[ifindex].add(TC_H_EGRESS_BLOCK)
    for ifindex, handles in parents.items():
        for msg in netlink.dump(sock, RTM_GETTCLASS, _tcmsg(ifindex)):
            handle, parent = struct.unpack_from("=xxxxxxxxII", msg)
            undo = ("rtnl", RTM_DELTCLASS, _tcmsg(ifindex, handle, parent))
            inv.objects[("class", ifindex, handle, parent)] = Obj(((TC, 1),), 5, undo)
            handles.add(handle)
        for parent in handles:
            try:
                found = netlink.dump(sock, RTM_GETTFILTER, _tcmsg(ifindex, parent=parent))
            except OSError:
                continue  # a block that does not exist (an ingress qdisc has no egress)
            for msg in found:
                handle, at, info = struct.unpack_from("=xxxxxxxxIII", msg)
                a = attrs(msg, 20)
                key = ("filter", ifindex, at, handle, info, a.get(TCA_KIND), a.get(TCA_CHAIN))
                undo = ("rtnl", RTM_DELTFILTER, _tcmsg(ifindex, 0, at, info))
                inv.objects[key] = Obj(((TC, 1),), 4, undo)


def _string_matches(expressions: bytes) -> int:
    """How many xt `string` matches a rule's NFTA_RULE_EXPRESSIONS hold."""
    found = 0
    for _, element in netlink.attr_list(expressions):
        expr = attrs(element, 0)
        if text(expr.get(1, b"")) == "match":  # NFTA_EXPR_NAME
            match = attrs(expr.get(2, b""), 0)  # NFTA_EXPR_DATA
            found += text(match.get(1, b"")) == "string"  # NFTA_MATCH_NAME
    return found


def _nft(sock: socket.socket, inv: Inventory) -> None:
    header = struct.pack("=BBH", socket.AF_UNSPEC, 0, 0)
    kind = netlink.NFNL_SUBSYS_NFTABLES << 8
    for msg in netlink.dump(sock, kind | NFT_GETTABLE, header):
        name = attrs(msg, 4).get(1, b"")  # NFTA_TABLE_NAME
        undo = ("nft", NFT_DELTABLE, msg[0], attr(1, name))
        inv.objects[("table", msg[0], name)] = Obj((), 9, undo)
    for msg in netlink.dump(sock, kind | NFT_GETCHAIN, header):
        a = attrs(msg, 4)  # NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME
        undo = ("nft", NFT_DELCHAIN, msg[0], attr(1, a.get(1, b"")) + attr(3, a.get(3, b"")))
        inv.objects[("chain", msg[0], a.get(1), a.get(3))] = Obj(((RULES, 1),), 8, undo)
    for msg in netlink.dump(sock, kind | NFT_GETRULE, header):
        a = attrs(msg, 4)  # NFTA_RULE_TABLE, _CHAIN, _HANDLE, _EXPRESSIONS
        table, chain, handle = a.get(1, b""), a.get(2, b""), a.get(3, b"")
        counts = [(RULES, 1)]
        strings = _string_matches(a.get(4, b""))
        if strings:
            counts.append((STRINGS, strings))
        undo = ("nft", NFT_DELRULE, msg[0], attr(1, table) + attr(2, chain) + attr(3, handle))
        inv.objects[("rule", msg[0], table, chain, handle)] = Obj(tuple(counts), 7, undo)


def _take() -> Inventory:
    inv = Inventory()
    with netlink.route_socket() as sock:
        for collect in (_addresses, _routes, _rules, _neighbours, _tc):
            collect(sock, inv)
    with netlink.netfilter_socket() as sock:
        _nft(sock, inv)
    return inv


def take(netns: str) -> Inventory:
    """Every bounded object the network namespace at `netns` holds now; a namespace that
    cannot be read (its device gone) is an EnvironmentFailure."""
    try:
        return netlink.in_netns(netns, _take)
    except OSError as err:
        raise EnvironmentFailure(f"counting the kernel objects of {netns}: {err}") from err


def _remove(objects: list[Obj]) -> list[str]:
    failures = []
    rtnl = [o.undo[1:] for o in objects if o.undo[0] == "rtnl"]
    with netlink.route_socket() as sock:
        for (kind, _), code in zip(rtnl, netlink.delete(sock, rtnl), strict=True):
            # Gone already: with its address, its qdisc or its parent.
            if code not in (0, 2, 3, 19, 22, 99):  # ENOENT ESRCH ENODEV EINVAL EADDRNOTAVAIL
                failures.append(f"netlink {kind}: errno {code}")
    requests = [o.undo[1:] for o in objects if o.undo[0] == "nft"]
    # A table deleted takes its chains and rules along: delete nothing else inside it.
    tables = {(f, body) for m, f, body in requests if m == NFT_DELTABLE}
    kept = [r for r in requests if r[0] == NFT_DELTABLE or not _inside(r, tables)]
    with netlink.netfilter_socket() as sock:
        code = netlink.nft_batch(sock, kept)
    if code:
        failures.append(f"nf_tables: errno {code}")
    return failures


def _inside(request: tuple[int, int, bytes], tables: set[tuple[int, bytes]]) -> bool:
    _, family, body = request
    table = netlink.attr_list(body)[0][1]
    return (family, attr(1, table)) in tables


def remove(netns: str, objects: list[Obj]) -> list[str]:
    """Delete `objects` (in the order given) in the namespace at `netns`; what failed."""
    try:
        return netlink.in_netns(netns, lambda: _remove(objects))
    except OSError as err:
        raise EnvironmentFailure(f"deleting kernel objects in {netns}: {err}") from err
