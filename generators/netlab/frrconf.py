"""FRR configuration of a NetSpec's routers: one file per daemon (zebra, ospfd, bgpd).

One file per daemon, as generators/routing/frr/topology.py renders them (a daemon reading
another daemon's section would leave configuration mode at its `exit` and drop the rest),
with the same fast timers: OSPF hello 1 s / dead 4 s on point-to-point links, SPF and LSA
throttles near zero; BGP keepalive 1 s / hold 3 s, connect retry 1 s, no advertisement
delay. And one more: OSPF retransmits after 1 s, not 5: an ABR's first database exchange
with many summary LSAs lost a packet often enough on a loaded machine that a 24-router
campus took 6-7 s to bring its last adjacency Full, 2 s with this. Areas are written
dotted (`area 0.0.0.1`) so that `show running-config` prints them as the spec names them.

ospfd: every OSPF link point-to-point with its cost; LAN ports and SVIs passive; a
`network` statement per loopback, LAN and link (statements, not `ip ospf area`, so that a
missing network is a fault of its own); area types; `redistribute` where the spec says.
bgpd: neighbours by address with a description naming the peer; iBGP over loopbacks
(`update-source` the router's loopback address); next-hop-self, route-reflector-client
and allowas-in as each session says; `network` per announced prefix; `maximum-paths`
(and `maximum-paths ibgp`) the spec's ECMP width, with `as-path multipath-relax`.
"""

from __future__ import annotations

from generators.netlab.spec import NetSpec, Router
from generators.routing.frr.topology import DEAD, HELLO


def home_area(spec: NetSpec, router: str) -> str:
    """The area of a router's loopback: its first LAN's, else its lowest link area."""
    for lan in spec.lans:
        if lan.area is not None and any(a.router == router for a in lan.routers):
            return lan.area
    areas = [x.area for x in spec.links_of(router) if x.area is not None and x.role != "spare"]
    return min(areas, key=lambda a: tuple(int(p) for p in a.split(".")), default="0.0.0.0")


def configs(spec: NetSpec, router: str) -> dict[str, str]:
    """The healthy configuration of `router`: {daemon: file text}."""
    r = spec.router(router)
    head = ["frr defaults traditional", f"hostname {r.name}", "!"]
    out = {"zebra": _text(head)}
    if "ospfd" in r.daemons:
        out["ospfd"] = _text(head + _ospf(spec, r))
    if "bgpd" in r.daemons:
        out["bgpd"] = _text(head + _bgp(spec, r))
    return out


def all_configs(spec: NetSpec) -> dict[str, dict[str, str]]:
    """{router: {daemon: text}} for every router."""
    return {r.name: configs(spec, r.name) for r in spec.routers}


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _ospf(spec: NetSpec, r: Router) -> list[str]:
    lines: list[str] = []
    networks = [(f"{r.loopback}/32", home_area(spec, r.name))]
    for lan in spec.lans:
        for attach in lan.routers:
            if attach.router == r.name and lan.area is not None:
                lines += [f"interface {attach.intf}", " ip ospf passive", "exit", "!"]
                networks.append((lan.subnet, lan.area))
    for x in spec.links_of(r.name):
        if x.area is None or x.role == "spare":
            continue
        intf = x.end(r.name)[0]
        lines += [
            f"interface {intf}",
            " ip ospf network point-to-point",
            f" ip ospf hello-interval {HELLO}",
            f" ip ospf dead-interval {DEAD}",
            " ip ospf retransmit-interval 1",
            f" ip ospf cost {x.cost}",
            "exit",
            "!",
        ]
        networks.append((x.subnet, x.area))
    lines += [
        "router ospf",
        f" ospf router-id {r.loopback}",
        " timers throttle spf 0 50 200",
        " timers throttle lsa all 0",
        " timers lsa min-arrival 0",
        f" maximum-paths {spec.ecmp_width}",
    ]
    lines += [f" redistribute {source}" for source in r.redistribute]
    lines += [f" network {prefix} area {area}" for prefix, area in networks]
    mine = {area for _, area in networks}
    lines += [f" area {a.id} {a.kind}" for a in spec.areas if a.kind != "normal" and a.id in mine]
    return [*lines, "exit", "!"]


def _bgp(spec: NetSpec, r: Router) -> list[str]:
    lines = [
        f"router bgp {r.asn}",
        f" bgp router-id {r.loopback}",
        " no bgp ebgp-requires-policy",
        " bgp bestpath as-path multipath-relax",
        " timers bgp 1 3",
    ]
    af: list[str] = []
    ibgp = False
    for s in spec.sessions_of(r.name):
        peer, address, asn = s.peer_of(r.name)
        what = f"{peer} {spec.link(s.link).end(peer)[0]}" if s.link is not None else f"{peer} lo"
        lines += [
            f" neighbor {address} remote-as {asn}",
            f" neighbor {address} description {s.kind} to {what}",
            f" neighbor {address} timers connect 1",
            f" neighbor {address} advertisement-interval 0",
        ]
        if s.kind == "ibgp":
            ibgp = True
            lines.append(f" neighbor {address} update-source {r.loopback}")
        if r.name in s.next_hop_self:
            af.append(f"  neighbor {address} next-hop-self")
        if s.rr_client == peer:
            af.append(f"  neighbor {address} route-reflector-client")
        if r.name in s.allowas_in:
            af.append(f"  neighbor {address} allowas-in 1")
    lines.append(" address-family ipv4 unicast")
    lines += [f"  network {prefix}" for prefix in r.bgp_networks]
    lines += af
    lines.append(f"  maximum-paths {spec.ecmp_width}")
    if ibgp:
        lines.append(f"  maximum-paths ibgp {spec.ecmp_width}")
    return [*lines, " exit-address-family", "exit", "!"]
