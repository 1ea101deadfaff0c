"""What an incidents lab adds to its NetSpec, as pure data (generators/incidents/lab.py
builds it; the fault kinds draw on it): the internet edge, DNS names, VRRP gateways.

The edge (OSPF-only labs): a stub device `inet` (198.51.100.2/30, the "internet" address
203.0.113.1 on its loopback, no route back into the lab) on a new uplink `<edge>-eth<k>`
(domain x1) of the edge router, the first router all of whose links are in area 0. The
edge masquerades what leaves through the uplink, forwards TCP port 7 of its outside
address to srv1 (DNAT), and admits from the internet only replies and that forwarded
port (its FORWARD chain: EDGE_FILTER).
"""

from __future__ import annotations

from dataclasses import dataclass

from generators.netlab.spec import NetSpec

INET = "inet"
EDGE_SUBNET = "198.51.100.0/30"
EDGE_ADDR = "198.51.100.1"
INET_ADDR = "198.51.100.2"
INTERNET = "203.0.113.0/24"
INET_HOST = "203.0.113.1"
EDGE_DOMAIN = "x1"
MASTER_PRIORITY, BACKUP_PRIORITY = 150, 100


@dataclass(frozen=True)
class Edge:
    router: str
    intf: str  # the router's uplink to inet
    dnat_device: str  # the server its outside TCP 7 is forwarded to
    dnat_address: str


def dns_name(host: str) -> str:
    return f"{host.replace('_', '-')}.lab"


def edge_of(spec: NetSpec) -> Edge | None:
    """The lab's internet edge, or None (labs running BGP keep their own edges)."""
    if not spec.ospf or spec.bgp:
        return None
    router = next(
        (r.name for r in spec.routers
         if all(x.area in ("0.0.0.0", None) for x in spec.links_of(r.name))),
        None,
    )  # fmt: skip
    if router is None:
        return None
    numbers = [int(p.name.rsplit("-eth", 1)[1]) for p in spec.ports_of(router) if "-eth" in p.name]
    server = next(h for h in spec.hosts if h.role == "server")
    return Edge(
        router, f"{router}-eth{max(numbers) + 1}", server.name, server.address.split("/")[0]
    )


def area_kind(spec: NetSpec, area: str | None) -> str:
    return next((a.kind for a in spec.areas if a.id == area), "normal")


def internet_hosts(spec: NetSpec) -> tuple[str, ...]:
    """Hosts that reach the internet through the edge (not in an NSSA)."""
    return tuple(h.name for h in spec.hosts if area_kind(spec, spec.lan(h.lan).area) != "nssa")


def vrrp_gateways(spec: NetSpec) -> dict[str, str]:
    """host -> the VIP it routes through (campus VLANs)."""
    vips = {g.lan: g.vip for g in spec.vrrp}
    return {h.name: vips[h.lan] for h in spec.hosts if h.lan in vips}


def edge_rules(edge: Edge) -> tuple[tuple[str, ...], ...]:
    """The edge's intended NAT and filter rules, as iptables argv (in order)."""
    up = edge.intf
    return (
        ("iptables", "-t", "nat", "-A", "POSTROUTING", "-o", up, "-j", "MASQUERADE"),
        ("iptables", "-t", "nat", "-A", "PREROUTING", "-i", up, "-p", "tcp", "--dport", "7",
         "-j", "DNAT", "--to-destination", f"{edge.dnat_address}:7"),
        ("iptables", "-A", "FORWARD", "-i", up, "-m", "conntrack", "--ctstate",
         "RELATED,ESTABLISHED", "-j", "ACCEPT"),
        ("iptables", "-A", "FORWARD", "-i", up, "-m", "conntrack", "--ctstate", "DNAT",
         "-j", "ACCEPT"),
        ("iptables", "-A", "FORWARD", "-i", up, "-j", "DROP"),
    )  # fmt: skip


def host_gateway(spec: NetSpec, lan_id: int) -> str:
    """The address a LAN's hosts route through in an incidents lab (with its services):
    the VRRP VIP where the LAN runs a group, else the LAN's gateway."""
    vip = next((g.vip for g in spec.vrrp if g.lan == lan_id), None)
    return vip or spec.lan(lan_id).gateway


def gateway_port(spec: NetSpec, lan_id: int) -> tuple[str, str, str]:
    """(router, interface, address) of the router port holding a LAN's gateway address
    (campus: the VRRP master's SVI; its `.2`, where the VIP `.254` also lives)."""
    lan = spec.lan(lan_id)
    for attach in lan.routers:
        if attach.address.split("/")[0] == lan.gateway:
            return attach.router, attach.intf, lan.gateway
    attach = lan.routers[0]
    return attach.router, attach.intf, attach.address.split("/")[0]


def dhcp_range(subnet: str) -> tuple[str, str]:
    """The addresses a LAN's DHCP pool hands out: .100 to .199."""
    base = subnet.split("/")[0].rsplit(".", 1)[0]
    return f"{base}.100", f"{base}.199"
