"""The standing security policy of large and xlarge incidents labs: pure data.

Every router's filter INPUT chain rejects TCP and UDP to port 7 (the echo service the
prober answers on every device) from the LANs' addresses, 10.0.0.0-10.254.255.255 (every
host and server LAN of netlab's addressing plan; router loopbacks are 10.255.0.0/24 and
router links 172.16.0.0/16, so routers still reach each other's port 7). REJECT, not
DROP: a closed probe is decided by its first answer (a TCP reset, an ICMP port
unreachable), never by silence and its timeout rounds.

Why: without it an incidents lab states almost nothing that must stay closed, so every
fault costs a flow and "everything pings" finds it; with it, a filter mistake that opens
what the policy closes is a silent security fault (policy_dp.py), seen only by the
closed probes below.

`applies(spec)`: large and xlarge labs (levels 7-8 draw them); small and medium labs stay
exactly as they were. `RULES` are built into every router at start (lab.py: the device's
startup, so the kernel snapshot holds them and a lab's reset restores them like any other
state). `probes(spec)`: one TCP and one UDP closed probe per router that holds an address
on a host LAN, from a host of that LAN to that address (on-link: no routing decides it),
the LAN and host rotating with the router's index; 2 per such router (20-56 flows per
large or xlarge lab, each refused at once). Routers with no host LAN (spines, cores)
carry the rules but are not probed, and no fault is placed on them.
"""

from __future__ import annotations

from dataclasses import dataclass

from generators.incidents.faults.kinds import Probe
from generators.netlab.spec import NetSpec

SIZES = frozenset({"large", "xlarge"})
LANS = "10.0.0.0-10.254.255.255"  # every LAN of the addressing plan, no loopback or link
PORT = 7
CHAIN = "INPUT"
COMPONENT = "iptables:filter:INPUT"
# The two rules in the order they are built, as `iptables -S` prints them (the fix of a
# fault re-adds exactly these, so the filter intent compares equal).
TCP_RULE = (
    f"-p tcp -m iprange --src-range {LANS} -m tcp --dport {PORT} -j REJECT --reject-with tcp-reset"
)
UDP_RULE = (
    f"-p udp -m iprange --src-range {LANS} -m udp --dport {PORT} "
    "-j REJECT --reject-with icmp-port-unreachable"
)
RULES = (TCP_RULE, UDP_RULE)


def applies(spec: NetSpec) -> bool:
    return spec.size in SIZES


def startup() -> tuple[tuple[str, ...], ...]:
    """The argv lists a router runs at start to hold the policy."""
    return tuple(("iptables", "-A", CHAIN, *rule.split()) for rule in RULES)


@dataclass(frozen=True)
class Prober:
    """Who checks one router's policy: `host` on host LAN `lan` (its subnet) asks the
    router's own address `address` on that LAN."""

    router: str
    host: str
    lan: int
    subnet: str
    address: str


def probers(spec: NetSpec) -> tuple[Prober, ...]:
    """One per router with an address on a host LAN, in router order (see the module
    docstring); () where the policy does not apply."""
    if not applies(spec):
        return ()
    out = []
    for r in spec.routers:
        mine = [
            (lan, a)
            for lan in spec.lans
            if lan.kind == "hosts" and lan.hosts
            for a in lan.routers
            if a.router == r.name
        ]
        if not mine:
            continue
        lan, attachment = mine[r.index % len(mine)]
        host = lan.hosts[r.index % len(lan.hosts)]
        out.append(Prober(r.name, host, lan.id, lan.subnet, attachment.address.split("/")[0]))
    return tuple(out)


def prober(spec: NetSpec, router: str) -> Prober | None:
    return next((p for p in probers(spec) if p.router == router), None)


def probes(spec: NetSpec) -> list[Probe]:
    """The policy's closed probes, TCP and UDP per prober: each must NOT answer."""
    return [
        Probe("closed", p.host, p.router, p.address, protocol)
        for p in probers(spec)
        for protocol in ("tcp", "udp")
    ]


def intent_lines(spec: NetSpec) -> list[str]:
    """The policy as the prompt's intent states it; [] where it does not apply."""
    if not applies(spec):
        return []
    return [
        f"  Security policy: no router answers TCP or UDP port {PORT} (its echo service) "
        f"from the LANs ({LANS}, every host and server LAN): each router's filter {CHAIN} "
        f"chain rejects them (TCP with a reset, UDP with an ICMP port unreachable), in "
        f"these two rules, in this order: `-A {CHAIN} {TCP_RULE}` and `-A {CHAIN} "
        f"{UDP_RULE}`. Routers still reach each other's port {PORT}."
    ]
