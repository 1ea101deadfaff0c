"""The invariants every NetSpec holds; `build` checks each one it makes.

Names fit emulators/base.py's rules; every address is unique and inside its plan (loopbacks,
link /30s, LANs, SVIs); every port and bridge member exists once; every segment has two
ends or more; protocol intent only names routers that run the daemon; the size holds.
"""

from __future__ import annotations

import ipaddress
from collections import Counter

from generators.netlab import addressing as ip
from generators.netlab import naming
from generators.netlab.spec import SIZES, XLARGE_MIN_HOSTS, NetSpec
from pipeline.api import ConfigError


def problems(spec: NetSpec) -> list[str]:
    """Every broken invariant, as a sentence; empty when the spec is sound."""
    out: list[str] = []
    devices = list(spec.devices)
    out += [f"device {d} repeats" for d, n in Counter(devices).items() if n > 1]
    interfaces = [p.name for p in spec.ports] + [b.name for b in spec.bridges]
    domains = sorted({p.domain for p in spec.ports})
    out += [f"bad name: {p}" for p in naming.problems(devices, interfaces, domains)]
    out += [f"domain {d} has a device's name" for d in domains if d in devices]
    names = Counter((p.device, p.name) for p in spec.ports)
    names.update((b.device, b.name) for b in spec.bridges)
    out += [f"{d} has two interfaces named {i}" for (d, i), n in names.items() if n > 1]
    out += [
        f"port {p.name} on unknown device {p.device}" for p in spec.ports if p.device not in devices
    ]
    ends = Counter(p.domain for p in spec.ports)
    out += [f"segment {d} has one end" for d, n in ends.items() if n < 2]
    out += _bridges(spec)
    out += _addresses(spec)
    out += _protocols(spec)
    low, high = SIZES[spec.size]
    if not low <= len(spec.routers) <= high:
        out.append(f"{len(spec.routers)} routers, outside {spec.size}'s {low}..{high}")
    if spec.size == "xlarge" and len(spec.hosts) < XLARGE_MIN_HOSTS:
        out.append(f"{len(spec.hosts)} hosts in an xlarge lab (at least {XLARGE_MIN_HOSTS})")
    return out


def check(spec: NetSpec) -> None:
    found = problems(spec)
    if found:
        shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        raise ConfigError(f"netlab {spec.name}: {shown}")


def _bridges(spec: NetSpec) -> list[str]:
    out = []
    ports = {(p.device, p.name): p for p in spec.ports}
    enslaved = Counter((b.device, m) for b in spec.bridges for m in b.ports)
    for bridge in spec.bridges:
        for member in bridge.ports:
            port = ports.get((bridge.device, member))
            if port is None:
                out.append(f"bridge {bridge.device}/{bridge.name}: no port {member}")
            elif port.addresses:
                out.append(f"bridge member {bridge.device}/{member} has an address")
    out += [f"{d}/{m} is in two bridges" for (d, m), n in enslaved.items() if n > 1]
    return out


def _addresses(spec: NetSpec) -> list[str]:
    out = []
    seen: Counter[str] = Counter()
    loopbacks = ipaddress.IPv4Network(ip.LOOPBACKS)
    for r in spec.routers:
        seen[r.loopback] += 1
        if ipaddress.IPv4Address(r.loopback) not in loopbacks or r.loopback != ip.loopback(r.index):
            out.append(f"{r.name}: loopback {r.loopback} not 10.255.0.{r.index}")
    owned = [(p.device, a) for p in spec.ports for a in p.addresses]
    owned += [(b.device, a) for b in spec.bridges for a in b.addresses]
    links = {(x.a, x.a_intf): x for x in spec.links} | {(x.b, x.b_intf): x for x in spec.links}
    lans = [ipaddress.IPv4Network(lan.subnet) for lan in spec.lans]
    for device, address in owned:
        iface = ipaddress.IPv4Interface(address)
        seen[str(iface.ip)] += 1
        if iface.ip in ip.LINKS:
            if iface.network.prefixlen != 30:
                out.append(f"{device} {address}: link addresses are /30s")
        elif iface.ip in ip.LANS and iface.network in lans:
            if iface.network.prefixlen != 24 or iface.ip in ip.LOOPBACKS:
                out.append(f"{device} {address}: LANs are /24s outside 10.255.0.0/16")
        else:
            out.append(f"{device} {address}: outside the plan (links, LANs)")
    ports = {(p.device, p.name): p for p in spec.ports}
    for (device, intf), x in links.items():
        port, mine = ports.get((device, intf)), x.end(device)[1]
        if port is None:
            out.append(f"link {x.id}: {device} has no port {intf}")
        elif x.role != "spare" and port.addresses != (f"{mine}/30",):
            out.append(f"link {x.id}: {device} {intf} holds {port.addresses}, not {mine}/30")
        if x.subnet != ip.link_subnet(x.id):
            out.append(f"link {x.id}: subnet {x.subnet}, plan says {ip.link_subnet(x.id)}")
    for host in spec.hosts:
        lan = spec.lan(host.lan)
        if ipaddress.IPv4Interface(host.address).network != ipaddress.IPv4Network(lan.subnet):
            out.append(f"host {host.name} {host.address} is outside LAN {lan.subnet}")
        if host.gateway not in [a.address.split("/")[0] for a in lan.routers]:
            out.append(f"host {host.name}: gateway {host.gateway} is no router of its LAN")
    out += [f"address {a} is used {n} times" for a, n in seen.items() if n > 1]
    return out


def _protocols(spec: NetSpec) -> list[str]:
    out = []
    runs = {r.name: set(r.daemons) for r in spec.routers}
    for adj in spec.adjacencies:
        for end in (adj.a, adj.b):
            if "ospfd" not in runs.get(end, set()):
                out.append(f"OSPF link {adj.link}: {end} runs no ospfd")
        if adj.area not in {a.id for a in spec.areas}:
            out.append(f"OSPF link {adj.link}: area {adj.area} is not declared")
    for s in spec.sessions:
        for end, asn in ((s.a, s.a_asn), (s.b, s.b_asn)):
            if "bgpd" not in runs.get(end, set()) or spec.router(end).asn != asn:
                out.append(f"BGP session {s.a}-{s.b}: {end} is not a bgpd of AS {asn}")
        if (s.kind == "ibgp") != (s.a_asn == s.b_asn):
            out.append(f"BGP session {s.a}-{s.b}: kind {s.kind} with ASes {s.a_asn}/{s.b_asn}")
    for r in spec.routers:
        if "bgpd" in runs[r.name] and not spec.sessions_of(r.name):
            out.append(f"{r.name} runs bgpd without a session")
    return out
