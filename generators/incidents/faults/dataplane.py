"""Data-plane kinds: filters, routes, neighbours, addresses, sysctls and links of the kernel.

Every kind is placed where it cuts traffic for certain, whatever flow hashing and ECMP do:
on the gateway a LAN's hosts send through (their traffic leaves there, whichever path it
takes after), on a host, or (static routes) where the lab's single shortest paths make a
loop. Fixes are the agent's own commands; each restores the state the lab was built in
(the same rule, route, address or setting). The internet edge's kinds (NAT, the edge
filter) are in dataplane_edge.py.
"""

from __future__ import annotations

import random

from generators.incidents.edge import host_gateway
from generators.incidents.faults import dphelp as h
from generators.incidents.faults.kinds import Fault, Taken, define
from generators.netlab.intents import first_hops
from generators.netlab.spec import NetSpec

FWD = "iptables:filter:FORWARD"


def _lan_pair(rng: random.Random, spec: NetSpec, taken: Taken):
    lans = h.host_lans(spec)
    src = rng.choice(lans) if lans else None
    if src is None:
        return None
    others = [lan for lan in spec.lans if lan.id != src.id]
    if not others:
        return None
    router, _, _ = h.gateway(spec, src)
    if not taken.free(f"{FWD}@{router}"):
        return None
    return src, rng.choice(others), router


def forward_drop(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    pair = _lan_pair(rng, spec, taken)
    if pair is None:
        return None
    src, dst, r = pair
    rule = f"-s {src.subnet} -d {dst.subnet} -j DROP"
    return h.fault(
        "dataplane.forward_drop", r, FWD, placement="gateway",
        summary=f"{r} drops everything forwarded from {src.subnet} to {dst.subnet}",
        inject=[h.argv(r, f"iptables -I FORWARD {rule}")],
        fix=[(r, f"iptables -D FORWARD {rule}")],
        evidence=[h.evidence(r, "iptables -S FORWARD", f"-A FORWARD {rule}", line=True)],
        elements=[f"{FWD}@{r}", f"lan:{src.id}"],
    )  # fmt: skip


def icmp_blocked(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    pair = _lan_pair(rng, spec, taken)
    if pair is None:
        return None
    src, _, r = pair
    rule = f"-s {src.subnet} -p icmp -j DROP"
    return h.fault(
        "dataplane.icmp_blocked", r, FWD, placement="gateway",
        summary=f"{r} drops all ICMP forwarded from {src.subnet} (pings fail, TCP/UDP work)",
        inject=[h.argv(r, f"iptables -I FORWARD {rule}")],
        fix=[(r, f"iptables -D FORWARD {rule}")],
        evidence=[h.evidence(r, "iptables -S FORWARD", f"-A FORWARD {rule}", line=True)],
        elements=[f"{FWD}@{r}", f"lan:{src.id}"],
    )  # fmt: skip


def policy_route_blackhole(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    lans = h.host_lans(spec)
    if not lans:
        return None
    lan = rng.choice(lans)
    r, _, _ = h.gateway(spec, lan)
    table, pref = rng.randint(100, 199), rng.randint(1000, 1999)
    hop = h.unused_address(lan.subnet, h.lan_addresses(spec, lan), rng)
    if not taken.free(f"rules@{r}"):
        return None
    return h.fault(
        "dataplane.policy_route_blackhole", r, f"rule:{pref}", placement="gateway",
        summary=f"{r}: traffic from {lan.subnet} looks up table {table}, whose default "
        f"route points at {hop}, an address nobody holds",
        inject=[h.argv(r, f"ip route add default via {hop} table {table}"),
                h.argv(r, f"ip rule add from {lan.subnet} lookup {table} pref {pref}")],
        fix=[(r, f"ip rule del pref {pref}"), (r, f"ip route del default table {table}")],
        evidence=[h.evidence(r, "ip rule show", f"{pref}:\tfrom {lan.subnet} lookup {table}"),
                  h.evidence(r, f"ip route show table {table}", f"default via {hop}")],
        elements=[f"rules@{r}", f"lan:{lan.id}"],
    )  # fmt: skip


def static_route_shadow(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    """A kernel route on R for a LAN via a neighbour N whose only shortest path to that LAN
    runs back through R: the packets loop between them until their TTL ends."""
    if not h.single_area(spec):
        return None
    places = []
    tables = {r.name: first_hops(spec, r.name) for r in spec.routers}
    for lan in spec.lans:
        owner, _, _ = h.gateway(spec, lan)
        for x in spec.links:
            if x.area is None or x.role == "spare":
                continue
            for r, n in ((x.a, x.b), (x.b, x.a)):
                hops = tables[n].get(owner, (0, frozenset()))[1]
                if r != owner and n != owner and hops == frozenset({(x.id, x.end(n)[0])}):
                    places.append((lan, r, x))
    if not places:
        return None
    lan, r, x = rng.choice(places)
    intf, _, n, n_addr = x.end(r)
    if not taken.free(f"route:{lan.subnet}@{r}"):
        return None
    return h.fault(
        "dataplane.static_route_shadow", r, f"route:{lan.subnet}", placement="transit",
        summary=f"{r} has a static route to {lan.subnet} via {n} ({n_addr}), which routes "
        f"that LAN back through {r}: a loop (the kernel route beats OSPF's)",
        inject=[h.argv(r, f"ip route add {lan.subnet} via {n_addr}")],
        fix=[(r, f"ip route del {lan.subnet} via {n_addr}")],
        evidence=[h.evidence(r, f"ip route show {lan.subnet}",
                             f"{lan.subnet} via {n_addr} dev {intf}", line=True)],
        elements=[f"route:{lan.subnet}@{r}", f"link:{x.id}"],
    )  # fmt: skip


def blackhole_route(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    pair = _lan_pair(rng, spec, Taken())
    if pair is None:
        return None
    src, dst, r = pair
    if r in {a.router for a in dst.routers} or not taken.free(f"route:{dst.subnet}@{r}"):
        return None
    return h.fault(
        "dataplane.blackhole_route", r, f"route:{dst.subnet}", placement="gateway",
        summary=f"{r} holds a blackhole route for {dst.subnet}, beating the protocol's route",
        inject=[h.argv(r, f"ip route add blackhole {dst.subnet}")],
        fix=[(r, f"ip route del blackhole {dst.subnet}")],
        evidence=[h.evidence(r, f"ip route show {dst.subnet}", f"blackhole {dst.subnet}",
                             line=True)],
        elements=[f"route:{dst.subnet}@{r}", f"lan:{src.id}"],
    )  # fmt: skip


def neigh_static_wrong(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    lans = h.host_lans(spec)
    if not lans:
        return None
    lan = rng.choice(lans)
    r, intf, _ = h.gateway(spec, lan)
    target = spec.host(rng.choice(lan.hosts))
    mac = "02:00:5e:" + ":".join(f"{rng.randrange(256):02x}" for _ in range(3))
    ip = h.addr(target.address)
    if not taken.free(f"neigh:{ip}@{r}"):
        return None
    return h.fault(
        "dataplane.neigh_static_wrong", r, f"neigh:{ip}", placement="gateway",
        summary=f"{r} has a permanent neighbour entry for {target.name} ({ip}) with a MAC "
        "no device holds",
        inject=[h.argv(r, f"ip neigh replace {ip} lladdr {mac} dev {intf} nud permanent")],
        fix=[(r, f"ip neigh del {ip} dev {intf}")],
        evidence=[h.evidence(r, f"ip neigh show dev {intf}", f"{ip} lladdr {mac} PERMANENT")],
        elements=[f"neigh:{ip}@{r}", f"host:{target.name}"],
    )  # fmt: skip


def host_netmask_wrong(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    """A host's address with a /16: every other LAN of that /16 seems on its link."""
    places = []
    for lan in h.host_lans(spec):
        wide = lan.subnet.split(".")[:2]
        if any(o.id != lan.id and o.subnet.split(".")[:2] == wide for o in spec.lans):
            places += [(lan, name) for name in lan.hosts]
    if not places:
        return None
    lan, name = rng.choice(places)
    host = spec.host(name)
    ip = h.addr(host.address)
    if not taken.free(f"host:{name}"):
        return None
    return h.fault(
        "dataplane.host_netmask_wrong", name, host.intf, placement="host",
        summary=f"{name} holds {ip}/16 instead of {ip}/24",
        inject=[h.argv(name, f"ip addr add {ip}/16 brd + dev {host.intf}"),
                h.argv(name, f"ip addr del {ip}/24 dev {host.intf}")],
        fix=[(name, f"ip addr add {ip}/24 brd + dev {host.intf}"),
             (name, f"ip addr del {ip}/16 dev {host.intf}")],
        evidence=[h.evidence(name, f"ip addr show dev {host.intf}", f"inet {ip}/16")],
        elements=[f"host:{name}"],
    )  # fmt: skip


def host_gateway_wrong(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    lans = h.host_lans(spec)
    if not lans:
        return None
    lan = rng.choice(lans)
    name = rng.choice(lan.hosts)
    wrong = h.unused_address(lan.subnet, h.lan_addresses(spec, lan), rng)
    right = host_gateway(spec, lan.id)
    if not taken.free(f"host:{name}"):
        return None
    return h.fault(
        "dataplane.host_gateway_wrong", name, "route:0.0.0.0/0", placement="host",
        summary=f"{name}'s default route points at {wrong}, not its gateway {right}",
        inject=[h.argv(name, f"ip route replace default via {wrong}")],
        fix=[(name, f"ip route replace default via {right}")],
        evidence=[h.evidence(name, "ip route show default", f"default via {wrong}")],
        elements=[f"host:{name}"],
    )  # fmt: skip


def ip_forward_disabled(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    lans = h.host_lans(spec)
    if not lans:
        return None
    r, _, _ = h.gateway(spec, rng.choice(lans))
    if not taken.free(f"sysctl:forward@{r}"):
        return None
    key = "net.ipv4.ip_forward"
    return h.fault(
        "dataplane.ip_forward_disabled", r, f"sysctl:{key}", placement="gateway",
        summary=f"{r} does not forward IPv4 ({key} = 0)",
        inject=[h.argv(r, f"sysctl -qw {key}=0")],
        fix=[(r, f"sysctl -w {key}=1")],
        evidence=[h.evidence(r, f"sysctl {key}", f"{key} = 0")],
        elements=[f"sysctl:forward@{r}", f"router:{r}"],
    )  # fmt: skip


def _lan_ports(spec: NetSpec) -> list[tuple[str, str, int]]:
    """(router, physical interface, LAN id) of every LAN's router port (not SVIs)."""
    return [
        (a.router, a.intf, lan.id)
        for lan in spec.lans
        for a in lan.routers
        if "-eth" in a.intf and len(lan.routers) == 1
    ]


def interface_down(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    ports = _lan_ports(spec)
    if not ports:
        return None
    r, intf, lan = rng.choice(ports)
    if not taken.free(f"intf:{r}:{intf}"):
        return None
    return h.fault(
        "dataplane.interface_down", r, intf, placement="lan",
        summary=f"{r}'s LAN port {intf} is administratively down",
        inject=[h.argv(r, f"ip link set {intf} down")],
        fix=[(r, f"ip link set {intf} up")],
        evidence=[h.Evidence(r, f"ip -br link show dev {intf}", rf"(?m)^{intf}(@\S+)?\s+DOWN")],
        elements=[f"intf:{r}:{intf}", f"lan:{lan}"],
    )  # fmt: skip


def mtu_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    """One end of a LAN segment (a host's port or its router's) at MTU 1400: frames above
    it are lost, ICMP 'fragmentation needed' where a router refuses: large packets fail."""
    places = [(r, intf, f"lan:{lan}") for r, intf, lan in _lan_ports(spec)]
    places += [(x.name, x.intf, f"host:{x.name}") for x in spec.hosts]
    device, intf, element = rng.choice(places)
    mtu = rng.choice((1280, 1400, 1450))
    if not taken.free(f"intf:{device}:{intf}"):
        return None
    return h.fault(
        "dataplane.mtu_mismatch", device, intf,
        placement="host" if element.startswith("host") else "lan",
        summary=f"{device} {intf} has MTU {mtu}; the rest of its segment 1500",
        inject=[h.argv(device, f"ip link set {intf} mtu {mtu}")],
        fix=[(device, f"ip link set {intf} mtu 1500")],
        evidence=[h.evidence(device, f"ip link show dev {intf}", f"mtu {mtu} ")],
        elements=[f"intf:{device}:{intf}", element],
    )  # fmt: skip


def _kind(name: str, draw, meaning: str, component: str, topologies=h.ALL, **kw) -> None:
    checks = kw.pop("checks", {"works"})
    define("dataplane", name, meaning, component, draw, topologies=topologies, checks=checks, **kw)


_kind(
    "forward_drop",
    forward_drop,
    "a router's FORWARD chain drops one LAN's traffic to another",
    "iptables:filter:FORWARD",
)
_kind(
    "icmp_blocked",
    icmp_blocked,
    "a router drops the ICMP one LAN sends (TCP and UDP pass)",
    "iptables:filter:FORWARD",
)
_kind(
    "policy_route_blackhole",
    policy_route_blackhole,
    "a policy rule sends one LAN's traffic to a table whose route leads nowhere",
    "rule:<priority>",
)
_kind(
    "static_route_shadow",
    static_route_shadow,
    "a static kernel route overrides the routing protocol's route with a wrong next hop",
    "route:<prefix>",
    topologies={"chain", "ring", "mesh"},
)
_kind(
    "blackhole_route",
    blackhole_route,
    "a blackhole route swallows traffic to a LAN",
    "route:<prefix>",
)
_kind(
    "neigh_static_wrong",
    neigh_static_wrong,
    "a permanent neighbour (ARP) entry holds the wrong MAC address",
    "neigh:<address>",
)
_kind(
    "host_netmask_wrong",
    host_netmask_wrong,
    "a host's address has the wrong prefix length",
    "the host's interface",
)
_kind(
    "host_gateway_wrong",
    host_gateway_wrong,
    "a host's default route points at the wrong address",
    "route:0.0.0.0/0",
)
_kind(
    "ip_forward_disabled",
    ip_forward_disabled,
    "a router does not forward IPv4",
    "sysctl:net.ipv4.ip_forward",
)
_kind(
    "interface_down",
    interface_down,
    "a router's LAN port is administratively down",
    "the interface",
)
_kind(
    "mtu_mismatch",
    mtu_mismatch,
    "one end of a segment has a smaller MTU than the rest",
    "the interface whose MTU differs",
)
