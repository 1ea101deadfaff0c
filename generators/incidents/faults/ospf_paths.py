"""OSPF faults that move traffic: what the path and ECMP intents (and, on a chain, the
flows) show, computed from the spec's own costs so that each draw breaks what it claims.

  ospf.network_type_mismatch  one end broadcast on a point-to-point link: the adjacency
                              comes up (FRR 8.4: Full after the wait timer), but SPF drops
                              the link; drawn on chains (reachability goes) and on the links
                              of path or ECMP intents (paths move), since elsewhere nothing
                              the verdict reads changes
  ospf.cost_steering          one end's cost raised so that a path intent's hop leaves its
                              link (component: that interface)
  ospf.max_metric             a transit router advertises itself as a stub router (`max-metric
                              router-lsa administrative`): the hop before it on a path intent
                              goes round it (component `ospf`); it shields a router that does
                              not forward (an order trap, traps.py)

`first_hops` is OSPF's SPF towards one router with per-end costs (a link's cost is each
end's own, for what leaves through it), so a draw knows which next hop changes.
"""

from __future__ import annotations

import heapq
import random
import re
from collections.abc import Callable

from generators.incidents.faults.frr import (
    End,
    choose,
    conf,
    fix_conf,
    ospf_ends,
    ospf_links,
    placement,
    show,
)
from generators.incidents.faults.kinds import Cause, Evidence, Fault, FaultKind, Taken, define
from generators.incidents.faults.ospf import _fault, _interface
from generators.netlab.spec import NetSpec

FAR = 1 << 30


def _intent_links(spec: NetSpec) -> set[int]:
    """Links a path or ECMP intent uses."""
    used = {link for p in spec.paths for link in p.links}
    for e in spec.ecmp:
        used |= {x.id for x in spec.links_of(e.router) if x.end(e.router)[0] in e.via}
    return used


def network_type_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    if spec.family == "chain":
        links = ospf_links(spec)
    elif spec.family in ("ring", "mesh"):
        used = _intent_links(spec)
        links = [x for x in ospf_links(spec) if x.id in used]
    else:
        return None
    end = choose(rng, ospf_ends(spec, links), taken, lambda e: (e.element,))
    if end is None:
        return None
    return _fault(
        "ospf.network_type_mismatch",
        spec,
        end,
        f"{end.router}'s {end.intf} runs OSPF network type broadcast; the intent and "
        f"{end.peer}: point-to-point",
        inject=(conf(end.router, f"interface {end.intf}", "ip ospf network broadcast"),),
        fix=((end.router, fix_conf(f"interface {end.intf}", "ip ospf network point-to-point")),),
        evidence=(_interface(spec, end, r"Network Type BROADCAST"),),
    )


def first_hops(
    spec: NetSpec, target: str, raised: dict[tuple[str, int], int]
) -> dict[str, tuple[int, set[int]]]:
    """router -> (its distance to `target`, the links of its equal-cost first hops), with
    the cost of each (router, link) end in `raised` replaced: in OSPF a link's cost is
    each end's own, for the traffic that leaves through it."""
    out_edges: dict[str, list[tuple[str, int, int]]] = {}  # me -> [(peer, link, my cost)]
    in_edges: dict[str, list[tuple[str, int]]] = {}  # peer -> [(me, my cost towards it)]
    for x in ospf_links(spec):
        for me, peer in ((x.a, x.b), (x.b, x.a)):
            cost = raised.get((me, x.id), x.cost)
            out_edges.setdefault(me, []).append((peer, x.id, cost))
            in_edges.setdefault(peer, []).append((me, cost))
    dist = {target: 0}
    heap = [(0, target)]
    while heap:
        d, node = heapq.heappop(heap)
        if d > dist[node]:
            continue
        for me, cost in in_edges.get(node, []):
            if d + cost < dist.get(me, FAR):
                dist[me] = d + cost
                heapq.heappush(heap, (d + cost, me))
    return {
        me: (d, {link for peer, link, c in out_edges.get(me, []) if c + dist.get(peer, FAR) == d})
        for me, d in dist.items()
    }


# A lab's places for the path kinds are a pure function of its spec, and every draw on a
# large lab recomputed hundreds of shortest-path trees: kept per spec (specs are few).
# The entry holds its spec, so an id is never reused while its entry lives.
_PLACES: dict[tuple[str, int], tuple[NetSpec, list]] = {}


def _cached(kind: str, spec: NetSpec, compute: Callable[[NetSpec], list]) -> list:
    key = (kind, id(spec))
    if key not in _PLACES or _PLACES[key][0] is not spec:
        if len(_PLACES) > 512:
            _PLACES.clear()
        _PLACES[key] = (spec, compute(spec))
    return _PLACES[key][1]


def _steering_places(spec: NetSpec) -> list:
    places = []
    for p in spec.paths:
        target = p.routers[-1]
        for me, link in zip(p.routers, p.links, strict=False):
            x = spec.link(link)
            for cost in (100, 300, 1000):
                table = first_hops(spec, target, {(me, link): cost})
                if me in table and link not in table[me][1] and table[me][1]:
                    places.append((p, me, x, cost))
                    break
    return places


def cost_steering(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = _cached("steering", spec, _steering_places)
    place = choose(rng, places, taken, lambda pl: (f"link:{pl[2].id}",))
    if place is None:
        return None
    p, me, x, cost = place
    intf, _, peer, _ = x.end(me)
    end = End(x, me, intf, peer, x.end(peer)[0])
    target = spec.host(p.target).address.split("/")[0]
    return _fault(
        "ospf.cost_steering",
        spec,
        end,
        f"{me}'s {intf} has OSPF cost {cost}; the intent: {x.cost} on both ends, so that "
        f"{p.source} -> {p.target} crosses link {x.id}",
        inject=(conf(me, f"interface {intf}", f"ip ospf cost {cost}"),),
        fix=((me, fix_conf(f"interface {intf}", f"ip ospf cost {x.cost}")),),
        evidence=(
            _interface(spec, end, rf"Cost: {cost}\b"),
            Evidence(me, f"ip route get {target}", rf"\bdev (?!{re.escape(intf)}\s)\S+"),
        ),
    )


def _max_metric_places(spec: NetSpec) -> list:
    places = []
    for p in spec.paths:
        target = p.routers[-1]
        for i in range(1, len(p.routers) - 1):
            before, me, link = p.routers[i - 1], p.routers[i], p.links[i - 1]
            raised = {}
            for x in spec.links_of(me):
                if x.area is not None and x.role != "spare":
                    raised[(me, x.id)] = 0xFFFF
            d, hops = first_hops(spec, target, raised).get(before, (FAR, set()))
            if hops and link not in hops and d < FAR:
                places.append((p, before, me, link))
    return places


def max_metric(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = _cached("max_metric", spec, _max_metric_places)
    place = choose(rng, places, taken, lambda pl: (f"router:{pl[2]}",))
    if place is None:
        return None
    p, before, me, link = place
    target = spec.host(p.target).address.split("/")[0]
    intf = spec.link(link).end(before)[0]
    kind = "ospf.max_metric"
    return Fault(
        kind=kind,
        cause=Cause(me, "ospf", kind),
        placement=placement(spec, me, "process"),
        summary=f"{me} advertises its router-LSA with maximum metric (stub router): "
        f"{p.source} -> {p.target} no longer crosses it",
        inject=(conf(me, "router ospf", "max-metric router-lsa administrative"),),
        fix=((me, fix_conf("router ospf", "no max-metric router-lsa administrative")),),
        evidence=(
            show(me, "show ip ospf", r"Originating stub / maximum-distance Router-LSA"),
            Evidence(before, f"ip route get {target}", rf"\bdev (?!{re.escape(intf)}\s)\S+"),
        ),
        elements=frozenset({f"router:{me}"}),
    )


def _kind(name: str, meaning: str, draw, topologies, checks, component: str, **kw) -> FaultKind:
    return define(
        "ospf", name, meaning, component, draw, topologies=topologies, checks=checks, **kw
    )


_kind(
    "network_type_mismatch",
    "one end of a point-to-point OSPF link runs another network type",
    network_type_mismatch,
    ("chain", "ring", "mesh"),
    ("works", "intent"),
    "the deviating interface (r7-eth2)",
)
_kind(
    "cost_steering",
    "one end of an OSPF link has a cost other than the intent's, moving a path intent off it",
    cost_steering,
    ("ring", "mesh"),
    ("intent",),
    "the deviating interface (r7-eth2)",
)
_kind(
    "max_metric",
    "a router advertises itself as an OSPF stub router (maximum metric)",
    max_metric,
    ("ring", "mesh"),
    ("intent",),
    "ospf",
    # the router it keeps traffic off may not forward (faults/traps.py): no protocol sees
    # that, and fixing the stub router first sends the path intent's traffic into it
    shields=("dataplane.ip_forward_disabled",),
)
