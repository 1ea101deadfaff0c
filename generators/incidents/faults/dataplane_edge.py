"""Data-plane kinds of the internet edge (generators/incidents/edge.py): NAT and its filter.

The edge router masquerades what leaves through its uplink, forwards TCP 7 of its outside
address to srv1, and admits from the internet only replies and that port. Each kind
breaks one of these: hosts lose the internet (masquerade missing, a source the internet
cannot answer, a deny shadowing the admission of replies), or the internet loses the
forwarded service (the wrong target). Drawn only where the lab has an edge (OSPF labs).
"""

from __future__ import annotations

import random
import re

from generators.incidents.edge import EDGE_SUBNET, Edge, edge_of
from generators.incidents.faults import dphelp as h
from generators.incidents.faults.kinds import Fault, Taken, define
from generators.netlab.spec import NetSpec

NAT_POST = "iptables:nat:POSTROUTING"
NAT_PRE = "iptables:nat:PREROUTING"
FWD = "iptables:filter:FORWARD"


def _edge(spec: NetSpec, taken: Taken, element: str) -> Edge | None:
    edge = edge_of(spec)
    if edge is None or not taken.free(f"{element}@{edge.router}"):
        return None
    return edge


def masquerade_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    edge = _edge(spec, taken, NAT_POST)
    if edge is None:
        return None
    r, rule = edge.router, f"-o {edge.intf} -j MASQUERADE"
    return h.fault(
        "dataplane.nat_masquerade_missing", r, NAT_POST, placement="edge",
        summary=f"the edge {r} no longer masquerades traffic leaving {edge.intf}",
        inject=[h.argv(r, f"iptables -t nat -D POSTROUTING {rule}")],
        fix=[(r, f"iptables -t nat -A POSTROUTING {rule}")],
        evidence=[h.Evidence(r, "iptables -t nat -S POSTROUTING",
                             r"\A-P POSTROUTING ACCEPT\s*\Z")],
        elements=[f"{NAT_POST}@{r}"],
    )  # fmt: skip


def wrong_source(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    edge = _edge(spec, taken, NAT_POST)
    if edge is None:
        return None
    base = EDGE_SUBNET.rsplit(".", 1)[0]
    wrong = f"{base}.{rng.randint(5, 250)}"
    r = edge.router
    return h.fault(
        "dataplane.nat_wrong_source", r, NAT_POST, placement="edge",
        summary=f"the edge {r} rewrites sources to {wrong}, which the internet side does "
        "not route back, instead of masquerading",
        inject=[h.argv(r, f"iptables -t nat -R POSTROUTING 1 -o {edge.intf} -j SNAT "
                          f"--to-source {wrong}")],
        fix=[(r, f"iptables -t nat -R POSTROUTING 1 -o {edge.intf} -j MASQUERADE")],
        evidence=[h.evidence(r, "iptables -t nat -S POSTROUTING", f"--to-source {wrong}")],
        elements=[f"{NAT_POST}@{r}"],
    )  # fmt: skip


def dnat_wrong_target(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    edge = _edge(spec, taken, NAT_PRE)
    if edge is None:
        return None
    server = spec.host(edge.dnat_device)
    lan = spec.lan(server.lan)
    wrong = rng.choice(
        [h.unused_address(lan.subnet, h.lan_addresses(spec, lan), rng)]
        + [h.addr(spec.host(x).address) for x in h.host_lans(spec)[0].hosts]
    )
    r = edge.router
    rule = f"-i {edge.intf} -p tcp --dport 7 -j DNAT --to-destination"
    return h.fault(
        "dataplane.dnat_wrong_target", r, NAT_PRE, placement="edge",
        summary=f"the edge {r} forwards TCP 7 from the internet to {wrong}, not to "
        f"{edge.dnat_device} ({edge.dnat_address})",
        inject=[h.argv(r, f"iptables -t nat -R PREROUTING 1 {rule} {wrong}:7")],
        fix=[(r, f"iptables -t nat -R PREROUTING 1 {rule} {edge.dnat_address}:7")],
        evidence=[h.evidence(r, "iptables -t nat -S PREROUTING", f"--to-destination {wrong}:7")],
        elements=[f"{NAT_PRE}@{r}"],
    )  # fmt: skip


def acl_shadowing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    """A deny of everything from the internet inserted above the rules admitting replies
    and the forwarded port: the intended final deny now shadows them."""
    edge = _edge(spec, taken, FWD)
    if edge is None:
        return None
    r, deny = edge.router, f"-i {edge.intf} -j DROP"
    admit = f"-A FORWARD -i {edge.intf} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
    return h.fault(
        "dataplane.acl_shadowing", r, FWD, placement="edge",
        summary=f"the edge {r} drops everything arriving from the internet before the rules "
        "admitting replies and the forwarded port",
        inject=[h.argv(r, f"iptables -I FORWARD 1 {deny}")],
        fix=[(r, f"iptables -D FORWARD {deny}")],
        evidence=[h.Evidence(r, "iptables -S FORWARD", re.escape(f"-A FORWARD {deny}\n{admit}"))],
        elements=[f"{FWD}@{r}"],
    )  # fmt: skip


def _kind(name: str, draw, meaning: str, component: str) -> None:
    define("dataplane", name, meaning, component, draw, topologies=h.OSPF_ONLY, checks={"works"})


_kind(
    "nat_masquerade_missing",
    masquerade_missing,
    "the internet edge does not masquerade the lab's traffic",
    NAT_POST,
)
_kind(
    "nat_wrong_source",
    wrong_source,
    "the internet edge rewrites sources to an address the internet cannot answer",
    NAT_POST,
)
_kind(
    "dnat_wrong_target",
    dnat_wrong_target,
    "the internet edge forwards its published port to the wrong inside address",
    NAT_PRE,
)
_kind("acl_shadowing", acl_shadowing, "a deny rule placed above the permits it shadows", FWD)
