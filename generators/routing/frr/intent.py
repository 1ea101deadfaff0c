"""The intended protocol state of an FRR lab, derived from its topology, and how far a
running lab is from it.

Routing levels 4-5 ask the agent to fix the routing protocols' configuration. Working
traffic alone does not show that: five `ip route add` commands carry every host's traffic
while an OSPF adjacency or the eBGP session stays down. So the verdict also asks for the
protocol state of the intended network, derived from `FrrTopology` (the lab's definition,
the same for every query on it; nothing here depends on the faults):

  ospf     both ends of every OSPF link (`topo.ospf_links`) hold a Full adjacency with each
           other over that link's interfaces, in area 0.0.0.0 (`show ip ospf neighbor
           detail json`);
  bgp      level 5: each border router's session with its eBGP peer is Established, with
           the intended local and remote AS (`show bgp summary json`);
  learned  every router reaches every prefix of the network that it is not attached to by
           the protocol that carries it there in the intended network, as FRR's RIB
           selects and installs it (`show ip route json`): OSPF inside an AS; at level 5
           the other AS's LANs by BGP on a border router and by OSPF (redistributed) behind
           it. The border link is in no protocol: only its two routers know it;
  kernel   every route in the kernel of every router and host (every table, `ip -j -4
           route show table all`) is either one the lab had before any daemon ran
           (connected and local routes, the hosts' default routes: the `baseline`) or one
           zebra installed for the route its RIB selected (same destination, protocol and
           next hops), and every baseline route is still there. A static route (`ip route
           add`, in any table, with any `proto`), a blackhole, or a route claiming `proto
           ospf` that zebra did not install is a gap.

More routes learned by a protocol than the intended network has (e.g. after `redistribute
connected`) are no gap: the check asks that the protocols carry what the intended network
carries them for, not that they carry nothing else. Everything here is pure: the lab reads
the state (generators/routing/frr/lab.py: `FrrLab.protocol_gaps`) and passes it in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generators.lab.frr.reading import json_documents
from generators.routing.checks import Gap
from generators.routing.frr.topology import FrrTopology

BACKBONE = "0.0.0.0"
# FRR's RIB protocols of the intended network: the connected prefixes and what OSPF and BGP
# learn ("local" is FRR 9's name for a router's own addresses).
CONNECTED = ("connected", "local")
INSTALLED_BY_ZEBRA = ("ospf", "bgp")
# Counted in the observation, in this order.
KINDS = {
    "ospf": ("OSPF adjacency", "OSPF adjacencies", "not Full"),
    "bgp": ("BGP session", "BGP sessions", "not Established"),
    "learned": ("route", "routes", "not learned by the protocol that should carry it"),
    "kernel": ("kernel route", "kernel routes", "that the intended network does not have"),
    "missing": ("route", "routes", "of the intended network missing from the kernel"),
}


@dataclass(frozen=True)
class Adjacency:
    """One end of an OSPF adjacency: `router` sees `address` over `interface`."""

    router: str
    interface: str
    address: str
    neighbour: str


@dataclass(frozen=True)
class Session:
    """One end of the eBGP session."""

    router: str
    peer: str  # the peer's address
    local_as: int
    remote_as: int


@dataclass(frozen=True)
class Intent:
    """The intended protocol state of a topology; see the module docstring."""

    adjacencies: tuple[Adjacency, ...]
    sessions: tuple[Session, ...]
    learned: Mapping[str, Mapping[str, str]]  # router -> prefix -> "ospf" | "bgp"

    @classmethod
    def of(cls, topo: FrrTopology) -> Intent:
        adjacencies = []
        for k in topo.ospf_links:
            a, b = topo.router(k), topo.router(k + 1)
            adjacencies.append(Adjacency(a, topo.right(k), topo.link_addr(k, 2), b))
            adjacencies.append(Adjacency(b, topo.left(k + 1), topo.link_addr(k, 1), a))
        sessions = []
        if topo.level == 5:
            for i in topo.borders:
                other = next(j for j in topo.borders if j != i)
                sessions.append(
                    Session(topo.router(i), topo.bgp_peer(i), topo.asn(i), topo.asn(other))
                )
        learned = {topo.router(i): _learned(topo, i) for i in topo.rs}
        return cls(tuple(adjacencies), tuple(sessions), learned)


def _learned(topo: FrrTopology, i: int) -> dict[str, str]:
    """Prefix -> protocol of the routes router i learns in the intended network."""
    mine = topo.asn(i)
    attached = {topo.lan(i)} | {topo.link(k) for k in (i - 1, i) if 1 <= k < topo.routers}
    out: dict[str, str] = {}
    for j in topo.rs:
        if topo.asn(j) == mine:
            out[topo.lan(j)] = "ospf"
        else:  # level 5: announced by BGP, redistributed into OSPF by the border router
            out[topo.lan(j)] = "bgp" if i in topo.borders else "ospf"
    for k in topo.ospf_links:
        if topo.asn(k) == mine:
            out[topo.link(k)] = "ospf"
    return {prefix: proto for prefix, proto in sorted(out.items()) if prefix not in attached}


# -- reading what vtysh and ip printed ---------------------------------------------------


@dataclass(frozen=True)
class RouterReading:
    """What one router's daemons showed, found by shape in `json_documents` output."""

    neighbours: tuple[dict[str, Any], ...] = ()
    bgp: Mapping[str, Any] | None = None  # the ipv4Unicast object, None: no BGP instance
    rib: Mapping[str, list[dict[str, Any]]] | None = None

    @classmethod
    def parse(cls, text: str) -> RouterReading:
        neighbours: list[dict[str, Any]] = []
        bgp = rib = None
        for doc in json_documents(text):
            if not isinstance(doc, dict):
                continue
            if isinstance(doc.get("neighbors"), dict):
                for entries in doc["neighbors"].values():
                    neighbours += [e for e in _list(entries) if isinstance(e, dict)]
            elif isinstance(doc.get("ipv4Unicast"), dict):
                bgp = doc["ipv4Unicast"]
            elif doc and all("/" in key for key in doc):
                rib = {k: [e for e in _list(v) if isinstance(e, dict)] for k, v in doc.items()}
        return cls(tuple(neighbours), bgp, rib)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def kernel_routes(text: str) -> list[dict[str, Any]]:
    """`ip -j -4 route show table all` as a list of route objects (ValueError if not)."""
    value = json.loads(text or "[]")
    if not isinstance(value, list):
        raise ValueError("not a JSON list of routes")
    return [r for r in value if isinstance(r, dict)]


def route_key(route: Mapping[str, Any]) -> str:
    """A kernel route as compared with the baseline: everything `ip -j` shows but the
    carrier state (`linkdown`), which the kernel sets a moment after a link comes up."""
    flags = [f for f in route.get("flags", []) if f != "linkdown"]
    return json.dumps({**route, "flags": flags}, sort_keys=True)


def _prefix(dst: Any) -> str:
    text = str(dst)
    if text == "default":
        return "0.0.0.0/0"
    return text if "/" in text else f"{text}/32"


def _gateways(route: Mapping[str, Any]) -> frozenset[str]:
    hops = route.get("nexthops") if isinstance(route.get("nexthops"), list) else [route]
    return frozenset(str(h.get("gateway")) for h in hops if isinstance(h, dict))


# -- the gaps ----------------------------------------------------------------------------
def gaps(
    intent: Intent,
    routers: Mapping[str, RouterReading],
    kernel: Mapping[str, Sequence[Mapping[str, Any]]],
    baseline: Mapping[str, Iterable[str]],
) -> tuple[Gap, ...]:
    """What of the intended state the reading lacks (empty: all of it holds). `kernel`
    and `baseline` hold every device's routes (baseline: as `route_key` strings)."""
    out: list[Gap] = []
    for adj in intent.adjacencies:
        seen = routers[adj.router].neighbours
        if not any(_full(n, adj) for n in seen):
            out.append(
                Gap(
                    "ospf",
                    f"{adj.router} has no Full adjacency in area {BACKBONE} with "
                    f"{adj.neighbour} ({adj.address}) on {adj.interface}",
                )
            )
    for session in intent.sessions:
        bgp = routers[session.router].bgp or {}
        peer = (bgp.get("peers") or {}).get(session.peer)
        if (
            not isinstance(peer, dict)
            or peer.get("state") != "Established"
            or peer.get("remoteAs") != session.remote_as
            or bgp.get("as") != session.local_as
        ):
            out.append(
                Gap(
                    "bgp",
                    f"{session.router} (AS {session.local_as}) has no Established session "
                    f"with AS {session.remote_as} at {session.peer}",
                )
            )
    for router, wanted in intent.learned.items():
        rib = routers[router].rib or {}
        for prefix, protocol in wanted.items():
            got = _selected(rib.get(prefix, []))
            if got is None or got.get("protocol") != protocol:
                by = "no route" if got is None else f"a {got.get('protocol')} route"
                out.append(
                    Gap(
                        "learned",
                        f"{router} reaches {prefix} by {by}; the intended network learns it "
                        f"by {protocol.upper()}",
                    )
                )
    for device, routes in kernel.items():
        out += _kernel_gaps(device, routes, set(baseline.get(device, ())), routers.get(device))
    return tuple(out)


def _full(neighbour: Mapping[str, Any], adj: Adjacency) -> bool:
    return (
        str(neighbour.get("nbrState", "")).startswith("Full")
        and neighbour.get("ifaceName") == adj.interface
        and neighbour.get("ifaceAddress") == adj.address
        and neighbour.get("areaId") == BACKBONE
    )


def _selected(entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    chosen = [e for e in entries if e.get("selected") and e.get("installed")]
    return chosen[0] if chosen else None


def _kernel_gaps(
    device: str,
    routes: Sequence[Mapping[str, Any]],
    baseline: set[str],
    reading: RouterReading | None,
) -> list[Gap]:
    out: list[Gap] = []
    rib = (reading.rib if reading is not None else None) or {}
    present: set[str] = set()
    explained: set[str] = set()  # destinations a zebra route already accounts for
    for route in routes:
        key = route_key(route)
        if key in baseline:
            present.add(key)
            continue
        dst = _prefix(route.get("dst"))
        protocol = route.get("protocol")
        chosen = _selected(rib.get(dst, []))
        installed = (
            protocol in INSTALLED_BY_ZEBRA
            and "table" not in route
            and route.get("type", "unicast") == "unicast"
            and dst not in explained
            and chosen is not None
            and chosen.get("protocol") == protocol
            and _gateways(route)
            == frozenset(str(h.get("ip")) for h in chosen.get("nexthops", []) if h.get("fib"))
        )
        if installed:
            explained.add(dst)
            continue
        out.append(Gap("kernel", f"{device} has a kernel route the intended network lacks: "
                                 f"{_describe(route)}"))  # fmt: skip
    for key in sorted(baseline - present):
        out.append(Gap("missing", f"{device} lacks its route {_describe(json.loads(key))}"))
    return out


def _describe(route: Mapping[str, Any]) -> str:
    parts = [str(route.get("type", "")), str(route.get("dst", "?"))]
    if route.get("gateway"):
        parts.append(f"via {route['gateway']}")
    if route.get("dev"):
        parts.append(f"dev {route['dev']}")
    if route.get("table"):
        parts.append(f"table {route['table']}")
    if route.get("protocol"):
        parts.append(f"proto {route['protocol']}")
    return " ".join(p for p in parts if p)


def summary(found: Sequence[Gap]) -> str:
    """How many gaps of each kind, without saying where (the observation's line)."""
    counts = {kind: sum(g.kind == kind for g in found) for kind in KINDS}
    parts = []
    for kind, n in counts.items():
        if n:
            one, many, what = KINDS[kind]
            parts.append(f"{n} {one if n == 1 else many} {what}")
    return "; ".join(parts)
