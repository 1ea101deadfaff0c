"""Ports of a Builder's routers, links, LANs and VLANs: named, addressed and described.

`Wiring(builder, index)` applies the naming and addressing plans (spec.py) in one pass: a
router's LAN ports first (eth0, ...), then its links in link order; campus access
switches get their trunks to both distribution routers (one member per VLAN), host ports,
VLAN bridges and SVIs. Every port gets a description naming its other side.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from generators.netlab import addressing as ip
from generators.netlab import naming
from generators.netlab.spec import (
    Attachment,
    BenignSlot,
    Bridge,
    Host,
    Lan,
    Link,
    Port,
    Router,
    Service,
    Trunk,
    VrrpGroup,
)

if TYPE_CHECKING:
    from generators.netlab.builder import Builder


class Wiring:
    """Ports, names and addresses of a builder's routers, links, LANs and VLANs."""

    def __init__(self, b: Builder, index: dict[str, int]) -> None:
        self.b = b
        self.ports: list[Port] = []
        self.bridges: list[Bridge] = []
        self.links: list[Link] = []
        self.trunks: list[Trunk] = []
        self.lans: list[Lan] = []
        self.hosts: list[Host] = []
        self.benign: list[BenignSlot] = []
        self.vrrp: tuple[VrrpGroup, ...] = ()
        self.spec_routers = [
            Router(r.name, r.role, index[r.name], ip.loopback(index[r.name]), r.daemons)
            for r in b._routers
        ]
        self._next_port = {r.name: 0 for r in b._routers}
        self._next_port.update({name: 0 for name, _ in b._switches})
        self._routed_lans()
        self._links()
        self._campus()

    def _port(self, device: str) -> str:
        k = self._next_port[device]
        self._next_port[device] = k + 1
        return naming.eth(device, k)

    def _routed_lans(self) -> None:
        for lan in self.b._lans:
            attach = []
            for n, router in enumerate(lan.routers):
                address = ip.in_lan(lan.subnet, ip.GATEWAY + n, prefix=True)
                intf = self._port(router)
                what = "servers" if lan.kind == "servers" else "LAN"
                self.ports.append(
                    Port(
                        router, intf, naming.lan_domain(lan.id), (address,), f"{what} {lan.subnet}"
                    )
                )
                attach.append(Attachment(router, intf, address))
            names = self._hosts(lan.id, lan.subnet, lan.hosts, attach[0].address, lan.kind)
            for name in names:
                self.ports.append(
                    Port(
                        name,
                        naming.eth(name, 0),
                        naming.lan_domain(lan.id),
                        (self._host(name).address,),
                        f"LAN {lan.subnet}",
                    )
                )
            self.lans.append(
                Lan(
                    lan.id,
                    lan.subnet,
                    attach[0].address.split("/")[0],
                    tuple(attach),
                    names,
                    lan.area,
                    kind=lan.kind,
                )
            )

    def _hosts(
        self, lan_id: int, subnet: str, count: int, gateway: str, kind: str
    ) -> tuple[str, ...]:
        gw = gateway.split("/")[0]
        names = []
        for j in range(1, count + 1):
            if kind == "servers":
                name = naming.server(j)
                address = ip.in_lan(subnet, ip.SERVER_HOST + j - 1, prefix=True)
            else:
                name, address = naming.host(lan_id, j), ip.host_address(subnet, j)
            role = "server" if kind == "servers" else "host"
            self.hosts.append(Host(name, lan_id, naming.eth(name, 0), address, gw, role))
            names.append(name)
        return tuple(names)

    def _host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    def _links(self) -> None:
        by = self.b._by_name
        for k, raw in enumerate(self.b._links, 1):
            index = {r.name: r.index for r in self.spec_routers}
            a, b = sorted((raw.a, raw.b), key=index.__getitem__)
            a_intf, b_intf = self._port(a), self._port(b)
            x = Link(k, a, a_intf, b, b_intf, ip.link_subnet(k), raw.cost, raw.area, raw.role)
            self.links.append(x)
            for me, intf, addr, peer, peer_intf in (
                (a, a_intf, x.a_addr, b, b_intf),
                (b, b_intf, x.b_addr, a, a_intf),
            ):
                alias = f"to {peer} {peer_intf}"
                if raw.role == "backup":
                    alias = f"BACKUP {alias}: cost {raw.cost} by design"
                elif raw.role == "spare":
                    alias = f"SPARE {alias}: keep down"
                elif raw.area is None and by[me].asn and by[peer].asn != by[me].asn:
                    alias += f" (eBGP AS {by[peer].asn})"
                if raw.note:
                    alias += f" {raw.note}"
                spare = raw.role == "spare"
                addresses = () if spare else (f"{addr}/30",)
                self.ports.append(
                    Port(
                        me,
                        intf,
                        naming.link_domain(k),
                        addresses,
                        alias,
                        up=not (spare and me == a),
                    )
                )
            if raw.role in ("backup", "spare"):
                kind = "backup_cost" if raw.role == "backup" else "spare_port"
                note = (
                    f"backup link to {b} {b_intf}, cost {raw.cost} on both ends by design"
                    if raw.role == "backup"
                    else f"spare link to {b} {b_intf}, keep down"
                )
                self.benign.append(BenignSlot(kind, a, a_intf, note, present=True))

    def _campus(self) -> None:
        """Access switches, their trunks to both distribution routers, VLAN bridges and SVIs."""
        vlans = self.b._vlans
        if not vlans:
            return
        trunk_no: dict[str, int] = {}
        members: dict[tuple[str, int], list[str]] = {}  # (device, vid) -> member interfaces
        member_domain = 0
        for sw, _ in self.b._switches:
            mine = [v for v in vlans if v.switch == sw]
            for router in dict.fromkeys(r for v in mine for r in v.routers):
                ends = []
                for dev in (sw, router):
                    trunk_no[dev] = trunk_no.get(dev, 0) + 1
                    ends.append(trunk_no[dev])
                tid = len(self.trunks) + 1
                pairs = []
                for v in mine:
                    if router not in v.routers:
                        continue
                    member_domain += 1
                    s_if = naming.trunk_member(sw, ends[0], v.vid)
                    r_if = naming.trunk_member(router, ends[1], v.vid)
                    dom = naming.trunk_domain(member_domain)
                    self.ports.append(Port(sw, s_if, dom, (), f"trunk to {router} VLAN {v.vid}"))
                    self.ports.append(Port(router, r_if, dom, (), f"trunk to {sw} VLAN {v.vid}"))
                    members.setdefault((sw, v.vid), []).append(s_if)
                    members.setdefault((router, v.vid), []).append(r_if)
                    pairs.append((v.vid, s_if, r_if))
                self.trunks.append(Trunk(tid, sw, router, tuple(pairs)))
        access = 0
        groups = []
        for v in vlans:
            subnet = ip.lan_subnet(v.block, v.vid)
            svis = [ip.in_lan(subnet, n, prefix=True) for n in (ip.SVI_A, ip.SVI_B)]
            gateway = svis[0].split("/")[0]
            names = self._hosts(v.vid, subnet, v.hosts, gateway, "hosts")
            ports = list(members[(v.switch, v.vid)])
            for name in names:
                access += 1
                sw_if = self._port(v.switch)
                dom = naming.access_domain(access)
                self.ports.append(Port(v.switch, sw_if, dom, (), f"access VLAN {v.vid} to {name}"))
                self.ports.append(
                    Port(
                        name,
                        naming.eth(name, 0),
                        dom,
                        (self._host(name).address,),
                        f"VLAN {v.vid} {subnet}",
                    )
                )
                ports.append(sw_if)
            bridge = naming.bridge(v.vid)
            self.bridges.append(Bridge(v.switch, bridge, v.vid, tuple(ports), (), f"VLAN {v.vid}"))
            attach = []
            for router, svi in zip(v.routers, svis, strict=True):
                self.bridges.append(
                    Bridge(
                        router,
                        bridge,
                        v.vid,
                        tuple(members[(router, v.vid)]),
                        (svi,),
                        f"SVI VLAN {v.vid} {subnet}",
                    )
                )
                attach.append(Attachment(router, bridge, svi))
            self.lans.append(
                Lan(
                    v.vid,
                    subnet,
                    gateway,
                    tuple(attach),
                    names,
                    v.area,
                    vlan=v.vid,
                    switch=v.switch,
                )
            )
            groups.append(VrrpGroup(v.vid, v.vid, ip.in_lan(subnet, ip.VIP), *v.routers))
        self.vrrp = tuple(groups)

    def resolve(self, slot: BenignSlot) -> BenignSlot:
        """A slot naming `link:<id>` names the link's interface on its device instead."""
        if not slot.component.startswith("link:"):
            return slot
        x = self.links[int(slot.component[5:]) - 1]
        return replace(slot, component=x.end(slot.device)[0])

    def services(self) -> tuple[Service, ...]:
        servers = [lan for lan in self.lans if lan.kind == "servers"]
        if not servers:
            return ()
        srv = self._host(servers[0].hosts[0])
        served = tuple(lan.id for lan in self.lans if lan.kind == "hosts")
        relays = tuple(lan.routers[0] for lan in self.lans if lan.kind == "hosts")
        address = srv.address.split("/")[0]
        return (
            Service("dns", srv.name, address, served),
            Service("dhcp", srv.name, address, served, relays),
        )
