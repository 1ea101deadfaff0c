"""OSPF faults of a router's OSPF process (or its zebra) rather than of one interface.

Kinds (component: `ospf`, the router's OSPF process, unless said otherwise):

  ospf.duplicate_router_id   a router's router-id is a neighbour's (the intent: each
                             router's loopback); both drop the adjacency between them
  ospf.stub_flag_mismatch    a router's type of a non-backbone area differs from the
                             intent's (stub where the area is normal, normal where it is
                             stub or NSSA): its adjacencies in that area stay down
  ospf.nssa_as_stub          a router has an NSSA area configured as a stub area
  ospf.redistribute_missing  an AS border no longer redistributes BGP into OSPF: the other
                             AS's LANs are unknown inside (two-AS chains)
  ospf.fib_filter            a zebra route-map (`ip protocol ospf route-map`) keeps one
                             OSPF route out of the router's FIB: OSPF has it, the kernel
                             not; component `route:<prefix>`

Placements are `<role>-process` (`<role>-area`, `<role>-fib` for the area and FIB kinds).
The fib_filter is drawn where a LAN of the router itself loses the prefix, and not in the
isp family, where iBGP would carry the prefix instead.
"""

from __future__ import annotations

import random
import re

from generators.incidents.faults.frr import (
    area_kind,
    areas_of,
    choose,
    conf,
    domain,
    fix_conf,
    neighbour_absent,
    ospf_ends,
    ospf_neighbours,
    ospf_routers,
    placement,
    rid,
    show,
    vtysh_command,
)
from generators.incidents.faults.kinds import Cause, Fault, FaultKind, Taken, define
from generators.incidents.faults.ospf import OSPF_FAMILIES
from generators.netlab.spec import NetSpec

AREA_FAMILIES = frozenset({"ring", "mesh", "campus"})


def duplicate_router_id(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    pairs = [(e.router, e.peer) for e in ospf_ends(spec)]
    pair = choose(rng, pairs, taken, lambda p: (f"router:{p[0]}", f"router:{p[1]}"))
    if pair is None:
        return None
    me, other = pair
    mine, theirs = rid(spec, me), rid(spec, other)
    kind = "ospf.duplicate_router_id"
    return Fault(
        kind=kind,
        cause=Cause(me, "ospf", kind),
        placement=placement(spec, me, "process"),
        summary=f"{me}'s OSPF router-id is {theirs}, {other}'s; the intent: its loopback {mine}",
        inject=(conf(me, "router ospf", f"ospf router-id {theirs}", "do clear ip ospf process"),),
        fix=(
            (
                me,
                vtysh_command(
                    "configure terminal",
                    "router ospf",
                    f"ospf router-id {mine}",
                    "end",
                    "clear ip ospf process",
                ),
            ),
        ),
        evidence=(
            show(me, "show ip ospf", rf"Router ID: {re.escape(theirs)}\b"),
            show(other, "show ip ospf neighbor", neighbour_absent(theirs)),
        ),
        elements=frozenset({f"router:{me}", f"router:{other}"}),
    )


def _area_places(spec: NetSpec, kinds: tuple[str, ...]) -> list[tuple[str, str, list]]:
    """(router, area, its links there) for each router with adjacencies in a non-backbone
    area whose intended type is one of `kinds`."""
    out = []
    for router in ospf_routers(spec):
        for area, links in sorted(areas_of(spec, router).items()):
            if area_kind(spec, area) in kinds:
                out.append((router, area, links))
    return out


def _area_fault(
    kind: str, spec: NetSpec, place: tuple[str, str, list], wrong: str, summary: str
) -> Fault:
    router, area, links = place
    want = area_kind(spec, area)
    inject = [f"no area {area} {want}"] if want != "normal" else []
    if wrong != "normal":
        inject.append(f"area {area} {wrong}")
    undo = [f"no area {area} {wrong}"] if wrong != "normal" else []
    if want != "normal":
        undo.append(f"area {area} {want}")
    shown = {"stub": r" \(Stub\)", "nssa": r" \(NSSA\)", "normal": r"$"}[wrong]
    peer = next(x.b if x.a == router else x.a for x in links)
    return Fault(
        kind=kind,
        cause=Cause(router, "ospf", kind),
        placement=placement(spec, router, "area"),
        summary=summary,
        inject=(conf(router, "router ospf", *inject),),
        fix=((router, fix_conf("router ospf", *undo)),),
        evidence=(
            show(router, "show ip ospf", rf"(?m)^ Area ID: {re.escape(area)}{shown}"),
            show(peer, "show ip ospf neighbor", neighbour_absent(rid(spec, router))),
        ),
        elements=frozenset({f"router:{router}", *(f"link:{x.id}" for x in links)}),
    )


def stub_flag_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    place = choose(
        rng,
        _area_places(spec, ("normal", "stub", "nssa")),
        taken,
        lambda p: (f"router:{p[0]}", *(f"link:{x.id}" for x in p[2])),
    )
    if place is None:
        return None
    router, area, _ = place
    want = area_kind(spec, area)
    wrong = "stub" if want == "normal" else "normal"
    return _area_fault(
        "ospf.stub_flag_mismatch",
        spec,
        place,
        wrong,
        f"{router} configures area {area} as {wrong}; the intent and its neighbours: {want}",
    )


def nssa_as_stub(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    place = choose(
        rng,
        _area_places(spec, ("nssa",)),
        taken,
        lambda p: (f"router:{p[0]}", *(f"link:{x.id}" for x in p[2])),
    )
    if place is None:
        return None
    router, area, _ = place
    return _area_fault(
        "ospf.nssa_as_stub",
        spec,
        place,
        "stub",
        f"{router} configures NSSA area {area} as a stub area",
    )


def redistribute_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    borders = [r.name for r in spec.routers if "bgp" in r.redistribute]
    border = choose(rng, borders, taken, lambda b: (f"router:{b}",))
    if border is None:
        return None
    group = spec.router(border).group
    foreign = [
        lan.subnet
        for lan in spec.lans
        if lan.hosts and spec.router(lan.routers[0].router).group != group
    ]
    inside = ospf_neighbours(spec, border)
    if not foreign or not inside:
        return None
    prefix = rng.choice(foreign)
    kind = "ospf.redistribute_missing"
    return Fault(
        kind=kind,
        cause=Cause(border, "ospf", kind),
        placement=placement(spec, border, "process"),
        summary=f"{border} no longer redistributes BGP into OSPF: {group}'s other routers "
        f"lose the other AS's LANs",
        inject=(conf(border, "router ospf", "no redistribute bgp"),),
        fix=((border, fix_conf("router ospf", "redistribute bgp")),),
        evidence=(
            show(border, f"show ip route {prefix}", r'Known via "bgp"'),
            show(rng.choice(inside), f"show ip route {prefix}", r"% Network not in table"),
        ),
        elements=frozenset({f"router:{border}"}),
    )


FILTER_NAMES = ("FIB-FILTER", "NO-LEGACY", "RM-OSPF", "OSPF-IMPORT")


def fib_filter(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    if spec.family == "isp":
        return None
    places = []
    for r in ospf_routers(spec):
        # Only where hosts route through `r` (their gateway): a campus pair's second SVI
        # carries no traffic of its own VLAN, so a filter there changes nothing.
        mine = [lan for lan in spec.lans if any(a.router == r for a in lan.routers)]
        gateway = [
            lan
            for lan in mine
            if lan.hosts
            and any(a.router == r and a.address.split("/")[0] == lan.gateway for a in lan.routers)
        ]
        if not gateway:
            continue
        for lan in spec.lans:
            owners = [a.router for a in lan.routers]
            if lan in mine or lan.area is None or not lan.hosts:
                continue
            if all(domain(spec, o) == domain(spec, r) for o in owners):
                places.append((r, lan.subnet))
    place = choose(rng, places, taken, lambda p: (f"router:{p[0]}", f"prefix:{p[1]}"))
    if place is None:
        return None
    router, prefix = place
    name = rng.choice(FILTER_NAMES)
    kind = "ospf.fib_filter"
    return Fault(
        kind=kind,
        cause=Cause(router, f"route:{prefix}", kind),
        placement=placement(spec, router, "fib"),
        summary=f"{router}'s zebra route-map {name} keeps the OSPF route to {prefix} out of "
        "its FIB",
        inject=(
            conf(
                router,
                f"ip prefix-list {name} seq 5 permit {prefix}",
                f"route-map {name} deny 10",
                f"match ip address prefix-list {name}",
                "exit",
                f"route-map {name} permit 20",
                "exit",
                f"ip protocol ospf route-map {name}",
            ),
        ),
        fix=(
            (
                router,
                fix_conf(
                    f"no ip protocol ospf route-map {name}",
                    f"no route-map {name}",
                    f"no ip prefix-list {name}",
                ),
            ),
        ),
        evidence=(
            show(router, f"show ip route {prefix}", r"inactive"),
            # the OSPF route is in the RIB: the same per-prefix command, not the whole
            # `show ip ospf route`, which passes the agent's 8 KiB in large labs
            show(router, f"show ip route {prefix}", r'Known via "ospf"'),
        ),
        elements=frozenset({f"router:{router}", f"prefix:{prefix}"}),
    )


def _kind(
    name: str,
    meaning: str,
    draw,
    topologies=OSPF_FAMILIES,
    checks=("works", "intent"),
    component: str = "ospf",
) -> FaultKind:
    return define("ospf", name, meaning, component, draw, topologies=topologies, checks=checks)


_kind("duplicate_router_id", "a router's OSPF router-id is another router's", duplicate_router_id)
_kind(
    "stub_flag_mismatch",
    "a router's type (normal, stub, NSSA) of an OSPF area differs from the intent's",
    stub_flag_mismatch,
    topologies=AREA_FAMILIES,
)
_kind(
    "nssa_as_stub",
    "a router configures an NSSA area as a stub area",
    nssa_as_stub,
    topologies=AREA_FAMILIES,
)
_kind(
    "redistribute_missing",
    "an AS border router does not redistribute BGP into OSPF",
    redistribute_missing,
    topologies=("chain",),
    checks=("works",),
)
_kind(
    "fib_filter",
    "a route-map keeps an OSPF route out of a router's forwarding table",
    fib_filter,
    topologies=("chain", "ring", "mesh", "campus"),
    checks=("works",),
    component="the prefix kept out, as route:<prefix> (route:10.2.3.0/24)",
)
