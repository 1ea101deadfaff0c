"""Services kinds: the lab's DNS (dnsmasq on srv1) and VRRP (keepalived, campus pairs).

An incidents lab (generators/incidents/lab.py) runs dnsmasq on srv1, authoritative for
`lab.` (`<host>.lab`, `_` written `-`, for every host), and keepalived on both routers of
every campus distribution pair, one group per VLAN (VRID = VLAN id, VIP .254, priority
150 on the master, 100 on the backup, preemption on), the VLAN's hosts routing through
the VIP. Service faults are injected as svcctl edits (`how="service"`, each line the
words after `svcctl`), fixed with svcctl as an agent sends it; `dns_blocked` is a filter
on the server's gateway. What shows them: a name lookup from a host (`dig`), or which
router holds a VIP (the VRRP intent: the master does).

DHCP: the same dnsmasq serves a pool per host LAN (tag l<lan>, .100-.199, the LAN's
gateway as router) through a relay on the LAN's gateway router; the lease probe
(generators/incidents/dhcp.py) reads the OFFER a host's DISCOVER gets.
"""

from __future__ import annotations

import random

from generators.incidents.edge import dhcp_range, dns_name, host_gateway
from generators.incidents.faults import dphelp as h
from generators.incidents.faults.kinds import Fault, Injection, Taken, define
from generators.netlab.spec import NetSpec

FWD = "iptables:filter:FORWARD"
WRONG_PRIORITY = (50, 99)  # below the backup's 100


def _dns(spec: NetSpec):
    return next((s for s in spec.services if s.kind == "dns"), None)


def _svc(device: str, *lines: str) -> Injection:
    return Injection(device, "service", tuple(lines))


def _client_and_name(rng: random.Random, spec: NetSpec):
    hosts = [x.name for x in spec.hosts if x.role == "host"]
    if len(hosts) < 2:
        return None
    target, client = rng.sample(hosts, 2)
    return spec.host(target), client


def _dig(dns) -> str:
    """dig bounded well inside the agent's 5 s (its default waits 5 s x 3 tries when a
    fault elsewhere on the path drops the query)."""
    return f"dig @{dns.address} +time=1 +tries=1"


def dns_record_wrong(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    dns, pair = _dns(spec), _client_and_name(rng, spec)
    if dns is None or pair is None or not taken.free("service:dns"):
        return None
    target, client = pair
    lan = spec.lan(target.lan)
    wrong = h.unused_address(lan.subnet, h.lan_addresses(spec, lan), rng)
    name, right = dns_name(target.name), h.addr(target.address)
    return h.fault(
        "services.dns_record_wrong", dns.device, "dns", placement="record",
        summary=f"the DNS server answers {name} with {wrong}, not {right}",
        inject=[_svc(dns.device, f"dns set host-record {name},{wrong}")],
        fix=[(dns.device, f"svcctl dns set host-record {name},{right}")],
        evidence=[h.evidence(client, f"{_dig(dns)} +short {name}", wrong, line=True),
                  h.evidence(dns.device, "svcctl dns show", f"host-record {name},{wrong}")],
        elements=["service:dns", f"record:{name}"],
    )  # fmt: skip


def dns_record_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    dns, pair = _dns(spec), _client_and_name(rng, spec)
    if dns is None or pair is None or not taken.free("service:dns"):
        return None
    target, client = pair
    name, right = dns_name(target.name), h.addr(target.address)
    return h.fault(
        "services.dns_record_missing", dns.device, "dns", placement="record",
        summary=f"the DNS server has no record for {name} ({right})",
        inject=[_svc(dns.device, f"dns unset host-record {name}")],
        fix=[(dns.device, f"svcctl dns set host-record {name},{right}")],
        evidence=[h.evidence(client, f"{_dig(dns)} {name}", "status: NXDOMAIN")],
        elements=["service:dns", f"record:{name}"],
    )  # fmt: skip


def dns_not_listening(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    dns, pair = _dns(spec), _client_and_name(rng, spec)
    if dns is None or pair is None or not taken.free("service:dns"):
        return None
    _, client = pair
    port = spec.host(dns.device).intf
    return h.fault(
        "services.dns_not_listening", dns.device, "dns", placement="server",
        summary=f"the DNS server listens on its loopback only, not on {port}",
        inject=[_svc(dns.device, f"dns unset interface {port}", "dns set interface lo")],
        fix=[(dns.device, f"svcctl dns set interface {port}"),
             (dns.device, "svcctl dns unset interface lo")],
        evidence=[h.evidence(dns.device, "svcctl dns show", "interface lo", line=True),
                  h.Evidence(client, f"dig @{dns.address} +time=1 +tries=1 lab",
                             "connection refused|no servers could be reached")],
        elements=["service:dns"],
    )  # fmt: skip


def dns_blocked(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    """The server's gateway drops DNS queries from one LAN (everything else passes)."""
    dns = _dns(spec)
    lans = [lan for lan in h.host_lans(spec) if lan.id != spec.host(dns.device).lan] if dns else []
    if not lans:
        return None
    lan = rng.choice(lans)
    g, _, _ = h.gateway(spec, spec.lan(spec.host(dns.device).lan))
    client = rng.choice(lan.hosts)
    rule = f"-s {lan.subnet} -d {dns.address}/32 -p udp -m udp --dport 53 -j DROP"
    if not taken.free(f"{FWD}@{g}"):
        return None
    return h.fault(
        "services.dns_blocked", g, FWD, placement="path",
        summary=f"{g} drops DNS queries from {lan.subnet} to the server {dns.address}",
        inject=[h.argv(g, f"iptables -I FORWARD {rule}")],
        fix=[(g, f"iptables -D FORWARD {rule}")],
        evidence=[h.evidence(g, "iptables -S FORWARD", f"-A FORWARD {rule}", line=True),
                  h.evidence(client, f"dig @{dns.address} +time=1 +tries=1 lab",
                             "no servers could be reached")],
        elements=[f"{FWD}@{g}", f"lan:{lan.id}"],
    )  # fmt: skip


def _pool(rng: random.Random, spec: NetSpec, taken: Taken):
    dns = _dns(spec)
    lans = h.host_lans(spec)
    if dns is None or len(lans) < 2 or not taken.free("service:dhcp"):
        return None
    lan = rng.choice(lans)
    return dns, lan


def dhcp_router_option_wrong(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    found = _pool(rng, spec, taken)
    if found is None:
        return None
    dns, lan = found
    right = host_gateway(spec, lan.id)
    wrong = h.unused_address(lan.subnet, h.lan_addresses(spec, lan), rng)
    option = f"tag:l{lan.id},option:router"
    return h.fault(
        "services.dhcp_router_option_wrong", dns.device, "dhcp", placement="pool",
        summary=f"the DHCP server offers {lan.subnet}'s clients {wrong} as their router, "
        f"not {right}",
        inject=[_svc(dns.device, f"dhcp set dhcp-option {option},{wrong}")],
        fix=[(dns.device, f"svcctl dhcp set dhcp-option {option},{right}")],
        evidence=[h.evidence(dns.device, "svcctl dhcp show", f"dhcp-option {option},{wrong}",
                             line=True)],
        elements=["service:dhcp", f"lan:{lan.id}"],
    )  # fmt: skip


def dhcp_range_wrong(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    found = _pool(rng, spec, taken)
    if found is None:
        return None
    dns, lan = found
    other = rng.choice([x for x in h.host_lans(spec) if x.id != lan.id])
    first, last = dhcp_range(lan.subnet)
    wrong_first, wrong_last = dhcp_range(other.subnet)
    tail = "255.255.255.0,1h"
    return h.fault(
        "services.dhcp_range_wrong", dns.device, "dhcp", placement="pool",
        summary=f"the DHCP pool of {lan.subnet} hands out {other.subnet}'s addresses: its "
        "clients get no offer",
        inject=[_svc(dns.device,
                     f"dhcp set dhcp-range set:l{lan.id},{wrong_first},{wrong_last},{tail}")],
        fix=[(dns.device, f"svcctl dhcp set dhcp-range set:l{lan.id},{first},{last},{tail}")],
        evidence=[h.evidence(dns.device, "svcctl dhcp show",
                             f"dhcp-range set:l{lan.id},{wrong_first},{wrong_last},{tail}",
                             line=True)],
        elements=["service:dhcp", f"lan:{lan.id}"],
    )  # fmt: skip


def vrrp_priority_inverted(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    if not spec.vrrp:
        return None
    g = rng.choice(spec.vrrp)
    low = rng.randint(*WRONG_PRIORITY)
    if not taken.free(f"vrrp:{g.vrid}"):
        return None
    return h.fault(
        "services.vrrp_priority_inverted", g.master, f"vrrp:{g.vrid}", placement="vrrp",
        summary=f"{g.master}, the intended master of VRRP group {g.vrid}, has priority {low}, "
        f"below {g.backup}'s: {g.backup} holds {g.vip}",
        inject=[_svc(g.master, f"vrrp set priority {g.vrid} {low}")],
        fix=[(g.master, f"svcctl vrrp set priority {g.vrid} 150")],
        evidence=[h.evidence(g.master, "svcctl vrrp show", f"priority {low}", line=True),
                  h.evidence(g.backup, "ip -4 addr show", f"inet {g.vip}/24")],
        elements=[f"vrrp:{g.vrid}"],
    )  # fmt: skip


def vrrp_vip_wrong(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    if not spec.vrrp:
        return None
    g = rng.choice(spec.vrrp)
    lan = spec.lan(g.lan)
    wrong = h.unused_address(lan.subnet, h.lan_addresses(spec, lan), rng)
    if not taken.free(f"vrrp:{g.vrid}"):
        return None
    return h.fault(
        "services.vrrp_vip_wrong", g.master, f"vrrp:{g.vrid}", placement="vrrp",
        summary=f"{g.master}, master of VRRP group {g.vrid}, announces {wrong} instead of the "
        f"VIP {g.vip}; {g.backup} drops its mismatching adverts and takes the VIP itself",
        inject=[_svc(g.master, f"vrrp set virtual_ipaddress {g.vrid} {wrong}/24")],
        fix=[(g.master, f"svcctl vrrp set virtual_ipaddress {g.vrid} {g.vip}/24")],
        evidence=[h.evidence(g.master, "svcctl vrrp show", f"{wrong}/24", line=True)],
        elements=[f"vrrp:{g.vrid}", f"lan:{g.lan}"],
    )  # fmt: skip


def _kind(
    name: str, draw, meaning: str, component: str, topologies=h.ALL, checks=("works",), masks=()
) -> None:
    define(
        "services", name, meaning, component, draw, topologies=topologies, checks=checks,
        masks=masks,
    )  # fmt: skip


_kind(
    "dns_record_wrong",
    dns_record_wrong,
    "the DNS server answers a name with a wrong address",
    "dns",
)
_kind("dns_record_missing", dns_record_missing, "the DNS server has no record for a name", "dns")
_kind(
    "dns_not_listening",
    dns_not_listening,
    "the DNS server does not listen where its clients ask",
    "dns",
    masks=("services.dns_record_wrong", "services.dns_record_missing"),
)
_kind(
    "dns_blocked",
    dns_blocked,
    "a router on the way drops one LAN's DNS queries",
    "iptables:filter:FORWARD",
    masks=("services.dns_record_wrong", "services.dns_record_missing"),
)
_kind(
    "vrrp_priority_inverted",
    vrrp_priority_inverted,
    "the intended VRRP master has a lower priority than its backup",
    "vrrp:<vrid>",
    topologies={"campus"},
    checks=("intent",),
)
_kind(
    "vrrp_vip_wrong",
    vrrp_vip_wrong,
    "a VRRP router announces the wrong virtual address",
    "vrrp:<vrid>",
    topologies={"campus"},
    checks=("intent",),
)
_kind(
    "dhcp_router_option_wrong",
    dhcp_router_option_wrong,
    "the DHCP server offers a LAN's clients the wrong router",
    "dhcp",
    checks=("works",),
)
_kind(
    "dhcp_range_wrong",
    dhcp_range_wrong,
    "a LAN's DHCP pool hands out addresses of another subnet",
    "dhcp",
)
