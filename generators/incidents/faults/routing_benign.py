"""Benign anomalies of the OSPF and BGP families: intended state that looks like a fault.

Each is documented on the device itself (an interface description, a BGP neighbour's
description, a route-map's description) and, by the app, in the prompt's intent; none
breaks an intent (proved live like the faults: no symptom, evidence present). Touching one
is unsafe, naming one as a cause costs precision. They have no fix: the oracle leaves them.

  ospf.backup_cost         the lab's backup link, cost 1000 on both ends by design (built
                           into ring and mesh labs; nothing to inject)
  bgp.decommissioned_peer  a BGP neighbour kept shut down, described "decommissioned"
  bgp.backup_local_pref    a dual-homed customer's backup session: its provider edge gives
                           what it learns there local preference 50
  bgp.backup_prepend       a dual-homed customer prepends its AS towards its backup
                           provider edge
"""

from __future__ import annotations

import random
import re

from generators.incidents.faults.bgp_routes import AF
from generators.incidents.faults.frr import choose, conf, placement, show
from generators.incidents.faults.kinds import Cause, Evidence, Fault, FaultKind, Taken, define
from generators.netlab.catalogue import DECOMMISSIONED_PEER
from generators.netlab.spec import NetSpec


def backup_cost(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    slots = [b for b in spec.benign if b.kind == "backup_cost" and b.present]
    links = {
        x.a_intf if x.a == b.device else x.b_intf: x
        for b in slots
        for x in spec.links
        if x.role == "backup"
    }
    slot = choose(rng, slots, taken, lambda b: (f"link:{links[b.component].id}",))
    if slot is None:
        return None
    x = links[slot.component]
    kind = "ospf.backup_cost"
    return Fault(
        kind=kind,
        cause=Cause(slot.device, slot.component, kind),
        placement=placement(spec, slot.device, "link"),
        summary=f"link {x.id} ({x.a} {x.a_intf} - {x.b} {x.b_intf}) is a backup: OSPF cost "
        f"{x.cost} on both ends by design",
        inject=(),
        fix=(),
        evidence=(
            show(slot.device, f"show ip ospf interface {slot.component}", rf"Cost: {x.cost}\b"),
            Evidence(slot.device, f"ip link show {slot.component}", r"alias BACKUP "),
        ),
        elements=frozenset({f"link:{x.id}"}),
        benign=True,
    )


def decommissioned_peer(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    slots = [b for b in spec.benign if b.kind == "bgp_decommissioned"]
    slot = choose(rng, slots, taken, lambda b: (f"router:{b.device}:decommissioned",))
    if slot is None:
        return None
    router = slot.device
    asn = spec.router(router).asn
    old_as = rng.choice((64990, 64995, 64999, 65500))
    kind = "bgp.decommissioned_peer"
    peer = DECOMMISSIONED_PEER
    return Fault(
        kind=kind,
        cause=Cause(router, f"bgp:{peer}", kind),
        placement=placement(spec, router, "ebgp"),
        summary=f"{router} keeps its former neighbour {peer} (AS {old_as}) configured and shut "
        "down, described as decommissioned",
        inject=(
            conf(
                router,
                f"router bgp {asn}",
                f"neighbor {peer} remote-as {old_as}",
                f"neighbor {peer} description {slot.note}",
                f"neighbor {peer} shutdown",
            ),
        ),
        fix=(),
        evidence=(
            show(router, "show bgp summary", rf"(?m)^{re.escape(peer)}\s.*Idle \(Admin\)"),
            show(router, f"show bgp neighbors {peer}", r"Description: decommissioned"),
        ),
        elements=frozenset({f"router:{router}:decommissioned"}),
        benign=True,
    )


def _dual_homed(spec: NetSpec) -> list[tuple]:
    """(customer edge, its backup session, the provider edge there) for every customer edge
    with two sessions: the second one is the backup."""
    out = []
    for r in spec.routers:
        sessions = spec.sessions_of(r.name)
        if r.role == "ce" and len(sessions) == 2 and r.bgp_networks:
            backup = sessions[1]
            out.append((r.name, backup, backup.peer_of(r.name)[0]))
    return out


def backup_local_pref(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    place = choose(rng, _dual_homed(spec), taken, lambda p: (f"session:{p[1].a}-{p[1].b}",))
    if place is None:
        return None
    ce, s, pe = place
    ce_address = s.a_addr if s.a == ce else s.b_addr
    asn = spec.router(pe).asn
    prefix = spec.router(ce).bgp_networks[0]
    name = f"BACKUP-{ce.upper()}"
    kind = "bgp.backup_local_pref"
    return Fault(
        kind=kind,
        cause=Cause(pe, f"bgp:{ce_address}", kind),
        placement=placement(spec, pe, "ebgp"),
        summary=f"{pe} gives what {ce} sends on its backup session local preference 50, by design",
        inject=(
            conf(
                pe,
                f"route-map {name} permit 10",
                f"description backup uplink of {ce}: local-pref 50 by design",
                "set local-preference 50",
                "exit",
                f"router bgp {asn}",
                AF,
                f"neighbor {ce_address} route-map {name} in",
            ),
        ),
        fix=(),
        evidence=(
            show(pe, f"show bgp ipv4 unicast {prefix}", r"localpref 50\b"),
            show(pe, f"show route-map {name}", r"backup uplink"),
        ),
        elements=frozenset({f"session:{s.a}-{s.b}"}),
        benign=True,
    )


def backup_prepend(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    place = choose(rng, _dual_homed(spec), taken, lambda p: (f"session:{p[1].a}-{p[1].b}",))
    if place is None:
        return None
    ce, s, pe = place
    pe_address = s.peer_of(ce)[1]
    asn = spec.router(ce).asn
    name = "TO-BACKUP"
    kind = "bgp.backup_prepend"
    return Fault(
        kind=kind,
        cause=Cause(ce, f"bgp:{pe_address}", kind),
        placement=placement(spec, ce, "ebgp"),
        summary=f"{ce} prepends its AS twice towards its backup provider edge {pe}, by design",
        inject=(
            conf(
                ce,
                f"route-map {name} permit 10",
                f"description backup uplink to {pe}: prepend by design",
                f"set as-path prepend {asn} {asn}",
                "exit",
                f"router bgp {asn}",
                AF,
                f"neighbor {pe_address} route-map {name} out",
            ),
        ),
        fix=(),
        evidence=(
            show(ce, f"show route-map {name}", r"backup uplink"),
            show(
                ce,
                f"show bgp neighbors {pe_address}",
                rf"Route map for outgoing advertisements is \*?{name}\b",
            ),
        ),
        elements=frozenset({f"session:{s.a}-{s.b}"}),
        benign=True,
    )


def _kind(id_: str, meaning: str, draw, topologies, component: str) -> FaultKind:
    family, name = id_.split(".", 1)
    return define(
        family, name, meaning, component, draw, topologies=topologies, checks={"benign"},
        benign=True,
    )  # fmt: skip


_kind(
    "ospf.backup_cost",
    "a backup link with a high OSPF cost, by design",
    backup_cost,
    ("ring", "mesh"),
    "the backup interface",
)
_kind(
    "bgp.decommissioned_peer",
    "a BGP neighbour kept shut down, described as decommissioned",
    decommissioned_peer,
    ("chain", "leafspine", "isp"),
    "bgp:<the neighbour's address>",
)
_kind(
    "bgp.backup_local_pref",
    "a provider edge lowers the local preference of a customer's backup session, by design",
    backup_local_pref,
    ("isp",),
    "bgp:<the customer's address>",
)
_kind(
    "bgp.backup_prepend",
    "a customer prepends its AS towards its backup provider, by design",
    backup_prepend,
    ("isp",),
    "bgp:<the provider's address>",
)
