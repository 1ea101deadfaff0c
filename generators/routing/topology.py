"""The routing app's topology: one router, N subnets (one switch each), M hosts per subnet.

Naming and addressing scheme (what agents see):
  router `r0`, its interface to subnet k is `r0-eth<k>` with 10.0.<k>.1/24 (k = 1..N);
  switch `s<k>`; host j of subnet k is `h<k>_<j>` (j = 1..M), interface `h<k>_<j>-eth0`,
  address 10.0.<k>.<j+1>/24, default route via 10.0.<k>.1.
The router forwards (ip_forward=1); ICMP redirects are off everywhere (sent by nobody,
accepted by nobody): they poison host route caches for minutes after a correct fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulators.base import Device, Interface, Lab

NO_REDIRECTS = ("send_redirects", "accept_redirects")


@dataclass(frozen=True)
class RoutingTopology:
    subnets: int  # N, 2..8
    hosts: int  # M per subnet, 1..4

    @property
    def name(self) -> str:
        return f"routing-{self.subnets}x{self.hosts}"

    @classmethod
    def from_name(cls, name: str) -> RoutingTopology:
        n, _, m = name.removeprefix("routing-").partition("x")
        return cls(int(n), int(m))

    # -- names and addresses -----------------------------------------------------------
    def subnet(self, k: int) -> str:
        return f"10.0.{k}.0/24"

    def gateway(self, k: int) -> str:
        return f"10.0.{k}.1"

    def router_intf(self, k: int) -> str:
        return f"r0-eth{k}"

    def host(self, k: int, j: int) -> str:
        return f"h{k}_{j}"

    def host_intf(self, k: int, j: int) -> str:
        return f"h{k}_{j}-eth0"

    def host_addr(self, k: int, j: int) -> str:
        return f"10.0.{k}.{j + 1}"

    @property
    def ks(self) -> range:
        return range(1, self.subnets + 1)

    @property
    def js(self) -> range:
        return range(1, self.hosts + 1)

    @property
    def machines(self) -> tuple[str, ...]:
        """The devices agents may run commands on, in reachability order."""
        return ("r0", *(self.host(k, j) for k in self.ks for j in self.js))

    @property
    def switches(self) -> tuple[str, ...]:
        return tuple(f"s{k}" for k in self.ks)

    # -- the lab -----------------------------------------------------------------------
    def lab(self) -> Lab:
        def quiet(intfs: list[str]) -> tuple[tuple[str, str], ...]:
            scopes = ["all", "default", *intfs]
            return tuple((f"net.ipv4.conf.{s}.{key}", "0") for s in scopes for key in NO_REDIRECTS)

        router_intfs = [self.router_intf(k) for k in self.ks]
        router = Device(
            "r0",
            tuple(
                Interface(self.router_intf(k), f"s{k}", (f"{self.gateway(k)}/24",)) for k in self.ks
            ),
            sysctls=(("net.ipv4.ip_forward", "1"), *quiet(router_intfs)),
            role="router",
        )
        hosts = [
            Device(
                self.host(k, j),
                (Interface(self.host_intf(k, j), f"s{k}", (f"{self.host_addr(k, j)}/24",)),),
                sysctls=quiet([self.host_intf(k, j)]),
                startup=(("ip", "route", "add", "default", "via", self.gateway(k)),),
            )
            for k in self.ks
            for j in self.js
        ]
        return Lab(self.name, (router, *hosts))

    def describe(self) -> str:
        """The topology in prose and a table, as the agent's prompt shows it."""
        lines = [
            f"Router r0 connects {self.subnets} subnets. Each subnet is one switch with "
            f"{self.hosts} host{'s' if self.hosts > 1 else ''}; every host's default route "
            "points to r0's address in its subnet, and r0 routes between the subnets.",
            "",
        ]
        for k in self.ks:
            members = ", ".join(
                f"{self.host(k, j)} {self.host_addr(k, j)} ({self.host_intf(k, j)})"
                for j in self.js
            )
            lines.append(
                f"  s{k}: subnet {self.subnet(k)}; r0 {self.gateway(k)} ({self.router_intf(k)}); "
                f"hosts {members}"
            )
        return "\n".join(lines)
