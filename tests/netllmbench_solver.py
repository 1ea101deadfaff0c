"""An agent's reasoning on netllmbench levels 4 and 5, written out: from the prompt's plan,
a goal's text and the interfaces the lab shows (`ip -j link show`: names and
descriptions), the command that reaches the goal.

The tests hold it to the oracle's command for every goal of many draws (the prompt and
the lab's descriptions suffice, nothing else is needed), and play it on a live lab
(reading with real commands, one attempt each).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field

_LAN = re.compile(r"^  LAN segment (\S+): (\S+)$", re.M)
_TRANSIT = re.compile(r"^  transit link (\S+) \((\S+) - (\S+)\): (\S+)$", re.M)
_HOSTS = re.compile(r"^  hosts: (.+)$", re.M)
_CHAIN = re.compile(r"chained in this order: ([^)]+)\)")
_GOALS = {
    "host_ip": re.compile(r"^Host (\S+) must have its planned address"),
    "router_ip": re.compile(
        r"^Router (\S+) must have its planned address .* (?:segment|link) (\S+)\.$"
    ),
    "gateway": re.compile(r"^Host (\S+) must reach the other segments"),
    "route": re.compile(r"^Router (\S+) must reach segment (\S+),"),
    "ping": re.compile(r"From (\S+), ping (\S+)'s planned address"),
}

Links = dict[str, dict[str, str]]  # device -> interface -> description


def links_of(output: str) -> dict[str, str]:
    """Interface -> description from the output of `ip -j link show`."""
    data = json.loads(output[output.index("[") : output.rindex("]") + 1])
    return {i["ifname"]: i.get("ifalias", "") for i in data if i["ifname"] != "lo"}


@dataclass
class PlanSolver:
    prompt: str
    subnets: dict[str, ipaddress.IPv4Network] = field(default_factory=dict)
    ends: dict[str, tuple[str, str]] = field(default_factory=dict)  # transit -> routers
    hosts: dict[str, str] = field(default_factory=dict)
    chain: list[str] = field(default_factory=list)
    first: bool = True

    def __post_init__(self) -> None:
        for name, subnet in _LAN.findall(self.prompt):
            self.subnets[name] = ipaddress.ip_network(subnet)
        for name, a, b, subnet in _TRANSIT.findall(self.prompt):
            self.subnets[name] = ipaddress.ip_network(subnet)
            self.ends[name] = (a, b)
        (hosts,) = _HOSTS.findall(self.prompt)
        self.hosts = dict(pair.split(" ") for pair in hosts.split(", "))
        self.chain = _CHAIN.search(self.prompt).group(1).split(" - ")
        self.first = "takes the first usable address" in self.prompt

    def parse(self, goal: str) -> tuple[str, tuple[str, ...]]:
        for kind, pattern in _GOALS.items():
            found = pattern.search(goal)
            if found:
                return kind, found.groups()
        raise ValueError(f"no goal in {goal!r}")

    def needs(self, goal: str) -> list[str]:
        """The devices whose interfaces the goal needs read."""
        kind, args = self.parse(goal)
        if kind in ("host_ip", "router_ip"):
            return [args[0]]
        return list(self.chain) if kind == "route" else []

    def router_address(self, segment: str, router: str) -> ipaddress.IPv4Address:
        usable = list(self.subnets[segment].hosts())
        if segment in self.ends:
            return usable[self.ends[segment].index(router)]
        return usable[0] if self.first else usable[-1]

    def segment_of(self, ip: str) -> str:
        address = ipaddress.ip_address(ip)
        return next(s for s, n in self.subnets.items() if address in n and s not in self.ends)

    def command(self, goal: str, links: Links) -> tuple[str, str]:
        kind, args = self.parse(goal)
        if kind == "host_ip":
            host = args[0]
            (iface,) = links[host]
            prefix = self.subnets[self.segment_of(self.hosts[host])].prefixlen
            return host, f"ip addr add {self.hosts[host]}/{prefix} dev {iface}"
        if kind == "router_ip":
            router, segment = args
            iface = next(i for i, alias in links[router].items() if alias == segment)
            address = self.router_address(segment, router)
            return router, f"ip addr add {address}/{self.subnets[segment].prefixlen} dev {iface}"
        if kind == "gateway":
            host = args[0]
            segment = self.segment_of(self.hosts[host])
            owner = self.owner(segment, links)
            return host, f"ip route add default via {self.router_address(segment, owner)}"
        if kind == "route":
            router, segment = args
            owner = self.owner(segment, links)
            here, there = self.chain.index(router), self.chain.index(owner)
            hop = self.chain[here + (1 if there > here else -1)]
            link = next(t for t, pair in self.ends.items() if set(pair) == {router, hop})
            via = self.router_address(link, hop)
            return router, f"ip route add {self.subnets[segment]} via {via}"
        source, target = args
        return source, f"ping -c 3 -W 1 {self.hosts[target]}"

    def owner(self, segment: str, links: Links) -> str:
        """The router plugged into a LAN segment (its interface described so). Without the
        routers' links (a gateway goal), any router with the segment's rule address will
        do: the address does not depend on which router it is."""
        for router in self.chain:
            if segment in links.get(router, {}).values():
                return router
        return self.chain[0]
