"""The drawn network of a NetLLMBench query: devices, interfaces, switches, and the
addressing plan the tasks ask the agent to carry out.

The lab is built *unconfigured*: interfaces are up but carry no address, hosts have no
default route, routers forward (ip_forward=1) but know no static route. ICMP redirects
are off everywhere (see generators/routing/topology.py). What the tasks must establish —
each port's address, each host's gateway, each router's static routes — is the `plan`.

`draw_network(rng, size)` varies what NetLLMBench kept fixed: the naming schemes of
hosts, routers, switches and interfaces, the address family and prefix length, the
subnets, which host hangs off which switch, the router's address in each subnet
(first or last usable) and the hosts' addresses. Two routers (levels 3 and 4) are joined
by a transit switch on a /30, each with static routes to the other's LANs; three or more
(level 5) form a chain r1 - r2 - r3 ..., consecutive routers joined by a /30 on switch
`tr<i><i+1>` (`tr12`, `tr23`, ...), each router with a static route to every LAN it is
not on, via the next router towards it. Every router serves at least one LAN.

A `described` lab (levels 4 and 5, whose prompts name no interface) gives every
interface a description naming the switch it is plugged into (`ip link show` lists it as
`alias`), as operators label ports, so the agent can find which interface is where.

The lab's `name` (the environment key) covers only what the emulator builds — devices,
interface names, switches, descriptions — so queries that differ only in addresses share
a live lab.
"""

from __future__ import annotations

import hashlib
import ipaddress
import random
from dataclasses import dataclass
from typing import Any

from emulators.base import Device, Interface, Lab
from pipeline.api import canonical_json

HOST_NAMES = ("h{i}", "pc{i}", "host{i}", "srv{i}")
ROUTER_NAMES = ("r{i}", "router{i}", "gw{i}")
SWITCH_NAMES = ("s{i}", "sw{i}", "lan{i}")
INTERFACE_NAMES = ("eth{k}", "{device}-eth{k}", "ens{k3}")
TRANSIT = "transit"  # the switch between two routers
# Address families: the /16 each lab's subnets are cut from.
FAMILIES = ("192.168.0.0/16", "10.{a}.0.0/16", "172.{b}.0.0/16")
PREFIXES = (24, 24, 24, 25, 26, 27)  # most labs use /24, as NetLLMBench did
NO_REDIRECTS = ("send_redirects", "accept_redirects")


@dataclass(frozen=True)
class Size:
    """How big a drawn network is."""

    routers: int  # 1, 2, or more in a chain
    switches: int  # LAN switches (each with at least one host)
    hosts: int  # hosts in all


@dataclass(frozen=True)
class Port:
    """One interface of a device and the address it should get."""

    device: str
    interface: str
    switch: str
    address: str  # with prefix length, e.g. "192.168.1.10/24"

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]


@dataclass(frozen=True)
class Network:
    """A drawn lab and its addressing plan; see the module docstring."""

    routers: tuple[str, ...]
    hosts: tuple[str, ...]
    switches: tuple[str, ...]  # LAN switches, then the transit switch if any
    ports: tuple[Port, ...]  # routers' ports first (in router order), then the hosts'
    gateways: tuple[tuple[str, str], ...]  # (host, gateway address)
    routes: tuple[tuple[str, str, str], ...]  # (router, destination subnet, via)
    described: bool = False  # interfaces carry descriptions naming their switch

    # -- what the pool and the sandbox need (generators/lab/pool.py) -----------------------
    @property
    def name(self) -> str:
        shape = [(p.device, p.interface, p.switch) for p in self.ports]
        if self.described:
            shape.append(("described", "", ""))
        digest = hashlib.sha256(canonical_json([self.routers, shape]).encode()).hexdigest()
        kind = "d" * self.described
        return f"netllm-{len(self.routers)}r{len(self.hosts)}h{kind}-{digest[:10]}"

    @property
    def machines(self) -> tuple[str, ...]:
        return (*self.routers, *self.hosts)

    def lab(self) -> Lab:
        def quiet(device: str) -> tuple[tuple[str, str], ...]:
            scopes = ["all", "default", *(p.interface for p in self.ports_of(device))]
            return tuple((f"net.ipv4.conf.{s}.{key}", "0") for s in scopes for key in NO_REDIRECTS)

        devices = [
            Device(
                name,
                tuple(Interface(p.interface, p.switch) for p in self.ports_of(name)),
                sysctls=(("net.ipv4.ip_forward", "1"), *quiet(name))
                if name in self.routers
                else quiet(name),
                startup=self._descriptions(name),
                role="router" if name in self.routers else "host",
            )
            for name in self.machines
        ]
        return Lab(self.name, tuple(devices))

    def _descriptions(self, device: str) -> tuple[tuple[str, ...], ...]:
        if not self.described:
            return ()
        return tuple(
            ("ip", "link", "set", "dev", p.interface, "alias", p.switch)
            for p in self.ports_of(device)
        )

    # -- lookups -----------------------------------------------------------------------
    def ports_of(self, device: str) -> list[Port]:
        return [p for p in self.ports if p.device == device]

    def port(self, device: str) -> Port:
        """A host's only port."""
        (port,) = self.ports_of(device)
        return port

    def router_on(self, switch: str) -> Port:
        return next(p for p in self.ports if p.switch == switch and p.device in self.routers)

    def subnet(self, switch: str) -> str:
        return str(ipaddress.ip_interface(self.router_on(switch).address).network)

    def is_transit(self, switch: str) -> bool:
        """Whether only routers are plugged into `switch`."""
        return all(p.device in self.routers for p in self.ports if p.switch == switch)

    def transit_between(self, a: str, b: str) -> str | None:
        """The transit switch joining routers a and b, if they are neighbours."""
        mine = {p.switch for p in self.ports_of(a)}
        shared = [p.switch for p in self.ports_of(b) if p.switch in mine]
        return next((s for s in shared if self.is_transit(s)), None)

    def router_path(self, a: str, b: str) -> list[str]:
        """The routers from a to b along the chain (routers are chained in their order)."""
        i, j = self.routers.index(a), self.routers.index(b)
        if i <= j:
            return list(self.routers[i : j + 1])
        return list(reversed(self.routers[j : i + 1]))

    def describe(self, configured: bool = False) -> str:
        """The lab as the agent's prompt shows it: who is plugged into which switch, and
        each switch's subnet; `configured`: some tasks are done already (the prompt lists
        them), so the lab is not said to be bare."""
        lines = []
        for switch in self.switches:
            members = ", ".join(
                f"{p.device} ({p.interface})" for p in self.ports if p.switch == switch
            )
            lines.append(f"  switch {switch}: subnet {self.subnet(switch)}; {members}")
        routers = " and ".join(self.routers)
        return "\n".join(
            [
                f"The lab has {len(self.routers)} router{'s' * (len(self.routers) > 1)} "
                f"({routers}), {len(self.switches)} switches (Linux bridges) and "
                f"{len(self.hosts)} hosts ({', '.join(self.hosts)}). "
                + (
                    "Only what is listed below as done is configured."
                    if configured
                    else "No interface has an address yet and no host has a default route."
                ),
                *lines,
            ]
        )

    # -- storage in the query's ground truth -------------------------------------------
    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "routers": list(self.routers),
            "hosts": list(self.hosts),
            "switches": list(self.switches),
            "ports": [[p.device, p.interface, p.switch, p.address] for p in self.ports],
            "gateways": [list(g) for g in self.gateways],
            "routes": [list(r) for r in self.routes],
        }
        if self.described:  # absent otherwise: labs of levels 1-3 keep their bytes
            data["described"] = True
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Network:
        return cls(
            tuple(data["routers"]),
            tuple(data["hosts"]),
            tuple(data["switches"]),
            tuple(Port(*p) for p in data["ports"]),
            tuple((h, g) for h, g in data["gateways"]),
            tuple((r, s, v) for r, s, v in data["routes"]),
            bool(data.get("described", False)),
        )


def _subnets(rng: random.Random, count: int) -> list[ipaddress.IPv4Network]:
    family = rng.choice(FAMILIES).format(a=rng.randrange(256), b=rng.randrange(16, 32))
    base = ipaddress.ip_network(family)
    prefix = rng.choice(PREFIXES)
    size = 1 << (32 - prefix)
    picks = rng.sample(range(1 << (prefix - 16)), count)
    return [ipaddress.ip_network(f"{base.network_address + k * size}/{prefix}") for k in picks]


def _transit(rng: random.Random, taken: list[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    while True:
        net = ipaddress.ip_network(f"10.{rng.randrange(200, 256)}.{rng.randrange(256)}.0/30")
        net = ipaddress.ip_network(f"{net.network_address + 4 * rng.randrange(64)}/30")
        if not any(net.overlaps(other) for other in taken):
            return net


def transit_name(routers: int, k: int) -> str:
    """The switch joining router k and k + 1 (0-based) of a chain of `routers`."""
    return TRANSIT if routers == 2 else f"tr{k + 1}{k + 2}"


def _cuts(rng: random.Random, size: Size) -> list[int]:
    """Where the LANs (in order) are split between the routers: router i serves
    lans[cuts[i]:cuts[i + 1]]."""
    if size.routers == 1:
        return [0, size.switches]
    if size.routers == 2:  # as level 3 always drew it
        return [0, rng.randint(1, size.switches - 1), size.switches]
    return [0, *sorted(rng.sample(range(1, size.switches), size.routers - 1)), size.switches]


def draw_network(rng: random.Random, size: Size, described: bool = False) -> Network:
    """A seeded lab and addressing plan of `size`; see the module docstring."""
    if size.routers < 1 or size.switches < size.routers or size.hosts < size.switches:
        raise ValueError(f"cannot draw a lab of {size}")
    host_scheme, router_scheme = rng.choice(HOST_NAMES), rng.choice(ROUTER_NAMES)
    hosts = [host_scheme.format(i=i) for i in range(1, size.hosts + 1)]
    routers = [router_scheme.format(i=i) for i in range(1, size.routers + 1)]
    switch_scheme = rng.choice(SWITCH_NAMES)
    lans = [switch_scheme.format(i=i) for i in range(1, size.switches + 1)]
    intf_scheme = rng.choice(INTERFACE_NAMES)

    def intf(device: str, k: int) -> str:
        return intf_scheme.format(device=device, k=k, k3=k + 3)

    nets = _subnets(rng, size.switches)
    # Each switch gets one host, the rest go anywhere; each router serves a block of LANs.
    homes = [*lans, *(rng.choice(lans) for _ in range(size.hosts - size.switches))]
    rng.shuffle(homes)
    cuts = _cuts(rng, size)
    served = {r: lans[cuts[i] : cuts[i + 1]] for i, r in enumerate(routers)}
    first_addr = rng.random() < 0.5  # the router takes the first usable address, or the last
    ports: list[Port] = []
    gateways: dict[str, str] = {}
    for router, its_lans in served.items():
        for k, lan in enumerate(its_lans):
            net = nets[lans.index(lan)]
            usable = list(net.hosts())
            ip = usable[0] if first_addr else usable[-1]
            ports.append(Port(router, intf(router, k), lan, f"{ip}/{net.prefixlen}"))
    switches = list(lans)
    routes: list[tuple[str, str, str]] = []
    # ends[k]: the addresses of routers k and k + 1 on the transit between them
    ends: list[list[ipaddress.IPv4Address]] = []
    taken = list(nets)
    for k in range(size.routers - 1):
        transit = _transit(rng, taken)
        taken.append(transit)
        ends.append(list(transit.hosts()))
        switches.append(transit_name(size.routers, k))
        for router, end in zip(routers[k : k + 2], ends[k], strict=True):
            n = len(ports) - sum(p.device != router for p in ports)
            ports.append(Port(router, intf(router, n), switches[-1], f"{end}/{transit.prefixlen}"))
    for i, router in enumerate(routers):
        for j, other in enumerate(routers):
            if j == i:
                continue
            # the next router towards `other` and its address on the transit to it
            via = ends[i][1] if j > i else ends[i - 1][0]
            for lan in served[other]:
                routes.append((router, str(nets[lans.index(lan)]), str(via)))
    for host, lan in zip(hosts, homes, strict=True):
        net = nets[lans.index(lan)]
        gateway = next(p.ip for p in ports if p.switch == lan)
        taken_ips = {p.ip for p in ports if p.switch == lan}
        free = [a for a in net.hosts() if str(a) not in taken_ips]
        ip = rng.choice(free)
        ports.append(Port(host, intf(host, 0), lan, f"{ip}/{net.prefixlen}"))
        gateways[host] = gateway
    return Network(
        tuple(routers),
        tuple(hosts),
        tuple(switches),
        tuple(ports),
        tuple(gateways.items()),
        tuple(routes),
        described,
    )


def paper_network() -> Network:
    """NetLLMBench's own lab: router r1, h1 and h2 on s1 (192.168.1.0/24), h3 on s2
    (192.168.2.0/24)."""
    ports = (
        Port("r1", "eth0", "s1", "192.168.1.1/24"),
        Port("r1", "eth1", "s2", "192.168.2.1/24"),
        Port("h1", "eth0", "s1", "192.168.1.10/24"),
        Port("h2", "eth0", "s1", "192.168.1.20/24"),
        Port("h3", "eth0", "s2", "192.168.2.10/24"),
    )
    gateways = (("h1", "192.168.1.1"), ("h2", "192.168.1.1"), ("h3", "192.168.2.1"))
    return Network(("r1",), ("h1", "h2", "h3"), ("s1", "s2"), ports, gateways, ())
