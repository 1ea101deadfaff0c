"""BGP faults of what a router announces, reflects or accepts (sessions stay up).

Kinds:
  bgp.network_missing         a router no longer announces one of its prefixes
                              (`network`); component `route:<prefix>`
  bgp.next_hop_self_missing   a route reflector's client no longer sets next-hop-self
                              towards it: the routes it learned over eBGP reach the rest of
                              the AS with a next hop nobody inside can resolve; component
                              `bgp:<route reflector's address>`
  bgp.rr_client_missing       a route reflector no longer treats two clients as clients:
                              what one learned over eBGP no longer reaches the other
                              (component `bgp`: the reflector's client list)
  bgp.allowas_in_missing      a site of a multi-site customer no longer accepts paths that
                              hold its own AS: the other site's LAN is rejected;
                              component `bgp:<provider edge's address>`

Placement: next_hop_self_missing and rr_client_missing are drawn only where a prefix
reaches the AS through the client alone (a single-homed customer's LAN, or a neighbour
AS's LANs where the providers form no cycle) and another client would then lose it: one
demoted client alone changes nothing (a reflector still reflects a non-client's routes to
its clients), measured in design28's trials and again here. allowas_in_missing only at a
single-homed site (a dual-homed one still accepts through its other session).
"""

from __future__ import annotations

import random
import re

from generators.incidents.faults.frr import (
    choose,
    clients,
    conf,
    customer_prefixes,
    fix_conf,
    placement,
    route_reflector,
    show,
)
from generators.incidents.faults.kinds import Cause, Fault, FaultKind, Taken, define
from generators.netlab.spec import NetSpec

AF = "address-family ipv4 unicast"
NOT_IN_TABLE = r"% Network not in table"


def network_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = [(r.name, prefix) for r in spec.routers for prefix in r.bgp_networks]
    place = choose(rng, places, taken, lambda p: (f"prefix:{p[1]}",))
    if place is None:
        return None
    router, prefix = place
    asn = spec.router(router).asn
    outside = sorted(r.name for r in spec.routers if r.asn and r.asn != asn)
    kind = "bgp.network_missing"
    return Fault(
        kind=kind,
        cause=Cause(router, f"route:{prefix}", kind),
        placement=placement(spec, router, "network"),
        summary=f"{router} does not announce {prefix} in BGP (its network statement is missing)",
        inject=(conf(router, f"router bgp {asn}", AF, f"no network {prefix}"),),
        fix=((router, fix_conf(f"router bgp {asn}", AF, f"network {prefix}")),),
        evidence=(
            show(router, f"show bgp ipv4 unicast {prefix}", NOT_IN_TABLE),
            show(rng.choice(outside), f"show ip route {prefix}", NOT_IN_TABLE),
        ),
        elements=frozenset({f"prefix:{prefix}"}),
    )


def only_via(spec: NetSpec, client: str) -> list[str]:
    """Prefixes that enter `client`'s AS through `client` alone: its single-homed
    customers' LANs, and, where the provider ASes form no cycle, the LANs originated in a
    provider AS it peers with."""
    out = list(customer_prefixes(spec, client))
    providers = {r.asn for r in spec.routers if r.role != "ce" and r.asn}
    between = {
        frozenset((s.a_asn, s.b_asn))
        for s in spec.sessions
        if s.kind == "ebgp" and s.a_asn in providers and s.b_asn in providers
    }
    if len(between) == len(providers) - 1:  # a tree: one way between any two
        mine = spec.router(client).asn
        for s in spec.sessions_of(client):
            _, _, peer_asn = s.peer_of(client)
            if s.kind == "ebgp" and peer_asn in providers and peer_asn != mine:
                out += [n for r in spec.routers if r.asn == peer_asn for n in r.bgp_networks]
    return sorted(set(out))


def _client_places(spec: NetSpec) -> list[tuple[str, str, str, str, str]]:
    """(client, reflector, reflector's address, a prefix only via the client, another
    client of the same reflector)."""
    out = []
    for r in spec.routers:
        rr = route_reflector(spec, r.name)
        if rr is None:
            continue
        others = [c for c, _ in clients(spec, rr[0]) if c != r.name]
        for prefix in only_via(spec, r.name):
            out += [(r.name, rr[0], rr[1], prefix, other) for other in others]
    return out


def next_hop_self_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = [
        p
        for p in _client_places(spec)
        if any(p[0] in s.next_hop_self for s in spec.sessions_of(p[0]) if p[1] in (s.a, s.b))
    ]
    place = choose(rng, places, taken, lambda p: (f"session:{_pair(spec, p[0], p[1])}",))
    if place is None:
        return None
    client, rr, rr_address, prefix, other = place
    asn = spec.router(client).asn
    kind = "bgp.next_hop_self_missing"
    return Fault(
        kind=kind,
        cause=Cause(client, f"bgp:{rr_address}", kind),
        placement=placement(spec, client, "ibgp"),
        summary=f"{client} does not set next-hop-self towards its route reflector {rr}: "
        f"{prefix} reaches the AS with an external next hop",
        inject=(conf(client, f"router bgp {asn}", AF, f"no neighbor {rr_address} next-hop-self"),),
        fix=((client, fix_conf(f"router bgp {asn}", AF, f"neighbor {rr_address} next-hop-self")),),
        evidence=(
            show(rr, f"show bgp ipv4 unicast {prefix}", r"inaccessible"),
            show(other, f"show ip route {prefix}", NOT_IN_TABLE),
        ),
        elements=frozenset({f"session:{_pair(spec, client, rr)}"}),
    )


def _pair(spec: NetSpec, x: str, y: str) -> str:
    s = next(s for s in spec.sessions_of(x) if y in (s.a, s.b))
    return f"{s.a}-{s.b}"


def rr_client_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    def elements(p):
        return (f"session:{_pair(spec, p[0], p[1])}", f"session:{_pair(spec, p[4], p[1])}")

    place = choose(rng, _client_places(spec), taken, elements)
    if place is None:
        return None
    client, rr, _, prefix, other = place
    asn = spec.router(rr).asn
    addresses = dict(clients(spec, rr))
    demoted = sorted((client, other))
    kind = "bgp.rr_client_missing"
    return Fault(
        kind=kind,
        cause=Cause(rr, "bgp", kind),
        placement=placement(spec, rr, "ibgp"),
        summary=f"route reflector {rr} no longer reflects to {demoted[0]} and {demoted[1]} as "
        f"clients: {other} does not learn {prefix} from {client}",
        inject=(
            conf(
                rr,
                f"router bgp {asn}",
                AF,
                *(f"no neighbor {addresses[c]} route-reflector-client" for c in demoted),
            ),
        ),
        fix=(
            (
                rr,
                fix_conf(
                    f"router bgp {asn}",
                    AF,
                    *(f"neighbor {addresses[c]} route-reflector-client" for c in demoted),
                ),
            ),
        ),
        evidence=(
            show(rr, f"show bgp ipv4 unicast {prefix}", re.escape(prefix)),
            show(other, f"show ip route {prefix}", NOT_IN_TABLE),
        ),
        elements=frozenset(elements(place)),
    )


def allowas_in_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = []
    for s in spec.sessions:
        for ce in s.allowas_in:
            if len(spec.sessions_of(ce)) != 1:
                continue
            asn = spec.router(ce).asn
            sites = [r for r in spec.routers if r.asn == asn and r.name != ce]
            for prefix in (n for r in sites for n in r.bgp_networks):
                places.append((s, ce, prefix))
    place = choose(rng, places, taken, lambda p: (f"session:{p[0].a}-{p[0].b}",))
    if place is None:
        return None
    s, ce, prefix = place
    pe, pe_address, _ = s.peer_of(ce)
    ce_address = s.a_addr if s.a == ce else s.b_addr
    asn = spec.router(ce).asn
    kind = "bgp.allowas_in_missing"
    return Fault(
        kind=kind,
        cause=Cause(ce, f"bgp:{pe_address}", kind),
        placement=placement(spec, ce, "ebgp"),
        summary=f"{ce} rejects paths holding its own AS {asn} from {pe}: the other site's "
        f"{prefix} never arrives",
        inject=(conf(ce, f"router bgp {asn}", AF, f"no neighbor {pe_address} allowas-in"),),
        fix=((ce, fix_conf(f"router bgp {asn}", AF, f"neighbor {pe_address} allowas-in 1")),),
        evidence=(
            show(ce, f"show bgp ipv4 unicast {prefix}", NOT_IN_TABLE),
            show(
                pe,
                f"show bgp ipv4 unicast neighbors {ce_address} advertised-routes",
                re.escape(prefix),
            ),
        ),
        elements=frozenset({f"session:{s.a}-{s.b}", f"prefix:{prefix}"}),
    )


def _kind(name: str, meaning: str, draw, topologies, component: str) -> FaultKind:
    masks = ("bgp.prefix_list_deny", "bgp.route_map_deny") if name == "network_missing" else ()
    return define(
        "bgp", name, meaning, component, draw, topologies=topologies, checks={"works"}, masks=masks
    )


_kind(
    "network_missing",
    "a router does not announce one of its prefixes in BGP",
    network_missing,
    ("chain", "leafspine", "isp"),
    "the prefix not announced, as route:<prefix> (route:10.4.2.0/24)",
)
_kind(
    "next_hop_self_missing",
    "an iBGP client does not set next-hop-self towards its route reflector",
    next_hop_self_missing,
    ("isp",),
    "the session to the reflector, as bgp:<reflector address>",
)
_kind(
    "rr_client_missing",
    "a route reflector does not treat its clients as clients",
    rr_client_missing,
    ("isp",),
    "bgp",
)
_kind(
    "allowas_in_missing",
    "a customer site does not accept paths holding its own AS",
    allowas_in_missing,
    ("isp",),
    "the session to the provider, as bgp:<provider address>",
)
