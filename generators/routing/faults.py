"""The five fault types and their variants, each with the commands that inject and fix it.

Every variant uses a method that works on this kernel: no netem (loss is a tbf with a
64-byte burst, which drops every ping), no Open vSwitch. Injection commands are trusted
argv lists the app runs itself; fix commands are what the oracle sends as an agent
would, so they must pass the command sandbox. A fault records the subnets it targets,
so the second fault of a query can be drawn elsewhere.

Types (NetArena's names): disable_routing, disable_interface, remove_ip, drop_traffic,
wrong_routing.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from generators.routing.topology import RoutingTopology
from pipeline.api import EnvironmentFailure

TYPES = ("disable_routing", "disable_interface", "remove_ip", "drop_traffic", "wrong_routing")
Argv = tuple[str, ...]


class InjectionFailed(EnvironmentFailure):
    """An injection command ran and exited non-zero: the fault cannot be made on this lab
    (when generating, the draw is invalid; when playing a validated query, the lab differs
    from the one it was validated on)."""


@dataclass(frozen=True)
class Fault:
    type: str
    variant: str
    summary: str  # what is broken, in words (ground truth; never shown to agents)
    inject: tuple[tuple[str, Argv], ...]  # (machine, argv), run in order
    fix: tuple[tuple[str, str], ...]  # (machine, command): the oracle's replies, in order
    subnets: tuple[int, ...] = ()  # subnets it targets

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "variant": self.variant,
            "summary": self.summary,
            "inject": [{"machine": m, "argv": list(a)} for m, a in self.inject],
            "fix": [{"machine": m, "command": c} for m, c in self.fix],
            "subnets": list(self.subnets),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fault:
        return cls(
            data["type"],
            data["variant"],
            data["summary"],
            tuple((i["machine"], tuple(i["argv"])) for i in data["inject"]),
            tuple((f["machine"], f["command"]) for f in data["fix"]),
            tuple(data.get("subnets", ())),
        )


def _pick(rng: random.Random, choices: list[int]) -> int:
    return choices[rng.randrange(len(choices))]


def _subnet(rng: random.Random, topo: RoutingTopology, avoid: set[int]) -> int:
    return _pick(rng, [k for k in topo.ks if k not in avoid] or list(topo.ks))


def _other(rng: random.Random, topo: RoutingTopology, k: int, avoid: set[int]) -> int:
    return _pick(
        rng, [m for m in topo.ks if m != k and m not in avoid] or [m for m in topo.ks if m != k]
    )


def _r0(*argvs: str) -> tuple[tuple[str, Argv], ...]:
    return tuple(("r0", tuple(a.split())) for a in argvs)


def disable_routing(rng: random.Random, topo: RoutingTopology, avoid: set[int]) -> Fault:
    variant = rng.choice(["ip_forward", "policy_drop", "rule_drop", "rule_prohibit", "subnet_drop"])
    t = "disable_routing"
    if variant == "ip_forward":
        return Fault(
            t,
            variant,
            "r0 has IP forwarding off",
            _r0("sysctl -qw net.ipv4.ip_forward=0"),
            (("r0", "sysctl -w net.ipv4.ip_forward=1"),),
        )
    if variant == "policy_drop":
        return Fault(
            t,
            variant,
            "r0's iptables FORWARD policy is DROP",
            _r0("iptables -P FORWARD DROP"),
            (("r0", "iptables -P FORWARD ACCEPT"),),
        )
    if variant == "rule_drop":
        return Fault(
            t,
            variant,
            "r0's iptables FORWARD chain drops everything",
            _r0("iptables -A FORWARD -j DROP"),
            (("r0", "iptables -D FORWARD -j DROP"),),
        )
    if variant == "rule_prohibit":
        pref = rng.randrange(100, 1000)
        return Fault(
            t,
            variant,
            f"an ip rule (pref {pref}) prohibits routing on r0",
            _r0(f"ip rule add pref {pref} prohibit"),
            (("r0", f"ip rule del pref {pref}"),),
        )
    k = _subnet(rng, topo, avoid)
    rule = f"FORWARD -s {topo.subnet(k)} -j DROP"
    return Fault(
        t,
        variant,
        f"r0 drops all forwarded traffic from {topo.subnet(k)}",
        _r0(f"iptables -A {rule}"),
        (("r0", f"iptables -D {rule}"),),
        (k,),
    )


def disable_interface(rng: random.Random, topo: RoutingTopology, avoid: set[int]) -> Fault:
    variant = rng.choice(["router_down", "router_mtu", "host_down"])
    t = "disable_interface"
    k = _subnet(rng, topo, avoid)
    intf = topo.router_intf(k)
    if variant == "router_down":
        return Fault(
            t,
            variant,
            f"{intf} is down",
            _r0(f"ip link set {intf} down"),
            (("r0", f"ip link set {intf} up"),),
            (k,),
        )
    if variant == "router_mtu":
        mtu = rng.randint(68, 79)  # below the 84 bytes of a 64-byte ping
        return Fault(
            t,
            variant,
            f"{intf} has MTU {mtu}, too small for pings",
            _r0(f"ip link set {intf} mtu {mtu}"),
            (("r0", f"ip link set {intf} mtu 1500"),),
            (k,),
        )
    j = _pick(rng, list(topo.js))
    host, hintf = topo.host(k, j), topo.host_intf(k, j)
    return Fault(
        t,
        variant,
        f"{host}'s interface {hintf} is down (which also removed its default route)",
        ((host, ("ip", "link", "set", hintf, "down")),),
        ((host, f"ip link set {hintf} up"), (host, f"ip route add default via {topo.gateway(k)}")),
        (k,),
    )


def remove_ip(rng: random.Random, topo: RoutingTopology, avoid: set[int]) -> Fault:
    t = "remove_ip"
    k = _subnet(rng, topo, avoid)
    intf, right = topo.router_intf(k), f"{topo.gateway(k)}/24"
    restore = ("r0", f"ip addr add {right} brd + dev {intf}")
    # A longer prefix breaks only the hosts it leaves out (hosts are .2 .. .M+1).
    breaking = [p for p in (30, 31, 32) if any(j + 1 >= 2 ** (32 - p) for j in topo.js)]
    variant = rng.choice(["flush", "foreign", "other_subnet", *(["prefix"] if breaking else [])])
    if variant == "flush":
        return Fault(
            t,
            variant,
            f"{intf} has no IP address",
            _r0(f"ip addr flush dev {intf}"),
            (restore,),
            (k,),
        )
    if variant == "foreign":
        wrong = f"10.{rng.randint(64, 250)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}/24"
    elif variant == "other_subnet":
        m = _other(rng, topo, k, avoid)
        wrong = f"{topo.gateway(m)}/24"
    else:
        wrong = f"{topo.gateway(k)}/{rng.choice(breaking)}"
    what = {
        "foreign": "a foreign address",
        "other_subnet": "another subnet's address",
        "prefix": "the wrong prefix length",
    }[variant]
    return Fault(
        t,
        variant,
        f"{intf} has {what}: {wrong} instead of {right}",
        _r0(f"ip addr flush dev {intf}", f"ip addr add {wrong} brd + dev {intf}"),
        (restore, ("r0", f"ip addr del {wrong} dev {intf}")),
        (k,),
    )


def drop_traffic(rng: random.Random, topo: RoutingTopology, avoid: set[int]) -> Fault:
    t = "drop_traffic"
    k = _subnet(rng, topo, avoid)
    net, intf = topo.subnet(k), topo.router_intf(k)
    variant = rng.choice(["icmp_to", "icmp_from", "tbf"])
    if variant == "tbf":
        return Fault(
            t,
            variant,
            f"a tbf qdisc with a 64-byte burst on {intf} drops every ping to {net}",
            _r0(f"tc qdisc add dev {intf} root tbf rate 1mbit burst 64 latency 50ms"),
            (("r0", f"tc qdisc del dev {intf} root"),),
            (k,),
        )
    target = rng.choice(["DROP", "REJECT"])
    if variant == "icmp_to":
        rules = [f"FORWARD -p icmp -d {net} -j {target}", f"OUTPUT -p icmp -d {net} -j {target}"]
    else:
        rules = [f"FORWARD -p icmp -s {net} -j {target}", f"INPUT -p icmp -s {net} -j {target}"]
    way = "to" if variant == "icmp_to" else "from"
    return Fault(
        t,
        f"{variant}_{target.lower()}",
        f"r0's iptables {target}s ICMP {way} {net}",
        _r0(*(f"iptables -A {r}" for r in rules)),
        tuple(("r0", f"iptables -D {r}") for r in rules),
        (k,),
    )


def wrong_routing(rng: random.Random, topo: RoutingTopology, avoid: set[int]) -> Fault:
    t = "wrong_routing"
    k = _subnet(rng, topo, avoid)
    m = _other(rng, topo, k, avoid)
    net, intf = topo.subnet(k), topo.router_intf(k)
    good = f"ip route replace {net} dev {intf} proto kernel scope link src {topo.gateway(k)}"
    variant = rng.choice(["wrong_interface", "wrong_gateway", "high_metric", "loop"])
    if variant == "wrong_interface":
        return Fault(
            t,
            variant,
            f"r0 routes {net} out of {topo.router_intf(m)}",
            _r0(f"ip route replace {net} dev {topo.router_intf(m)}"),
            (("r0", good),),
            (k, m),
        )
    dead = f"10.0.{m}.250"  # an address nobody has in subnet m
    if variant == "wrong_gateway":
        via = rng.choice([dead, topo.host_addr(m, _pick(rng, list(topo.js)))])
        return Fault(
            t,
            variant,
            f"r0 routes {net} via {via}, which does not forward it",
            _r0(f"ip route replace {net} via {via}"),
            (("r0", good),),
            (k, m),
        )
    if variant == "high_metric":
        add_good = f"ip route add {net} dev {intf} proto kernel scope link src {topo.gateway(k)}"
        return Fault(
            t,
            variant,
            f"r0's route for {net} has metric 500; a bad one via {dead} has metric 10",
            _r0(
                f"ip route del {net} dev {intf}",
                f"{add_good} metric 500",
                f"ip route add {net} via {dead} metric 10",
            ),
            (("r0", f"ip route del {net} via {dead} metric 10"),),
            (k, m),
        )
    j = _pick(rng, list(topo.js))
    host = topo.host(m, j)
    return Fault(
        t,
        variant,
        f"r0 routes {net} via {host}, which forwards it back to r0 (a loop)",
        (
            *_r0(f"ip route replace {net} via {topo.host_addr(m, j)}"),
            (host, ("sysctl", "-qw", "net.ipv4.ip_forward=1")),
        ),
        (("r0", good),),
        (k, m),
    )


DRAW: dict[str, Callable[[random.Random, RoutingTopology, set[int]], Fault]] = {
    "disable_routing": disable_routing,
    "disable_interface": disable_interface,
    "remove_ip": remove_ip,
    "drop_traffic": drop_traffic,
    "wrong_routing": wrong_routing,
}
