"""`to_lab(spec)`: a NetSpec as the emulators' Lab (emulators/base.py).

Routers forward, hash ECMP flows by L4 ports (`fib_multipath_hash_policy=1`: flows of one
pair spread over the next hops as real fabrics do), keep rp_filter off (asymmetric and
ECMP paths are intended; an rp_filter fault turns it on) and send or accept no ICMP
redirects (every hop must route, not be routed around). A device holding bridges (a
campus switch, a distribution router's SVIs) does not pass bridged frames through its IP
firewall (`bridge-nf-call-*` off, as a real switch's do not), so iptables rules act on
routed traffic only. Every segment with two ends is a direct domain (one veth pair).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from emulators.base import Bridge, Device, Interface, Lab

if TYPE_CHECKING:
    from generators.netlab.spec import NetSpec

NO_REDIRECTS = ("send_redirects", "accept_redirects")
ROUTER_SYSCTLS = (
    ("net.ipv4.ip_forward", "1"),
    ("net.ipv4.fib_multipath_hash_policy", "1"),
    ("net.ipv4.conf.all.rp_filter", "0"),
    ("net.ipv4.conf.default.rp_filter", "0"),
)
BRIDGED_SYSCTLS = (
    ("net.bridge.bridge-nf-call-iptables", "0"),
    ("net.bridge.bridge-nf-call-arptables", "0"),
)


def _quiet(names: list[str]) -> tuple[tuple[str, str], ...]:
    scopes = ["all", "default", *names]
    return tuple((f"net.ipv4.conf.{s}.{key}", "0") for s in scopes for key in NO_REDIRECTS)


def _device(spec: NetSpec, name: str, role: str) -> Device:
    intfs = tuple(
        Interface(p.name, p.domain, p.addresses, alias=p.alias, up=p.up)
        for p in spec.ports_of(name)
    )
    bridges = tuple(
        Bridge(b.name, b.ports, b.addresses, alias=b.alias) for b in spec.bridges_of(name)
    )
    names = [i.name for i in intfs] + [b.name for b in bridges]
    sysctls = _quiet(names) + (BRIDGED_SYSCTLS if bridges else ())
    if role == "router":
        r = spec.router(name)
        return Device(name, intfs, ROUTER_SYSCTLS + sysctls, role=role, bridges=bridges,
                      loopbacks=(f"{r.loopback}/32",))  # fmt: skip
    if role == "switch":
        return Device(name, intfs, sysctls, role=role, bridges=bridges)
    host = spec.host(name)
    route = ("ip", "route", "add", "default", "via", host.gateway)
    return Device(name, intfs, sysctls, startup=(route,), role="host")


def to_lab(spec: NetSpec) -> Lab:
    devices = [_device(spec, r.name, "router") for r in spec.routers]
    devices += [_device(spec, s.name, "switch") for s in spec.switches]
    devices += [_device(spec, h.name, "host") for h in spec.hosts]
    ends = Counter(p.domain for p in spec.ports)
    direct = tuple(sorted(d for d, n in ends.items() if n == 2))
    return Lab(spec.name, tuple(devices), direct=direct)
