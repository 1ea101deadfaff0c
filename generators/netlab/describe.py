"""The prompt's view of a NetSpec: an inventory (who is where) and the intent (what must hold).

Bounded on purpose: a 28-router lab reads in a few kilobytes. Routers are one line each,
grouped by role; a LAN appears on its router's line as its subnet and host range; links
are listed compactly (`r1-r2 cost 20`), except a leaf-spine fabric, which one rule states.
Interface-level wiring is not listed: every port's description (`ip link show` shows it as
`alias`) names what is on its other side, so an agent reads it where it needs it.
"""

from __future__ import annotations

from generators.netlab.spec import Lan, NetSpec

LINKS_PER_LINE = 6

SHAPES = {
    "chain": "routers in a chain",
    "ring": "routers in a ring",
    "mesh": "routers in a ring with chords",
    "leafspine": "a two-tier leaf-spine fabric (RFC 7938: eBGP on every fabric link)",
    "campus": "a campus: cores, distribution pairs (L3 switches), access switches (L2)",
    "isp": "provider networks (OSPF and iBGP to a route reflector) with customer networks",
}


def hosts_of(lan: Lan) -> str:
    """h3_1..h3_3, or the one host."""
    if len(lan.hosts) == 1:
        return lan.hosts[0]
    return f"{lan.hosts[0]}..{lan.hosts[-1]}"


def inventory(spec: NetSpec) -> str:
    routers, switches, hosts = len(spec.routers), len(spec.switches), len(spec.hosts)
    head = f"{routers} routers" + (f", {switches} access switches" if switches else "")
    lines = [f"Network {spec.name}: {SHAPES[spec.family]}; {head}, {hosts} hosts."]
    lines.append(
        "Addressing: router-ids are loopbacks 10.255.0.<n>/32 on lo; point-to-point links "
        "are /30s in 172.16.0.0/16 (the lower-numbered end .1); LANs are /24s with their "
        "hosts from .11. Every interface's description (ip link show: alias) names its "
        "other side."
    )
    lines.append("")
    lines.append("Routers:")
    lans_of: dict[str, list[Lan]] = {}
    for lan in spec.lans:
        if lan.vlan is None:  # a VLAN is listed with its access switch
            lans_of.setdefault(lan.routers[0].router, []).append(lan)
    for r in spec.routers:
        parts = [f"  {r.name:<7} {r.role:<6}"]
        if r.asn:
            parts.append(f"AS {r.asn}")
        elif r.group:
            parts.append(r.group)
        parts.append(f"lo {r.loopback}")
        for lan in lans_of.get(r.name, []):
            parts.append(f"LAN {lan.subnet} on {lan.routers[0].intf} ({hosts_of(lan)})")
        lines.append(" ".join(parts))
    if spec.switches:
        lines += ["", "Access switches (L2; one bridge v<vid> per VLAN):"]
        for sw in spec.switches:
            vlans = [lan for lan in spec.lans if lan.switch == sw.name]
            gws = vlans[0].routers if vlans else ()
            trunk = " and ".join(a.router for a in gws)
            desc = ", ".join(f"VLAN {x.vlan} {x.subnet} ({hosts_of(x)})" for x in vlans)
            lines.append(f"  {sw.name:<7} trunks to {trunk}; {desc}")
        lines.append(
            "  VLANs are emulated: a trunk is one veth per VLAN (<device>-t<k>v<vid>), each "
            "in that VLAN's bridge; SVIs are the bridges v<vid> on the distribution routers "
            "(.2 on dist<b>a, the hosts' gateway; .3 on dist<b>b)."
        )
    servers = [h for h in spec.hosts if h.role == "server"]
    if servers:
        kinds = ", ".join(s.kind.upper() for s in spec.services)
        lines.append(f"Servers: {servers[0].name} {servers[0].address} ({kinds} are placed here).")
    lines += ["", *_links(spec)]
    return "\n".join(lines)


def _links(spec: NetSpec) -> list[str]:
    if spec.family == "leafspine":
        spines = [r.name for r in spec.routers if r.role == "spine"]
        return [f"Links: every leaf has one link to each spine ({', '.join(spines)})."]
    items = []
    for x in spec.links:
        item = f"{x.a}-{x.b}"
        if x.area is not None and x.role != "spare":
            item += f" cost {x.cost}"
        if x.role != "primary":
            item += f" ({x.role.upper()})"
        elif x.area is None:
            item += " (eBGP)"
        items.append(item)
    lines = ["Links (router-router, OSPF cost):"]
    for k in range(0, len(items), LINKS_PER_LINE):
        lines.append("  " + ", ".join(items[k : k + LINKS_PER_LINE]))
    return lines


def intent(spec: NetSpec) -> str:
    lines = ["Intent:", "  Every host reaches every other host over ICMP, TCP and UDP."]
    if spec.ospf:
        areas = ", ".join(
            f"{a.id}" + ("" if a.kind == "normal" else f" ({a.kind})") for a in spec.areas
        )
        outside = [x for x in spec.links if x.area is None and x.role != "spare"]
        lines.append(
            f"  OSPF (areas {areas}): every router-router link below carries a Full adjacency"
            + (" except the eBGP ones" if outside else "")
            + ("; LAN ports and SVIs are passive." if spec.bridges else "; LAN ports are passive.")
        )
    lines += _bgp(spec)
    if spec.ecmp_width > 1 and (spec.bgp or spec.ospf):
        lines.append(f"  ECMP: up to {spec.ecmp_width} equal-cost next hops per prefix.")
    for p in spec.paths:
        lines.append(f"  Path: {p.source} -> {p.target} crosses {' - '.join(p.routers)}.")
    for e in spec.ecmp:
        lines.append(f"  ECMP: {e.router} reaches {e.prefix} over {len(e.via)} next hops.")
    for slot in (s for s in spec.benign if s.present):
        lines.append(f"  By design: {slot.device} {slot.component}: {slot.note}.")
    return "\n".join(lines)


def _bgp(spec: NetSpec) -> list[str]:
    if not spec.bgp:
        return []
    ebgp = [s for s in spec.sessions if s.kind == "ebgp"]
    ibgp = [s for s in spec.sessions if s.kind == "ibgp"]
    count = f"{len(ebgp)} eBGP session" + ("" if len(ebgp) == 1 else "s")
    lines = [f"  BGP: {count} on the link addresses, one per link marked eBGP."]
    if spec.family == "leafspine":
        lines[0] = f"  BGP: {count}, one per fabric link, on the link addresses."
    if ibgp:
        reflectors = sorted({s.a for s in ibgp if s.rr_client == s.b})
        lines.append(
            f"  iBGP: every provider router peers with its AS's route reflector "
            f"({', '.join(reflectors)}) on loopbacks, next-hop-self both ways."
        )
    allow = sorted({end for s in spec.sessions for end in s.allowas_in})
    if allow:
        lines.append(f"  Multi-site customer: {', '.join(allow)} accept their own AS once.")
    announced = sum(len(r.bgp_networks) for r in spec.routers)
    lines.append(f"  Every LAN is announced into BGP by its router ({announced} prefixes).")
    if any(r.redistribute for r in spec.routers):
        borders = [r.name for r in spec.routers if r.redistribute]
        lines[-1] = (
            f"  The borders {' and '.join(borders)} announce their AS's LANs into BGP and "
            "redistribute BGP into OSPF."
        )
    return lines


def describe(spec: NetSpec) -> str:
    """Inventory and intent, as a prompt shows them."""
    return inventory(spec) + "\n\n" + intent(spec)
