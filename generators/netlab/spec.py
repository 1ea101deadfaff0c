"""`NetSpec`: what a generated network is and what it is meant to do, as frozen data.

A NetSpec is pure: `generators.netlab.build(family, size, variant)` makes the same one, byte
for byte, on every machine. It holds the wiring (routers, switches, hosts, every port with
its addresses and description, bridges, links, trunks, LANs), the protocol intent (OSPF
areas and the adjacency of every OSPF link, every BGP session with its options, the ECMP
width, path and ECMP intents), the services' placement and the benign-anomaly slots.
`to_json()`/`from_json()` round-trip it; `key` is a digest of that JSON.

Naming scheme (what agents see; every name fits emulators/base.py's regexes):
  routers     by role: r<i> (chain, ring, mesh); sp<i> spines and lf<i> leaves (leafspine);
              core<i>, and dist<b>a / dist<b>b the distribution pair of block b (campus);
              p<a>r<i> router i of provider a, ce<c> customer edge c (isp)
  switches    acc<i>: campus access switches, L2 only
  hosts       h<lan>_<j>: the j-th host of LAN <lan>; srv<i>: servers (LAN 250)
  interfaces  <device>-eth<k>: LAN ports first from eth0, then links in link order; on a
              switch, its host ports; trunk members <device>-t<k>v<vid> (the device's k-th
              trunk, VLAN vid); bridges v<vid> (one per VLAN per device); loopback `lo`
  domains     t<id> link id, l<id> LAN id, a<k> access port k, k<k> trunk member k
Addressing plan (generators/netlab/addressing.py):
  loopbacks   10.255.0.<n>/32 on lo, n = the router's index (router-id); 10.255.255.0/24
              is kept free (the sinkhole slot)
  links       172.16.0.0/16 in /30s by link id (4 x id), end `a` (the lower index) .1
  LANs        10.<site>.<n>.0/24: gateway .1 (campus: SVIs .2 and .3, VRRP VIP .254),
              hosts .11 up; the server LAN 10.<site>.250.0/24 with srv1 at .53
VLANs are emulated (this kernel has no 802.1Q and no bridge VLAN filtering): one bridge
v<vid> per VLAN per switch, one veth per VLAN per trunk; a VLAN lives on one access
switch, so every VLAN's bridges form a tree (no loops, no STP needed).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import types
import typing
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pipeline.api import ConfigError, canonical_json

SPEC_VERSION = 1  # bumped when a field changes meaning; part of every key
FAMILIES = ("chain", "ring", "mesh", "leafspine", "campus", "isp")
SIZES = {"small": (4, 6), "medium": (8, 12), "large": (14, 18), "xlarge": (20, 28)}
XLARGE_MIN_HOSTS = 48
VARIANTS = 4  # seeded variants per family and size in a tier's catalogue


@dataclass(frozen=True)
class Router:
    name: str
    role: str  # router, abr, border (chain/ring/mesh); spine, leaf; core, dist; rr, pe, asbr, ce
    index: int  # n: loopback 10.255.0.<n>, router-id
    loopback: str  # "10.255.0.3", on lo as a /32
    daemons: tuple[str, ...]  # FRR daemons it runs: zebra, then ospfd and/or bgpd
    asn: int | None = None  # its BGP AS; None when it runs no bgpd
    group: str = ""  # what it belongs to, as the inventory names it: "AS 65001", "block 2"
    bgp_networks: tuple[str, ...] = ()  # prefixes it announces with `network`
    redistribute: tuple[str, ...] = ()  # ospfd `redistribute` sources ("bgp")


@dataclass(frozen=True)
class Switch:
    name: str  # acc<i>
    block: int  # the campus distribution block it hangs off
    vlans: tuple[int, ...]  # its VLANs (one bridge v<vid> each)
    role: str = "access"


@dataclass(frozen=True)
class Host:
    name: str  # h<lan>_<j> or srv<i>
    lan: int  # the LAN id
    intf: str  # its only port, <name>-eth0
    address: str  # with prefix length, "10.1.3.11/24"
    gateway: str  # its default route's next hop
    role: str = "host"  # host | server


@dataclass(frozen=True)
class Port:
    """One interface of one device: the wiring, as `to_lab()` renders it."""

    device: str
    name: str
    domain: str  # the segment it is plugged into
    addresses: tuple[str, ...] = ()  # with prefix length
    alias: str = ""  # its description (`ip link set DEV alias ...`)
    up: bool = True  # admin state: a spare port is kept down


@dataclass(frozen=True)
class Bridge:
    """A bridge inside a device: a VLAN on a switch, or an SVI on a distribution router."""

    device: str
    name: str  # v<vid>
    vlan: int
    ports: tuple[str, ...]  # member interfaces of the same device
    addresses: tuple[str, ...] = ()  # the SVI's address, on a router
    alias: str = ""


@dataclass(frozen=True)
class Link:
    """A routed point-to-point link between two routers (a /30), or a spare one."""

    id: int  # domain t<id>, subnet by id
    a: str  # the lower-indexed router, .1
    a_intf: str
    b: str
    b_intf: str
    subnet: str  # "172.16.0.4/30"
    cost: int = 10  # OSPF cost on both ends
    area: str | None = "0.0.0.0"  # OSPF area; None: not in OSPF (eBGP links, spares)
    role: str = "primary"  # primary | backup (intended high cost) | spare (kept down)

    @property
    def a_addr(self) -> str:
        return _host_of(self.subnet, 1)

    @property
    def b_addr(self) -> str:
        return _host_of(self.subnet, 2)

    def end(self, device: str) -> tuple[str, str, str, str]:
        """(my interface, my address, peer, peer address) for one end."""
        if device == self.a:
            return self.a_intf, self.a_addr, self.b, self.b_addr
        if device == self.b:
            return self.b_intf, self.b_addr, self.a, self.a_addr
        raise KeyError(f"link {self.id} does not touch {device}")


@dataclass(frozen=True)
class Trunk:
    """An emulated 802.1Q trunk: one veth per VLAN between a switch and a router."""

    id: int
    switch: str
    router: str
    members: tuple[tuple[int, str, str], ...]  # (vid, switch interface, router interface)


@dataclass(frozen=True)
class Attachment:
    """Where a router sits on a LAN: its interface (or bridge) and address there."""

    router: str
    intf: str
    address: str  # with prefix length


@dataclass(frozen=True)
class Lan:
    id: int  # domain l<id>; hosts h<id>_<j>
    subnet: str
    gateway: str  # the address its hosts route through
    routers: tuple[Attachment, ...]
    hosts: tuple[str, ...]
    area: str | None = None  # the OSPF area it is in (passive); None: not in OSPF
    vlan: int | None = None  # campus: its VLAN (bridge v<vid>)
    switch: str | None = None  # campus: the access switch its hosts plug into
    kind: str = "hosts"  # hosts | servers


@dataclass(frozen=True)
class Area:
    id: str  # dotted, "0.0.0.1"
    kind: str = "normal"  # normal | stub | nssa


@dataclass(frozen=True)
class Adjacency:
    """An OSPF adjacency the intent requires: both ends Full."""

    link: int
    area: str
    a: str
    a_intf: str
    b: str
    b_intf: str


@dataclass(frozen=True)
class Session:
    """A BGP session the intent requires Established, with its per-peer options."""

    a: str
    a_addr: str  # the address a speaks from (b's neighbour address for it)
    a_asn: int
    b: str
    b_addr: str
    b_asn: int
    kind: str  # ebgp | ibgp
    link: int | None = None  # eBGP: the link it runs over; iBGP: None (loopbacks)
    rr_client: str | None = None  # iBGP: the end that is the other's route-reflector client
    next_hop_self: tuple[str, ...] = ()  # ends that set next-hop-self towards the other
    allowas_in: tuple[str, ...] = ()  # ends that accept their own AS once in paths from it

    def peer_of(self, device: str) -> tuple[str, str, int]:
        """(peer, peer address, peer AS) as `device` configures it."""
        if device == self.a:
            return self.b, self.b_addr, self.b_asn
        if device == self.b:
            return self.a, self.a_addr, self.a_asn
        raise KeyError(f"session {self.a}-{self.b} does not touch {device}")


@dataclass(frozen=True)
class PathIntent:
    """Traffic from `source` to `target` crosses these routers and links while they are up."""

    source: str  # host
    target: str  # host
    routers: tuple[str, ...]
    links: tuple[int, ...]


@dataclass(frozen=True)
class EcmpIntent:
    """`router` spreads traffic to `prefix` over these next-hop interfaces."""

    router: str
    prefix: str
    via: tuple[str, ...]


@dataclass(frozen=True)
class Service:
    """Where a service runs (its daemon is started by the app that needs it, not here)."""

    kind: str  # dns | dhcp
    device: str
    address: str
    lans: tuple[int, ...]  # the LANs it serves
    relays: tuple[Attachment, ...] = ()  # DHCP: the gateways that would relay to it


@dataclass(frozen=True)
class VrrpGroup:
    """A VRRP group a campus VLAN may run (not started here): VIP .254 on its LAN."""

    vrid: int
    lan: int
    vip: str
    master: str
    backup: str


@dataclass(frozen=True)
class BenignSlot:
    """A place for a benign anomaly: intended state that looks like a fault.

    `present`: part of every build of this lab (a backup link's cost, a spare port kept
    down); otherwise a place where a query may add it as intended (a sinkhole route, an ACL
    denying telnet, a decommissioned BGP neighbour, a clamped MTU)."""

    kind: str  # backup_cost | spare_port | sinkhole | acl_telnet | bgp_decommissioned | mtu_clamp
    device: str
    component: str  # interface, prefix, peer address: what an answer would name
    note: str  # the description the device and the prompt carry
    present: bool = False


@dataclass(frozen=True)
class NetSpec:
    family: str
    size: str
    variant: int
    name: str  # the lab's name: <family>-<size>-<variant>[-n<routers>]
    routers: tuple[Router, ...]
    switches: tuple[Switch, ...]
    hosts: tuple[Host, ...]
    ports: tuple[Port, ...]
    bridges: tuple[Bridge, ...]
    links: tuple[Link, ...]
    trunks: tuple[Trunk, ...]
    lans: tuple[Lan, ...]
    areas: tuple[Area, ...]
    sessions: tuple[Session, ...]
    ecmp_width: int  # `maximum-paths` in ospfd and bgpd
    paths: tuple[PathIntent, ...]
    ecmp: tuple[EcmpIntent, ...]
    services: tuple[Service, ...]
    vrrp: tuple[VrrpGroup, ...]
    benign: tuple[BenignSlot, ...]
    version: int = SPEC_VERSION

    # -- lookups -----------------------------------------------------------------------
    def router(self, name: str) -> Router:
        return self._routers[name]

    def host(self, name: str) -> Host:
        return self._hosts[name]

    def lan(self, lan_id: int) -> Lan:
        return self._lans[lan_id]

    def link(self, link_id: int) -> Link:
        return self._links[link_id]

    def ports_of(self, device: str) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.device == device)

    def bridges_of(self, device: str) -> tuple[Bridge, ...]:
        return tuple(b for b in self.bridges if b.device == device)

    def links_of(self, device: str) -> tuple[Link, ...]:
        return tuple(x for x in self.links if device in (x.a, x.b))

    def sessions_of(self, device: str) -> tuple[Session, ...]:
        return tuple(s for s in self.sessions if device in (s.a, s.b))

    @property
    def devices(self) -> tuple[str, ...]:
        """Every device an agent may log into: routers, switches, hosts."""
        return (
            *(r.name for r in self.routers),
            *(s.name for s in self.switches),
            *(h.name for h in self.hosts),
        )

    @property
    def adjacencies(self) -> tuple[Adjacency, ...]:
        """Every OSPF link's adjacency (a spare link is in no protocol)."""
        return tuple(
            Adjacency(x.id, x.area, x.a, x.a_intf, x.b, x.b_intf)
            for x in self.links
            if x.area is not None and x.role != "spare"
        )

    @property
    def bgp(self) -> bool:
        return bool(self.sessions)

    @property
    def ospf(self) -> bool:
        return any("ospfd" in r.daemons for r in self.routers)

    @cached_property
    def _routers(self) -> dict[str, Router]:
        return {r.name: r for r in self.routers}

    @cached_property
    def _hosts(self) -> dict[str, Host]:
        return {h.name: h for h in self.hosts}

    @cached_property
    def _lans(self) -> dict[int, Lan]:
        return {lan.id: lan for lan in self.lans}

    @cached_property
    def _links(self) -> dict[int, Link]:
        return {x.id: x for x in self.links}

    # -- serialisation -----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NetSpec:
        """The NetSpec `to_json` gave; ConfigError naming the field when `data` is not one."""
        if data.get("version") != SPEC_VERSION:
            raise ConfigError(
                f"NetSpec version {data.get('version')!r}: this code reads {SPEC_VERSION}"
            )
        return _load(cls, data, "NetSpec")

    @cached_property
    def key(self) -> str:
        """16 hex digits of the spec's canonical JSON: equal specs, equal keys."""
        return hashlib.sha256(canonical_json(self.to_json()).encode()).hexdigest()[:16]

    def to_lab(self):  # -> emulators.base.Lab (imported there: the spec stays data)
        from generators.netlab.render import to_lab

        return to_lab(self)


def _host_of(subnet: str, offset: int) -> str:
    base, _, _ = subnet.partition("/")
    a, b, c, d = (int(x) for x in base.split("."))
    value = (a << 24 | b << 16 | c << 8 | d) + offset
    return ".".join(str(value >> s & 255) for s in (24, 16, 8, 0))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in typing.get_type_hints(cls).items() if k in names}


def _load(tp: Any, value: Any, where: str) -> Any:
    """`value` (from JSON) as type `tp`: dataclasses by field, tuples from lists."""
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected an object, got {type(value).__name__}")
        hints = _hints(tp)
        unknown = sorted(set(value) - set(hints))
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {unknown}")
        return tp(**{k: _load(hints[k], v, f"{where}.{k}") for k, v in value.items()})
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where}: expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_load(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise ConfigError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(
            _load(t, v, f"{where}[{i}]") for i, (t, v) in enumerate(zip(args, value, strict=True))
        )
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _load(next(a for a in args if a is not type(None)), value, where)
    if tp in (int, str, bool) and type(value) is not tp:
        raise ConfigError(f"{where}: expected {tp.__name__}, got {value!r}")
    return value
