"""FRR lab topology: routers r1..rN in a chain, one LAN with one host behind each.

Naming and addressing scheme (what agents see):
  router `r<i>`; its LAN interface `r<i>-eth0` 10.0.<i>.1/24 on domain `l<i>`; host `h<i>`
  (`h<i>-eth0`, 10.0.<i>.2/24, default route via 10.0.<i>.1);
  the link between r<i> and r<i+1> is domain `t<i>`, subnet 10.100.<i>.0/30: `r<i>-eth2`
  holds .1, `r<i+1>-eth1` holds .2 (eth1 faces the previous router, eth2 the next one).
Level 4: one OSPF area 0 over every router. Level 5: two autonomous systems, AS 65001
(r1..rA) and AS 65002 (rA+1..rN), each running OSPF inside; their border routers rA and
rA+1 speak eBGP over t<A> (not in OSPF), announce their own AS's LANs with `network`
statements and redistribute what BGP learnt into OSPF.
Timers are short so the network converges in seconds: OSPF hello 1 s / dead 4 s on
point-to-point links, SPF throttle 0/50/200 ms; BGP keepalive 1 s / hold 3 s, connect
retry 1 s, no advertisement delay.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulators.base import Device, Interface, Lab

ASNS = (65001, 65002)
HELLO, DEAD = 1, 4
NO_REDIRECTS = ("send_redirects", "accept_redirects")


@dataclass(frozen=True)
class FrrTopology:
    level: int  # 4: OSPF only; 5: OSPF and BGP
    routers: int  # N, 3..6
    split: int = 0  # level 5: routers in AS 65001 (A); the rest are AS 65002

    @property
    def name(self) -> str:
        return f"frr{self.level}-{self.routers}" + (f"-{self.split}" if self.level == 5 else "")

    @classmethod
    def from_name(cls, name: str) -> FrrTopology:
        parts = name.removeprefix("frr").split("-")
        level, routers = int(parts[0]), int(parts[1])
        return cls(level, routers, int(parts[2]) if len(parts) > 2 else 0)

    # -- names and addresses -----------------------------------------------------------
    @property
    def rs(self) -> range:
        return range(1, self.routers + 1)

    def router(self, i: int) -> str:
        return f"r{i}"

    def host(self, i: int) -> str:
        return f"h{i}"

    def lan(self, i: int) -> str:
        return f"10.0.{i}.0/24"

    def lan_intf(self, i: int) -> str:
        return f"r{i}-eth0"

    def link(self, i: int) -> str:
        """The /30 between r<i> and r<i+1>."""
        return f"10.100.{i}.0/30"

    def left(self, i: int) -> str:
        return f"r{i}-eth1"

    def right(self, i: int) -> str:
        return f"r{i}-eth2"

    def link_addr(self, i: int, side: int) -> str:
        """Address of r<i> (side 1) or r<i+1> (side 2) on link i."""
        return f"10.100.{i}.{side}"

    def asn(self, i: int) -> int:
        return ASNS[0] if self.level == 4 or i <= self.split else ASNS[1]

    @property
    def border_links(self) -> tuple[int, ...]:
        """Links between the ASes (eBGP, outside OSPF): link A at level 5."""
        return (self.split,) if self.level == 5 else ()

    @property
    def ospf_links(self) -> tuple[int, ...]:
        return tuple(i for i in range(1, self.routers) if i not in self.border_links)

    def as_routers(self, asn: int) -> tuple[int, ...]:
        return tuple(i for i in self.rs if self.asn(i) == asn)

    @property
    def borders(self) -> tuple[int, int]:
        return (self.split, self.split + 1)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(self.host(i) for i in self.rs)

    @property
    def machines(self) -> tuple[str, ...]:
        """The devices agents may run commands on: routers, then hosts."""
        return (*(self.router(i) for i in self.rs), *self.hosts)

    @property
    def switches(self) -> tuple[str, ...]:
        return (*(f"l{i}" for i in self.rs), *(f"t{i}" for i in range(1, self.routers)))

    @property
    def frr_routers(self) -> tuple[str, ...]:
        return tuple(self.router(i) for i in self.rs)

    def daemons(self) -> tuple[str, ...]:
        return ("zebra", "ospfd", "bgpd") if self.level == 5 else ("zebra", "ospfd")

    # -- the lab -----------------------------------------------------------------------
    def lab(self) -> Lab:
        def quiet(intfs: list[str]) -> tuple[tuple[str, str], ...]:
            scopes = ["all", "default", *intfs]
            return tuple((f"net.ipv4.conf.{s}.{key}", "0") for s in scopes for key in NO_REDIRECTS)

        devices = []
        for i in self.rs:
            intfs = [Interface(self.lan_intf(i), f"l{i}", (f"10.0.{i}.1/24",))]
            if i > 1:
                intfs.append(
                    Interface(self.left(i), f"t{i - 1}", (f"{self.link_addr(i - 1, 2)}/30",))
                )
            if i < self.routers:
                intfs.append(Interface(self.right(i), f"t{i}", (f"{self.link_addr(i, 1)}/30",)))
            names = [x.name for x in intfs]
            devices.append(
                Device(
                    self.router(i),
                    tuple(intfs),
                    sysctls=(("net.ipv4.ip_forward", "1"), *quiet(names)),
                    role="router",
                )
            )
        for i in self.rs:
            devices.append(
                Device(
                    self.host(i),
                    (Interface(f"h{i}-eth0", f"l{i}", (f"10.0.{i}.2/24",)),),
                    sysctls=quiet([f"h{i}-eth0"]),
                    startup=(("ip", "route", "add", "default", "via", f"10.0.{i}.1"),),
                )
            )
        return Lab(self.name, tuple(devices))

    # -- FRR configuration -------------------------------------------------------------
    def configs(self, i: int) -> dict[str, str]:
        """r<i>'s healthy FRR configuration, one file per daemon: a daemon reading another
        daemon's section would leave configuration mode at its `exit` and drop the rest."""
        head = ["frr defaults traditional", f"hostname r{i}", "!"]
        links = []
        if i > 1:
            links.append((self.left(i), i - 1))
        if i < self.routers:
            links.append((self.right(i), i))
        ospf_links = [(intf, k) for intf, k in links if k in self.ospf_links]
        ospf = [f"interface {self.lan_intf(i)}", " ip ospf passive", "exit", "!"]
        for intf, _ in ospf_links:
            ospf += [
                f"interface {intf}",
                " ip ospf network point-to-point",
                f" ip ospf hello-interval {HELLO}",
                f" ip ospf dead-interval {DEAD}",
                "exit",
                "!",
            ]
        ospf += [
            "router ospf",
            f" ospf router-id 0.0.0.{i}",
            " timers throttle spf 0 50 200",
            " timers throttle lsa all 0",
            " timers lsa min-arrival 0",
            f" network {self.lan(i)} area 0",
            *(f" network {self.link(k)} area 0" for _, k in ospf_links),
        ]
        if self.level == 5 and i in self.borders:
            ospf.append(" redistribute bgp")
        ospf += ["exit", "!"]
        out = {"zebra": "\n".join(head) + "\n", "ospfd": "\n".join(head + ospf) + "\n"}
        if self.level == 5:
            bgp = self._bgp(i) if i in self.borders else []
            out["bgpd"] = "\n".join(head + bgp) + "\n"
        return out

    def bgp_peer(self, i: int) -> str:
        """The border router r<i>'s eBGP neighbour address."""
        a = self.split
        return self.link_addr(a, 2) if i == a else self.link_addr(a, 1)

    def _bgp(self, i: int) -> list[str]:
        peer, mine = self.bgp_peer(i), self.asn(i)
        other = ASNS[1] if mine == ASNS[0] else ASNS[0]
        return [
            f"router bgp {mine}",
            f" bgp router-id 0.0.0.{i}",
            " no bgp ebgp-requires-policy",
            " timers bgp 1 3",
            f" neighbor {peer} remote-as {other}",
            f" neighbor {peer} timers connect 1",
            f" neighbor {peer} advertisement-interval 0",
            " address-family ipv4 unicast",
            *(f"  network {self.lan(k)}" for k in self.as_routers(mine)),
            " exit-address-family",
            "exit",
            "!",
        ]

    def describe(self) -> str:
        """The topology as the agent's prompt shows it."""
        if self.level == 4:
            lines = [
                f"{self.routers} routers r1..r{self.routers} in a chain run FRR (zebra, ospfd): "
                "one OSPF area 0 should carry every subnet below.",
            ]
        else:
            a = self.split
            lines = [
                f"{self.routers} routers r1..r{self.routers} in a chain run FRR. AS {ASNS[0]} is "
                f"r1..r{a}, AS {ASNS[1]} is r{a + 1}..r{self.routers}; each AS runs OSPF area 0 "
                f"inside. The border routers r{a} and r{a + 1} speak eBGP over "
                f"{self.link(a)}, announce their own AS's LANs and redistribute BGP into OSPF.",
            ]
        lines.append("")
        for i in self.rs:
            asn = f" (AS {self.asn(i)})" if self.level == 5 else ""  # level 4 has no BGP
            lines.append(
                f"  r{i}{asn}: LAN {self.lan(i)} on {self.lan_intf(i)} "
                f"(r{i} 10.0.{i}.1, host h{i} 10.0.{i}.2)"
            )
        for k in range(1, self.routers):
            lines.append(
                f"  link {self.link(k)}: r{k} {self.right(k)} {self.link_addr(k, 1)} -- "
                f"r{k + 1} {self.left(k + 1)} {self.link_addr(k, 2)}"
            )
        return "\n".join(lines)
