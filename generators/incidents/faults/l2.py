"""L2 / VLAN kinds (campus): ports, VLAN bridges and trunk members of emulated VLANs.

VLANs are emulated (no 802.1Q here): one bridge v<vid> per VLAN per device, one veth per
VLAN per trunk (generators/netlab/spec.py). A port is "in VLAN 10" when it is a member
of bridge v10; every port carries its intended VLAN in its description (`access VLAN 10
to h10_1`, `trunk to dist1a VLAN 10`), which `ip link show` and `bridge link show` print.
Trunk faults sit on the access switch's member towards the VLAN's VRRP master (the `a`
router): without VRRP its hosts lose their gateway; with it the master's advertisements
stop reaching the backup, which takes the VIP (the VRRP intent, the master holds it,
fails). Access-port and bridge faults cut hosts off either way.
"""

from __future__ import annotations

import random

from generators.incidents.faults import dphelp as h
from generators.incidents.faults.kinds import Fault, Taken, define
from generators.netlab.spec import Bridge, NetSpec

CAMPUS = frozenset({"campus"})


def _access_ports(spec: NetSpec) -> list[tuple[Bridge, str]]:
    """(switch bridge, host port) of every access port in a VLAN with hosts."""
    return [
        (b, p)
        for s in spec.switches
        for b in spec.bridges_of(s.name)
        for p in b.ports
        if "-eth" in p
    ]


def _master_members(spec: NetSpec) -> list[tuple[str, int, str, str]]:
    """(switch, vid, switch member, router) of every trunk member towards the router whose
    SVI is the VLAN's gateway."""
    gateways = {lan.vlan: h.gateway(spec, lan)[0] for lan in spec.lans if lan.vlan is not None}
    return [
        (t.switch, vid, member, t.router)
        for t in spec.trunks
        for vid, member, _ in t.members
        if gateways.get(vid) == t.router
    ]


def access_wrong_vlan(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = [(b, p) for b, p in _access_ports(spec) if len(spec.bridges_of(b.device)) > 1]
    if not places:
        return None
    bridge, port = rng.choice(places)
    other = rng.choice([b for b in spec.bridges_of(bridge.device) if b.name != bridge.name])
    sw = bridge.device
    if not taken.free(f"port:{sw}:{port}"):
        return None
    return h.fault(
        "l2.access_wrong_vlan", sw, port, placement="access",
        summary=f"{sw} access port {port} sits in VLAN {other.vlan}, not {bridge.vlan}",
        inject=[h.argv(sw, f"ip link set {port} master {other.name}")],
        fix=[(sw, f"ip link set {port} master {bridge.name}")],
        evidence=[h.evidence(sw, f"bridge link show dev {port}", f"master {other.name} ")],
        elements=[f"port:{sw}:{port}", f"vlan:{bridge.vlan}"],
    )  # fmt: skip


def access_port_down(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = _access_ports(spec)
    if not places:
        return None
    bridge, port = rng.choice(places)
    sw = bridge.device
    if not taken.free(f"port:{sw}:{port}"):
        return None
    return h.fault(
        "l2.access_port_down", sw, port, placement="access",
        summary=f"{sw} access port {port} (VLAN {bridge.vlan}) is administratively down",
        inject=[h.argv(sw, f"ip link set {port} down")],
        fix=[(sw, f"ip link set {port} up")],
        evidence=[h.Evidence(sw, f"ip -br link show dev {port}", rf"(?m)^{port}@?\S*\s+DOWN")],
        elements=[f"port:{sw}:{port}", f"vlan:{bridge.vlan}"],
    )  # fmt: skip


def vlan_bridge_down(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    bridges = [b for s in spec.switches for b in spec.bridges_of(s.name)]
    if not bridges:
        return None
    b = rng.choice(bridges)
    if not taken.free(f"vlan:{b.vlan}"):
        return None
    return h.fault(
        "l2.vlan_bridge_down", b.device, b.name, placement="switch",
        summary=f"{b.device}'s bridge {b.name} (VLAN {b.vlan}) is down: none of its ports forward",
        inject=[h.argv(b.device, f"ip link set {b.name} down")],
        fix=[(b.device, f"ip link set {b.name} up")],
        evidence=[h.Evidence(b.device, f"ip -br link show dev {b.name}", rf"(?m)^{b.name}\s+DOWN")],
        elements=[f"vlan:{b.vlan}", f"bridge:{b.device}:{b.name}"],
    )  # fmt: skip


def vlan_leak(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = [m for m in _master_members(spec) if len(spec.bridges_of(m[0])) > 1]
    if not places:
        return None
    sw, vid, member, router = rng.choice(places)
    other = rng.choice([b for b in spec.bridges_of(sw) if b.vlan != vid])
    if not taken.free(f"port:{sw}:{member}", f"vlan:{vid}"):
        return None
    return h.fault(
        "l2.vlan_leak", sw, member, placement="trunk",
        summary=f"{sw}'s trunk member {member} (VLAN {vid} to {router}) is bridged into VLAN "
        f"{other.vlan}: {router}'s VLAN {vid} SVI sits on VLAN {other.vlan}'s segment",
        inject=[h.argv(sw, f"ip link set {member} master {other.name}")],
        fix=[(sw, f"ip link set {member} master v{vid}")],
        evidence=[h.evidence(sw, f"bridge link show dev {member}", f"master {other.name} ")],
        elements=[f"port:{sw}:{member}", f"vlan:{vid}", f"vlan:{other.vlan}"],
    )  # fmt: skip


def trunk_vlan_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = _master_members(spec)
    if not places:
        return None
    sw, vid, member, router = rng.choice(places)
    if not taken.free(f"port:{sw}:{member}", f"vlan:{vid}"):
        return None
    return h.fault(
        "l2.trunk_vlan_missing", sw, member, placement="trunk",
        summary=f"{sw} no longer carries VLAN {vid} to {router}: member {member} is in no bridge",
        inject=[h.argv(sw, f"ip link set {member} nomaster")],
        fix=[(sw, f"ip link set {member} master v{vid}")],
        evidence=[h.Evidence(sw, f"ip link show dev {member}",
                             rf"{member}@\S+ <[^>]*> mtu \d+ qdisc \S+ state")],
        elements=[f"port:{sw}:{member}", f"vlan:{vid}"],
    )  # fmt: skip


def trunk_member_down(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    places = _master_members(spec)
    if not places:
        return None
    sw, vid, member, router = rng.choice(places)
    if not taken.free(f"port:{sw}:{member}", f"vlan:{vid}"):
        return None
    return h.fault(
        "l2.trunk_member_down", sw, member, placement="trunk",
        summary=f"{sw}'s trunk member {member} (VLAN {vid} to {router}) is administratively down",
        inject=[h.argv(sw, f"ip link set {member} down")],
        fix=[(sw, f"ip link set {member} up")],
        evidence=[h.Evidence(sw, f"ip -br link show dev {member}", rf"(?m)^{member}@?\S*\s+DOWN")],
        elements=[f"port:{sw}:{member}", f"vlan:{vid}"],
    )  # fmt: skip


def svi_down(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    lans = [lan for lan in spec.lans if lan.vlan is not None and lan.hosts]
    if not lans:
        return None
    lan = rng.choice(lans)
    r, intf, _ = h.gateway(spec, lan)
    if not taken.free(f"vlan:{lan.vlan}", f"svi:{r}:{intf}"):
        return None
    return h.fault(
        "l2.svi_down", r, intf, placement="svi",
        summary=f"{r}'s SVI {intf} (VLAN {lan.vlan}, the hosts' gateway) is down",
        inject=[h.argv(r, f"ip link set {intf} down")],
        fix=[(r, f"ip link set {intf} up")],
        evidence=[h.Evidence(r, f"ip -br link show dev {intf}", rf"(?m)^{intf}\s+DOWN")],
        elements=[f"vlan:{lan.vlan}", f"svi:{r}:{intf}"],
    )  # fmt: skip


def _kind(name: str, draw, meaning: str, component: str, checks=("works",), masks=()) -> None:
    define("l2", name, meaning, component, draw, topologies=CAMPUS, checks=checks, masks=masks)


_kind(
    "access_wrong_vlan",
    access_wrong_vlan,
    "a host's access port is in the wrong VLAN",
    "the access port",
    checks=("works", "closed"),
)
_kind(
    "access_port_down",
    access_port_down,
    "a host's access port is administratively down",
    "the access port",
    masks=("l2.access_wrong_vlan",),
)
_kind(
    "vlan_bridge_down",
    vlan_bridge_down,
    "a switch's VLAN bridge is down, so none of the VLAN's ports forward",
    "the bridge",
)
_kind(
    "vlan_leak",
    vlan_leak,
    "a trunk member carries one VLAN into another VLAN's bridge",
    "the trunk member",
    checks=("works", "closed", "intent"),
)
_kind(
    "trunk_vlan_missing",
    trunk_vlan_missing,
    "a trunk no longer carries a VLAN: its member is in no bridge",
    "the trunk member",
    checks=("works", "intent"),
)
_kind(
    "trunk_member_down",
    trunk_member_down,
    "a trunk's member for one VLAN is down",
    "the trunk member",
    checks=("works", "intent"),
)
_kind(
    "svi_down",
    svi_down,
    "a router's VLAN interface (SVI) is down",
    "the SVI",
    checks=("works", "intent"),
)
