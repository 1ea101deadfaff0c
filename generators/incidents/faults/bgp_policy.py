"""BGP faults of routing policy: filters and path steering on one session end, and ECMP.

Kinds (component `bgp:<peer address>` unless said otherwise):
  bgp.prefix_list_deny      a prefix-list on the session denies one prefix (in or out)
  bgp.route_map_deny        a route-map on the session denies one prefix (in or out)
  bgp.local_pref_steering   a route-map raises the local preference of everything one
                            spine sends: a leaf's ECMP intents collapse onto it
  bgp.as_path_prepend       a leaf prepends its AS towards one spine: every other leaf
                            stops spreading traffic to it over that spine
  bgp.ecmp_disabled         `maximum-paths 1` on a leaf (component `bgp`)

Where a filter is drawn, the prefix has no other way: a leaf-spine ECMP intent (the intent
names both spines), the one eBGP session of a two-AS chain, a single-homed customer's
session, or the session between two provider ASes where the providers form no cycle; the
last three lose the prefix beyond the filter, the first breaks the ECMP intent. Steering
and ECMP kinds are drawn on the leaf-spine family only: its ECMP intents are the intent
they break (no flow is lost).
"""

from __future__ import annotations

import random
import re
from typing import Any

from generators.incidents.faults.bgp_routes import AF
from generators.incidents.faults.frr import choose, conf, fix_conf, placement, show
from generators.incidents.faults.kinds import Cause, Fault, FaultKind, Taken, define
from generators.netlab.spec import NetSpec, Session

NAMES = {
    "in": ("FILTER-IN", "IMPORT", "PEER-IN", "CUST-IN"),
    "out": ("FILTER-OUT", "EXPORT", "PEER-OUT", "CUST-OUT"),
}
WORD = {"in": ("Incoming", "incoming"), "out": ("Outgoing", "outgoing")}


def _address_of(s: Session, router: str) -> str:
    return s.a_addr if s.a == router else s.b_addr


def _both_ways(s: Session, sender: str, prefix: str) -> list[tuple]:
    """(router, neighbour address, direction, prefix, session) for a filter of `prefix`
    where `sender` sends it over `s`: out at the sender, in at the receiver."""
    receiver = s.b if s.a == sender else s.a
    return [
        (sender, _address_of(s, receiver), "out", prefix, s),
        (receiver, _address_of(s, sender), "in", prefix, s),
    ]


def filter_places(spec: NetSpec) -> list[tuple[str, str, str, str, Session]]:
    out: list[tuple] = []
    if spec.family == "leafspine":
        origin = {n: r.name for r in spec.routers for n in r.bgp_networks}
        for e in spec.ecmp:
            for s in spec.sessions_of(e.router):
                spine = s.peer_of(e.router)[0]
                out += _both_ways(s, spine, e.prefix)
                back = next(t for t in spec.sessions_of(origin[e.prefix]) if spine in (t.a, t.b))
                out.append(_both_ways(back, origin[e.prefix], e.prefix)[0])
        return sorted(set(out), key=lambda p: (p[0], p[1], p[2], p[3]))
    providers = {r.asn for r in spec.routers if r.role != "ce" and r.asn}
    between = [s for s in spec.sessions if s.kind == "ebgp" and {s.a_asn, s.b_asn} <= providers]
    tree = len({frozenset((s.a_asn, s.b_asn)) for s in between}) == len(providers) - 1
    for s in spec.sessions:
        if s.kind != "ebgp":
            continue
        ends = (s.a, s.b)
        ces = [c for c in ends if spec.router(c).role == "ce"]
        if spec.family == "chain" or (s in between and tree):
            for sender in ends:
                asn = spec.router(sender).asn
                mine = [n for r in spec.routers if r.asn == asn for n in r.bgp_networks]
                for prefix in mine:
                    out += _both_ways(s, sender, prefix)
        elif ces and len(spec.sessions_of(ces[0])) == 1:
            for prefix in spec.router(ces[0]).bgp_networks:
                out += _both_ways(s, ces[0], prefix)
    return out


def _filter(kind: str, rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    place = choose(
        rng, filter_places(spec), taken, lambda p: (f"session:{p[4].a}-{p[4].b}", f"prefix:{p[3]}")
    )
    if place is None:
        return None
    router, neighbour, direction, prefix, s = place
    asn = spec.router(router).asn
    peer = s.b if s.a == router else s.a
    name = rng.choice(NAMES[direction])
    if kind == "bgp.prefix_list_deny":
        made = (
            f"ip prefix-list {name} seq 5 deny {prefix}",
            f"ip prefix-list {name} seq 10 permit 0.0.0.0/0 le 32",
        )
        attach = f"neighbor {neighbour} prefix-list {name} {direction}"
        unmade = (f"no ip prefix-list {name}",)
        seen = rf"{WORD[direction][0]} update prefix filter list is \*?{name}\b"
        listed = show(router, f"show ip prefix-list {name}", rf"deny {re.escape(prefix)}")
    else:
        made = (
            f"ip prefix-list {name} seq 5 permit {prefix}",
            f"route-map {name} deny 10",
            f"match ip address prefix-list {name}",
            "exit",
            f"route-map {name} permit 20",
            "exit",
        )
        attach = f"neighbor {neighbour} route-map {name} {direction}"
        unmade = (f"no route-map {name}", f"no ip prefix-list {name}")
        seen = rf"Route map for {WORD[direction][1]} advertisements is \*?{name}\b"
        listed = show(router, f"show route-map {name}", r"deny, sequence 10")
    what = "prefix-list" if kind == "bgp.prefix_list_deny" else "route-map"
    return Fault(
        kind=kind,
        cause=Cause(router, f"bgp:{neighbour}", kind),
        placement=placement(spec, router, s.kind),
        summary=f"{router}'s {what} {name} denies {prefix} {direction} from/to {peer}",
        inject=(conf(router, *made, f"router bgp {asn}", AF, attach),),
        fix=(
            (
                router,
                fix_conf(
                    f"router bgp {asn}", AF, f"no {attach}", "exit-address-family", "exit", *unmade
                ),
            ),
        ),
        evidence=(show(router, f"show bgp neighbors {neighbour}", seen), listed),
        elements=frozenset({f"session:{s.a}-{s.b}", f"prefix:{prefix}"}),
    )


def prefix_list_deny(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    return _filter("bgp.prefix_list_deny", rng, spec, taken)


def route_map_deny(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    return _filter("bgp.route_map_deny", rng, spec, taken)


def _ecmp_sessions(spec: NetSpec) -> list[tuple[str, str, Session, str]]:
    """(leaf, spine address, session, prefix) for every ECMP intent and spine."""
    return [
        (e.router, s.peer_of(e.router)[1], s, e.prefix)
        for e in spec.ecmp
        for s in spec.sessions_of(e.router)
    ]


def local_pref_steering(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    place = choose(rng, _ecmp_sessions(spec), taken, lambda p: (f"session:{p[2].a}-{p[2].b}",))
    if place is None:
        return None
    leaf, spine_address, s, prefix = place
    asn = spec.router(leaf).asn
    pref = rng.choice((150, 200, 300))
    name = rng.choice(("PREFER", "LP-IN", "PRIMARY-IN"))
    attach = f"neighbor {spine_address} route-map {name} in"
    kind = "bgp.local_pref_steering"
    return Fault(
        kind=kind,
        cause=Cause(leaf, f"bgp:{spine_address}", kind),
        placement=placement(spec, leaf, "ebgp"),
        summary=f"{leaf} gives what {spine_address} sends local preference {pref}: its ECMP "
        "intents collapse onto one spine",
        **_route_map(leaf, asn, name, f"set local-preference {pref}", attach),
        evidence=(
            show(leaf, f"show bgp ipv4 unicast {prefix}", rf"localpref {pref}\b"),
            show(
                leaf,
                f"show bgp neighbors {spine_address}",
                rf"Route map for incoming advertisements is \*?{name}\b",
            ),
        ),
        elements=frozenset({f"session:{s.a}-{s.b}"}),
    )


def _route_map(leaf: str, asn: int, name: str, setting: str, attach: str) -> dict[str, Any]:
    """A Fault's inject and fix for a route-map of one `setting` that `attach` (a neighbour
    line) puts on a session: made and attached, then detached and deleted."""
    return {
        "inject": (conf(leaf, f"route-map {name} permit 10", setting, "exit", f"router bgp {asn}",
                        AF, attach),),
        "fix": ((leaf, fix_conf(f"router bgp {asn}", AF, f"no {attach}", "exit-address-family",
                                "exit", f"no route-map {name}")),),
    }  # fmt: skip


def as_path_prepend(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    origin = {n: r.name for r in spec.routers for n in r.bgp_networks}
    places = []
    for e in spec.ecmp:
        leaf = origin[e.prefix]
        for s in spec.sessions_of(leaf):
            places.append((leaf, s.peer_of(leaf)[1], s, e.prefix, e.router))
    place = choose(rng, places, taken, lambda p: (f"session:{p[2].a}-{p[2].b}",))
    if place is None:
        return None
    leaf, spine_address, s, prefix, watcher = place
    asn = spec.router(leaf).asn
    times = rng.choice((1, 2, 3))
    name = rng.choice(("PREPEND", "DEPREF-OUT", "BACKUP-OUT"))
    attach = f"neighbor {spine_address} route-map {name} out"
    kind = "bgp.as_path_prepend"
    prepend = " ".join([str(asn)] * times)
    return Fault(
        kind=kind,
        cause=Cause(leaf, f"bgp:{spine_address}", kind),
        placement=placement(spec, leaf, "ebgp"),
        summary=f"{leaf} prepends its AS {times} more time(s) towards {spine_address}: the "
        "other leaves reach it over the other spines only",
        **_route_map(leaf, asn, name, f"set as-path prepend {prepend}", attach),
        evidence=(
            show(watcher, f"show bgp ipv4 unicast {prefix}", rf"\b{asn}( {asn}){{{times}}}\b"),
            show(
                leaf,
                f"show bgp neighbors {spine_address}",
                rf"Route map for outgoing advertisements is \*?{name}\b",
            ),
        ),
        elements=frozenset({f"session:{s.a}-{s.b}"}),
    )


def ecmp_disabled(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    leaves = sorted({e.router for e in spec.ecmp})
    leaf = choose(rng, leaves, taken, lambda r: (f"router:{r}",))
    if leaf is None:
        return None
    asn = spec.router(leaf).asn
    kind = "bgp.ecmp_disabled"
    return Fault(
        kind=kind,
        cause=Cause(leaf, "bgp", kind),
        placement=placement(spec, leaf, "process"),
        summary=f"{leaf} installs one BGP path per prefix (maximum-paths 1); the intent: "
        f"{spec.ecmp_width}",
        inject=(conf(leaf, f"router bgp {asn}", AF, "maximum-paths 1"),),
        fix=((leaf, fix_conf(f"router bgp {asn}", AF, f"maximum-paths {spec.ecmp_width}")),),
        evidence=(show(leaf, "show running-config", r"(?m)^  maximum-paths 1$"),),
        elements=frozenset({f"router:{leaf}"}),
    )


def _kind(
    name: str,
    meaning: str,
    draw,
    topologies=("leafspine",),
    checks=("intent",),
    component: str = "the session, as bgp:<peer address> (bgp:172.16.0.5)",
) -> FaultKind:
    return define("bgp", name, meaning, component, draw, topologies=topologies, checks=checks)


_kind(
    "prefix_list_deny",
    "a prefix-list on a BGP session denies a prefix the intent carries",
    prefix_list_deny,
    ("chain", "leafspine", "isp"),
    ("works", "intent"),
)
_kind(
    "route_map_deny",
    "a route-map on a BGP session denies a prefix the intent carries",
    route_map_deny,
    ("chain", "leafspine", "isp"),
    ("works", "intent"),
)
_kind(
    "local_pref_steering",
    "a route-map raises the local preference of one neighbour's routes, collapsing ECMP",
    local_pref_steering,
)
_kind(
    "as_path_prepend",
    "a router prepends its AS towards one neighbour, steering traffic off it",
    as_path_prepend,
)
_kind(
    "ecmp_disabled",
    "a router installs fewer BGP paths than the intent's ECMP width",
    ecmp_disabled,
    component="bgp",
)
