"""`Builder`: what a family function fills in (routers, links, LANs, VLANs, sessions), and
`finish()`, which names every port, addresses it, describes it (wiring.py), derives the
intents (intents.py) and freezes a NetSpec.

Families (families.py, campus.py, isp.py) decide shape, roles and protocol options; the
builder and its wiring own the naming and addressing plans, so every family follows them
identically.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from generators.netlab import addressing as ip
from generators.netlab import intents
from generators.netlab.spec import (
    XLARGE_MIN_HOSTS,
    Area,
    BenignSlot,
    NetSpec,
    Router,
    Session,
    Switch,
)
from generators.netlab.wiring import Wiring

BACKUP_COST = 1000


@dataclass
class _Router:
    name: str
    role: str
    asn: int | None
    group: str
    daemons: tuple[str, ...]
    bgp_networks: list[str] = field(default_factory=list)
    redistribute: tuple[str, ...] = ()


@dataclass
class _Link:
    a: str
    b: str
    cost: int
    area: str | None
    role: str
    note: str


@dataclass
class _Lan:
    id: int
    subnet: str
    routers: list[str]  # routed LANs: the routers' ports, gateway on the first (.1)
    hosts: int
    area: str | None
    kind: str


@dataclass
class _Vlan:
    vid: int
    block: int
    switch: str
    routers: tuple[str, str]  # (dist a: SVI .2, the hosts' gateway; dist b: SVI .3)
    hosts: int
    area: str


class Builder:
    def __init__(self, family: str, size: str, variant: int, name: str) -> None:
        self.family, self.size, self.variant, self.name = family, size, variant, name
        self._routers: list[_Router] = []
        self._switches: list[tuple[str, int]] = []
        self._links: list[_Link] = []
        self._lans: list[_Lan] = []
        self._vlans: list[_Vlan] = []
        self._ibgp: list[tuple[str, str]] = []  # (route reflector, client)
        self._nhs: set[tuple[str, str]] = set()  # (router, peer): next-hop-self towards peer
        self._allowas: set[tuple[str, str]] = set()  # (router, peer): allowas-in from peer
        self.areas: dict[str, str] = {"0.0.0.0": "normal"}
        self.ecmp_width = 4
        self.benign: list[BenignSlot] = []
        self.server_router: str | None = None
        self.server_site = 0

    # -- what families add ---------------------------------------------------------------
    def router(
        self,
        name: str,
        role: str,
        *,
        asn: int | None = None,
        group: str = "",
        ospf: bool = True,
    ) -> str:
        daemons = ("zebra", *(("ospfd",) if ospf else ()), *(("bgpd",) if asn else ()))
        self._routers.append(_Router(name, role, asn, group, daemons))
        return name

    def switch(self, name: str, block: int) -> str:
        self._switches.append((name, block))
        return name

    def link(
        self,
        a: str,
        b: str,
        *,
        cost: int = 10,
        area: str | None = "0.0.0.0",
        role: str = "primary",
        note: str = "",
    ) -> int:
        """A /30 between two routers; returns its id (1-based, in order of addition)."""
        self._links.append(_Link(a, b, BACKUP_COST if role == "backup" else cost, area, role, note))
        return len(self._links)

    def lan(
        self,
        lan_id: int,
        subnet: str,
        routers: list[str],
        hosts: int,
        *,
        area: str | None = "0.0.0.0",
        kind: str = "hosts",
    ) -> int:
        self._lans.append(_Lan(lan_id, subnet, routers, hosts, area, kind))
        return lan_id

    def vlan(
        self, vid: int, block: int, switch: str, routers: tuple[str, str], hosts: int, area: str
    ) -> None:
        self._vlans.append(_Vlan(vid, block, switch, routers, hosts, area))

    def ibgp(self, rr: str, client: str) -> None:
        self._ibgp.append((rr, client))

    def next_hop_self(self, router: str, peer: str) -> None:
        self._nhs.add((router, peer))

    def allowas_in(self, router: str, peer: str) -> None:
        self._allowas.add((router, peer))

    def announce(self, router: str, prefix: str) -> None:
        self._by_name[router].bgp_networks.append(prefix)

    def redistribute(self, router: str, *sources: str) -> None:
        self._by_name[router].redistribute = tuple(sources)

    def servers(self, router: str, site: int) -> None:
        """A server LAN (id 250, 10.<site>.250.0/24) on `router`, srv1 at .53: the DNS and
        DHCP services' place."""
        self.server_router, self.server_site = router, site

    @property
    def _by_name(self) -> dict[str, _Router]:
        return {r.name: r for r in self._routers}

    # -- freezing ------------------------------------------------------------------------
    def finish(self) -> NetSpec:
        index = {r.name: n for n, r in enumerate(self._routers, 1)}
        if self.server_router is not None:
            subnet = ip.lan_subnet(self.server_site, ip.SERVER_LAN)
            self.lan(
                ip.SERVER_LAN,
                subnet,
                [self.server_router],
                1,
                area=self._home_area(self.server_router),
                kind="servers",
            )
        wiring = Wiring(self, index)
        routers = tuple(
            Router(
                r.name,
                r.role,
                index[r.name],
                ip.loopback(index[r.name]),
                r.daemons,
                r.asn,
                r.group,
                tuple(r.bgp_networks),
                r.redistribute,
            )
            for r in self._routers
        )
        switches = tuple(
            Switch(name, block, tuple(v.vid for v in self._vlans if v.switch == name))
            for name, block in self._switches
        )
        spec = NetSpec(
            family=self.family,
            size=self.size,
            variant=self.variant,
            name=self.name,
            routers=routers,
            switches=switches,
            hosts=tuple(wiring.hosts),
            ports=tuple(wiring.ports),
            bridges=tuple(wiring.bridges),
            links=tuple(wiring.links),
            trunks=tuple(wiring.trunks),
            lans=tuple(wiring.lans),
            areas=tuple(Area(a, k) for a, k in sorted(self.areas.items(), key=_area_order)),
            sessions=self._sessions(wiring),
            ecmp_width=self.ecmp_width,
            paths=(),
            ecmp=(),
            services=wiring.services(),
            vrrp=wiring.vrrp,
            benign=(*wiring.benign, *map(wiring.resolve, self.benign)),
        )
        paths, ecmp = intents.derive(spec)
        return replace(spec, paths=paths, ecmp=ecmp)

    def _home_area(self, router: str) -> str | None:
        for lan in self._lans:
            if router in lan.routers:
                return lan.area
        areas = [x.area for x in self._links if router in (x.a, x.b) and x.area is not None]
        return min(areas, default=None)

    def _sessions(self, wiring: Wiring) -> tuple[Session, ...]:
        by = self._by_name
        loop = {r.name: r.loopback for r in wiring.spec_routers}
        out = []
        for x in wiring.links:
            asn_a, asn_b = by[x.a].asn, by[x.b].asn
            if x.area is None and x.role != "spare" and asn_a and asn_b and asn_a != asn_b:
                out.append(
                    self._session(x.a, x.a_addr, asn_a, x.b, x.b_addr, asn_b, "ebgp", x.id, None)
                )
        for rr, client in self._ibgp:
            asn = by[rr].asn
            assert asn is not None and by[client].asn == asn, (rr, client)
            out.append(
                self._session(rr, loop[rr], asn, client, loop[client], asn, "ibgp", None, client)
            )
        return tuple(out)

    def _session(
        self,
        a: str,
        a_addr: str,
        a_asn: int,
        b: str,
        b_addr: str,
        b_asn: int,
        kind: str,
        link: int | None,
        client: str | None,
    ) -> Session:
        nhs = tuple(r for r, p in ((a, b), (b, a)) if (r, p) in self._nhs)
        allow = tuple(r for r, p in ((a, b), (b, a)) if (r, p) in self._allowas)
        return Session(a, a_addr, a_asn, b, b_addr, b_asn, kind, link, client, nhs, allow)


def _area_order(item: tuple[str, str]) -> tuple[int, ...]:
    return tuple(int(x) for x in item[0].split("."))


def host_counts(rng: random.Random, size: str, lans: int, low: int = 1, high: int = 3) -> list[int]:
    """Hosts per LAN for a lab of `size`: an xlarge lab gets at least 48 in all."""
    return spread(rng, lans, low, high, XLARGE_MIN_HOSTS if size == "xlarge" else 0)


def spread(rng: random.Random, lans: int, low: int, high: int, at_least: int = 0) -> list[int]:
    """Hosts per LAN, each in low..high, seeded; then raised one at a time (seeded order)
    until they sum to `at_least` (an xlarge lab's 48), as far as `high` allows."""
    counts = [rng.randint(low, high) for _ in range(lans)]
    order = list(range(lans))
    rng.shuffle(order)
    while sum(counts) < at_least and any(c < high for c in counts):
        for i in order:
            if counts[i] < high and sum(counts) < at_least:
                counts[i] += 1
    return counts
