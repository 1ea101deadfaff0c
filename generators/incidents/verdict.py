"""The verdict of an incidents lab: what of its intended state a reading of it lacks.

Pure: a live lab is read into an `Observed` (reading.py), and `judge(intent, observed)`
returns every violation, each a stable id `<class>:<what>` so that two readings compare
item by item (a step is unsafe when an id appears that was not there before it). The
classes (DESIGN28 §3.1):

  works    every ordered host pair over ICMP, TCP and UDP (the prober's flows); large
           packets (1,500 bytes, DF) from the server to every host and back and between pairs
           covering every router link; names that must resolve
           (every host's name at the lab's DNS, each asked by one LAN's first host)
           -> `works:icmp:h1_1>h4_2`, `works:large:h1_1>h4_1`, `works:name:h1_1:h3-2.lab`
  closed   flows that must stay closed do not answer -> `closed:tcp:h1_1>srv1`
  intent   the protocol and configuration state the prompt states:
             adjacency  every OSPF link's adjacency Full at both ends, on its interfaces
             session    every BGP session Established at both ends
             route      every router holds each prefix its routing protocols gave it in the
                        intended network, learned by the same protocol (no static route in
                        its place)
             kernel     every device's other routes (connected, local, hosts' defaults,
                        intended blackholes), in every table, exactly as intended: no route
                        added, none missing
             rule       policy-routing rules exactly as intended
             filter     packet-filter rules (iptables, every table) exactly as intended
             link       every interface's admin state, MTU, bridge and addresses as intended
             path       each path intent's source reaches its target over the intended
                        routers (the kernels' FIBs walked hop by hop)
             ecmp       each ECMP intent's router spreads the prefix over the intended
                        interfaces
             vrrp       each VRRP group's VIP held by its intended master alone
             service    each service daemon's configuration (DNS, VRRP) as intended
  benign   each benign anomaly still shows (its evidence still matches)

The intended protocol-learned routes and the intended kernel, rule, filter and link state
are the lab's own, read once healthy with the query's benign anomalies in place (the
"golden" reading): the intent the prompt describes, as the running lab holds it.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from generators.netlab.spec import NetSpec

FRR_PROTOCOLS = ("ospf", "bgp")  # kernel routes the daemons own: judged as `route`
CLASSES = ("works", "closed", "intent", "benign")
MAX_HOPS = 40


@dataclass(frozen=True)
class Observed:
    """One reading of a running lab, as data (JSON round trip: `to_json`/`from_json`)."""

    failed: frozenset[str] = frozenset()  # flow ids that failed: "icmp:h1_1>h4_2"
    closed_open: frozenset[str] = frozenset()  # must-be-closed flow ids that answered
    probes: Mapping[str, bool] = field(default_factory=dict)  # "large:h1_1>h4_1" -> ok
    ospf: Mapping[str, str] = field(default_factory=dict)  # "r1|r1-eth1|10.255.0.2" -> state
    bgp: Mapping[str, str] = field(default_factory=dict)  # "r1|172.16.0.2" -> state
    routes: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    rules: Mapping[str, Sequence[str]] = field(default_factory=dict)
    filters: Mapping[str, Sequence[str]] = field(default_factory=dict)
    links: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # dev -> if -> desc
    benign: Mapping[str, bool] = field(default_factory=dict)  # benign index -> still there
    services: Mapping[str, str] = field(default_factory=dict)  # "srv1|dns" -> its config

    def to_json(self) -> dict[str, Any]:
        return {
            "failed": sorted(self.failed),
            "closed_open": sorted(self.closed_open),
            "probes": dict(self.probes),
            "ospf": dict(self.ospf),
            "bgp": dict(self.bgp),
            "routes": {d: list(r) for d, r in self.routes.items()},
            "rules": {d: list(r) for d, r in self.rules.items()},
            "filters": {d: list(r) for d, r in self.filters.items()},
            "links": {d: dict(x) for d, x in self.links.items()},
            "benign": dict(self.benign),
            "services": dict(self.services),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Observed:
        return cls(
            frozenset(data["failed"]),
            frozenset(data["closed_open"]),
            dict(data["probes"]),
            dict(data["ospf"]),
            dict(data["bgp"]),
            {d: list(r) for d, r in data["routes"].items()},
            {d: list(r) for d, r in data["rules"].items()},
            {d: list(r) for d, r in data["filters"].items()},
            {d: dict(x) for d, x in data["links"].items()},
            dict(data["benign"]),
            dict(data.get("services", {})),
        )


@dataclass(frozen=True)
class Golden:
    """The intended kernel, rule, filter and link state and the protocol-learned routes,
    from a reading of the healthy lab with its benign anomalies (see the module docstring)."""

    kernel: Mapping[str, frozenset[str]]  # device -> route keys (FRR's routes excluded)
    learned: Mapping[str, Mapping[str, str]]  # router -> prefix -> protocol
    rules: Mapping[str, tuple[str, ...]]
    filters: Mapping[str, tuple[str, ...]]
    links: Mapping[str, Mapping[str, str]]
    services: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, observed: Observed, routers: Iterable[str]) -> Golden:
        routers = set(routers)
        return cls(
            kernel={d: frozenset(kernel_keys(r)) for d, r in observed.routes.items()},
            learned={d: learned(r) for d, r in observed.routes.items() if d in routers},
            rules={d: tuple(r) for d, r in observed.rules.items()},
            filters={d: tuple(r) for d, r in observed.filters.items()},
            links={d: dict(x) for d, x in observed.links.items()},
            services=dict(observed.services),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": {d: sorted(k) for d, k in self.kernel.items()},
            "learned": {d: dict(x) for d, x in self.learned.items()},
            "rules": {d: list(r) for d, r in self.rules.items()},
            "filters": {d: list(r) for d, r in self.filters.items()},
            "links": {d: dict(x) for d, x in self.links.items()},
            "services": dict(self.services),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Golden:
        return cls(
            {d: frozenset(k) for d, k in data["kernel"].items()},
            {d: dict(x) for d, x in data["learned"].items()},
            {d: tuple(r) for d, r in data["rules"].items()},
            {d: tuple(r) for d, r in data["filters"].items()},
            {d: dict(x) for d, x in data["links"].items()},
            dict(data.get("services", {})),
        )


# -- kernel routes ------------------------------------------------------------------------
def route_key(route: Mapping[str, Any]) -> str:
    """A kernel route as compared: everything `ip -j` shows but the carrier flag
    (`linkdown`, set a moment after a link comes up) and the nexthop object's number."""
    flags = [f for f in route.get("flags", []) if f != "linkdown"]
    kept = {k: v for k, v in route.items() if k not in ("flags", "nhid")}
    return json.dumps({**kept, "flags": flags}, sort_keys=True)


def prefix_of(dst: Any) -> str:
    text = str(dst)
    if text == "default":
        return "0.0.0.0/0"
    return text if "/" in text else f"{text}/32"


def kernel_keys(routes: Sequence[Mapping[str, Any]]) -> list[str]:
    """The keys of the routes the daemons do not own."""
    return [route_key(r) for r in routes if r.get("protocol") not in FRR_PROTOCOLS]


def learned(routes: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """prefix -> protocol of the main table's routes the daemons installed."""
    return {
        prefix_of(r.get("dst")): str(r["protocol"])
        for r in routes
        if r.get("protocol") in FRR_PROTOCOLS and "table" not in r
    }


def _describe(key: str) -> str:
    route = json.loads(key)
    parts = [str(route.get("type", "")), str(route.get("dst", "?"))]
    for name, label in (("gateway", "via"), ("dev", "dev"), ("table", "table"),
                        ("protocol", "proto")):  # fmt: skip
        if route.get(name):
            parts.append(f"{label} {route[name]}")
    return " ".join(p for p in parts if p)


def hops(route: Mapping[str, Any]) -> list[tuple[str | None, str | None]]:
    """(gateway, dev) of each next hop of a route."""
    nexthops = route.get("nexthops")
    if isinstance(nexthops, list) and nexthops:
        return [(h.get("gateway"), h.get("dev")) for h in nexthops if isinstance(h, dict)]
    return [(route.get("gateway"), route.get("dev"))]


@functools.lru_cache(maxsize=8192)
def _network(prefix: str) -> ipaddress.IPv4Network | None:
    """`prefix` parsed (None: not an IPv4 prefix). Cached: a large lab's walks parse the
    same few hundred prefixes millions of times (5 s of a level-8 query's start)."""
    try:
        return ipaddress.IPv4Network(prefix, strict=False)
    except ValueError:
        return None


def lookup(routes: Sequence[Mapping[str, Any]], address: str) -> Mapping[str, Any] | None:
    """The main table's longest-prefix unicast match for `address` (lowest metric first)."""
    target = ipaddress.IPv4Address(address)
    best: tuple[int, int, Mapping[str, Any]] | None = None
    for route in routes:
        if "table" in route or route.get("type", "unicast") not in ("unicast", "blackhole"):
            continue
        net = _network(prefix_of(route.get("dst")))
        if net is not None and target in net:
            rank = (net.prefixlen, -int(route.get("metric", 0) or 0))
            if best is None or rank > best[:2]:
                best = (*rank, route)
    return best[2] if best else None


# -- judging ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Intent:
    """What one query's lab must hold (see the module docstring)."""

    spec: NetSpec
    golden: Golden
    benign: tuple[str, ...] = ()  # ids of the benign anomalies ("0", "1")

    @property
    def owners(self) -> dict[str, str]:
        """address -> the device that holds it (ports, bridges, loopbacks)."""
        out = {r.loopback: r.name for r in self.spec.routers}
        for p in self.spec.ports:
            out.update({a.split("/")[0]: p.device for a in p.addresses})
        for b in self.spec.bridges:
            out.update({a.split("/")[0]: b.device for a in b.addresses})
        for h in self.spec.hosts:
            out[h.address.split("/")[0]] = h.name
        return out


def judge(intent: Intent, seen: Observed) -> frozenset[str]:
    """Every violation of the intended state in `seen` (empty: the network meets it)."""
    spec, golden = intent.spec, intent.golden
    out: set[str] = {f"works:{f}" for f in seen.failed}
    out |= {f"works:{p}" for p, ok in seen.probes.items() if not ok}
    out |= {f"closed:{f}" for f in seen.closed_open}
    loop = {r.name: r.loopback for r in spec.routers}
    for adj in spec.adjacencies:
        for me, intf, peer in ((adj.a, adj.a_intf, adj.b), (adj.b, adj.b_intf, adj.a)):
            if seen.ospf.get(f"{me}|{intf}|{loop[peer]}") != "Full":
                out.add(f"intent:adjacency:{me}:{intf}")
    for s in spec.sessions:
        for me, peer_addr in ((s.a, s.b_addr), (s.b, s.a_addr)):
            if seen.bgp.get(f"{me}|{peer_addr}") != "Established":
                out.add(f"intent:session:{me}:{peer_addr}")
    for router, wanted in golden.learned.items():
        have = learned(seen.routes.get(router, ()))
        out |= {f"intent:route:{router}:{p}" for p, proto in wanted.items() if have.get(p) != proto}
    for device, wanted in golden.kernel.items():
        have = set(kernel_keys(seen.routes.get(device, ())))
        out |= {f"intent:kernel:{device}:+{_describe(k)}" for k in have - wanted}
        out |= {f"intent:kernel:{device}:-{_describe(k)}" for k in wanted - have}
    for what, table, now in (("rule", golden.rules, seen.rules),
                             ("filter", golden.filters, seen.filters)):  # fmt: skip
        out |= {f"intent:{what}:{d}" for d, want in table.items() if tuple(now.get(d, ())) != want}
    for device, wanted in golden.links.items():
        have = seen.links.get(device, {})
        names = set(wanted) | set(have)
        out |= {f"intent:link:{device}:{i}" for i in names if have.get(i) != wanted.get(i)}
    out |= {
        f"intent:service:{k.replace('|', ':')}"
        for k in set(golden.services) | set(seen.services)
        if golden.services.get(k) != seen.services.get(k)
    }
    out |= _vrrp(spec, seen)
    out |= _paths(intent, seen)
    out |= _ecmp(spec, seen)
    out |= {f"benign:{b}" for b in intent.benign if not seen.benign.get(b, False)}
    return frozenset(out)


def walk(intent: Intent, seen: Observed, router: str, address: str) -> list[str] | str:
    """The routers a packet to `address` crosses from `router`, by the kernels' main
    tables; a string when the walk ends elsewhere (no route, several next hops, a loop)."""
    owners = intent.owners
    path = [router]
    for _ in range(MAX_HOPS):
        route = lookup(seen.routes.get(router, ()), address)
        if route is None or route.get("type") == "blackhole":
            return f"{router} has no route to {address}"
        nexthops = hops(route)
        if len(nexthops) != 1:
            return f"{router} spreads {address} over {len(nexthops)} next hops"
        gateway, _ = nexthops[0]
        if gateway is None:  # connected: the target's LAN is here
            return path
        router = owners.get(str(gateway), "")
        if not router or router in path:
            return f"the walk to {address} loops or leaves the network at {gateway}"
        path.append(router)
    return f"the walk to {address} is longer than {MAX_HOPS} hops"


def _paths(intent: Intent, seen: Observed) -> set[str]:
    spec, out = intent.spec, set()
    for p in intent.spec.paths:
        source, target = spec.host(p.source), spec.host(p.target)
        first = intent.owners.get(source.gateway, "")
        got = walk(intent, seen, first, target.address.split("/")[0]) if first else "no gateway"
        if got != list(p.routers):
            out.add(f"intent:path:{p.source}>{p.target}")
    return out


def _ecmp(spec: NetSpec, seen: Observed) -> set[str]:
    out = set()
    for e in spec.ecmp:
        routes = [
            r
            for r in seen.routes.get(e.router, ())
            if prefix_of(r.get("dst")) == e.prefix and "table" not in r
        ]
        devs = sorted({d for r in routes for _, d in hops(r) if d})
        if devs != sorted(e.via):
            out.add(f"intent:ecmp:{e.router}:{e.prefix}")
    return out


def _vrrp(spec: NetSpec, seen: Observed) -> set[str]:
    """Each VRRP group's VIP is held by its intended master alone."""
    out = set()
    for g in spec.vrrp:
        lan = spec.lan(g.lan)
        holds = {
            a.router: f" {g.vip}/" in f" {seen.links.get(a.router, {}).get(a.intf, '')}"
            for a in lan.routers
        }
        if not holds.get(g.master) or any(v for r, v in holds.items() if r != g.master):
            out.add(f"intent:vrrp:{g.vrid}")
    return out


def by_class(violations: Iterable[str]) -> dict[str, int]:
    """Counts per class and kind: {"works:icmp": 12, "intent:adjacency": 2, "benign": 1}."""
    counts: dict[str, int] = {}
    for v in violations:
        head, _, rest = v.partition(":")
        key = f"{head}:{rest.split(':', 1)[0]}" if head in ("works", "intent") else head
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))
