"""What an incidents lab does, beyond host-pair echoes: the probe classes its kinds need.

One `observe(lab)` takes, in one round per class (scripts in every device's namespace at
once, emulators' `_shell`):
  flows  every host pair over ICMP, TCP and UDP, plus the internet edge's flows
         (lab.edge_flows): the in-process prober (emulators/probe.py);
  large  1500-byte ICMP echoes with DF set (`ping -M do -s 1472`) from srv1 to every host
         and back, each source's learned path MTUs flushed first: a smaller MTU anywhere
         on the way, or a lost "fragmentation needed", fails them while small flows pass;
  names  every host asks the lab's DNS server for three hosts' names, round robin (`dig
         +noall +answer`, one dig per client): the answers it got, name -> address;
  vips   which routers hold each VRRP group's VIP (the intent: its master, alone);
  leases one host per host LAN broadcasts a DHCP DISCOVER (dhcp.py): whether an OFFER
         came through the LAN's relay, in the LAN, with its gateway as router.
`Observation.differences(healthy)` lists what changed, one line each; a kind is observable
when its injection makes some class differ from the healthy lab's observation.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from emulators.probe import Flow
from generators.incidents.dhcp import leases
from generators.incidents.edge import dns_name
from generators.incidents.lab import IncidentLab, host_lans
from generators.netlab.live import host_flows

LARGE_PAYLOAD = 1472  # with 28 bytes of headers: a 1500-byte packet
SCRIPT_S = 20.0
# Before the large echoes, the source forgets the path MTUs it learned: a "fragmentation
# needed" seen while a fault was there would fail them for 10 minutes after its fix
# (net.ipv4.route.mtu_expires), judging the probes' own history, not the network.
FLUSH = "ip route flush cache; "
# Names each host asks for, round robin over every host's name, so every name is asked
# by several clients and a dead server costs a client at most this many 1 s timeouts.
NAMES_PER_CLIENT = 3


@dataclass
class Observation:
    flows: dict[Flow, bool] = field(default_factory=dict)
    large: dict[tuple[str, str], bool] = field(default_factory=dict)
    names: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)
    vips: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # host -> (the offered address is in its LAN, the router option) or None: no OFFER
    leases: dict[str, tuple[bool, str] | None] = field(default_factory=dict)

    def differences(self, healthy: Observation) -> list[str]:
        out = [
            f"flow {f.source}->{f.target} {f.protocol} {'works' if ok else 'fails'}"
            for f, ok in sorted(self.flows.items())
            if healthy.flows.get(f) != ok
        ]
        out += [
            f"large {s}->{t} {'works' if ok else 'fails'}"
            for (s, t), ok in sorted(self.large.items())
            if healthy.large.get((s, t)) != ok
        ]
        for client, answers in sorted(self.names.items()):
            want = healthy.names.get(client, frozenset())
            if answers != want:
                wrong = sorted(answers ^ want)[:3]
                out.append(f"names from {client}: {len(answers)} answers, differing {wrong}")
        out += [
            f"lease for {host}: {lease or 'no offer'}"
            for host, lease in sorted(self.leases.items())
            if healthy.leases.get(host) != lease
        ]
        out += [
            f"VRRP {vrid} held by {','.join(held) or 'nobody'}"
            for vrid, held in sorted(self.vips.items())
            if healthy.vips.get(vrid) != held
        ]
        return out


def observe(lab: IncidentLab) -> Observation:
    spec = lab.spec
    flows = host_flows(spec) + lab.edge_flows()
    seen = Observation(flows=lab.emu.probe(flows))
    server = next((h for h in spec.hosts if h.role == "server"), None)
    hosts = [h for h in spec.hosts if h.role == "host"]
    scripts: dict[str, str] = {}
    if server is not None:
        pings = [(server.name, h.name, h.address.split("/")[0]) for h in hosts] + [
            (h.name, server.name, server.address.split("/")[0]) for h in hosts
        ]
        for source, target, address in pings:
            line = (
                f"(ping -q -c 1 -W 1 -M do -s {LARGE_PAYLOAD} {address} >/dev/null 2>&1 "
                f"&& echo @large {target} ok || echo @large {target} no) & "
            )
            scripts[source] = scripts.get(source, "") + line
    dns = next((s for s in spec.services if s.kind == "dns"), None)
    if dns is not None and lab.services is not None:
        every = [dns_name(h.name) for h in spec.hosts]
        for i, h in enumerate(hosts):
            names = " ".join(every[(i + k) % len(every)] for k in range(NAMES_PER_CLIENT))
            dig = f"dig @{dns.address} +noall +answer +time=1 +tries=1 {names} 2>&1; "
            scripts[h.name] = scripts.get(h.name, "") + dig
    for g in spec.vrrp if lab.gateways else ():
        for router in (g.master, g.backup):
            scripts.setdefault(router, "ip -4 -o addr show; ")
    for source in {p[0] for p in pings} if server is not None else ():
        scripts[source] = FLUSH + scripts[source]
    # No job-control notices: a "[1]+ Done" printed after the shell's prompt would be
    # read as the start of the next script's output.
    scripts = {d: f"set +m; {s}wait" for d, s in scripts.items()}
    outputs = lab.emu._shell(scripts, timeout_s=SCRIPT_S) if scripts else {}
    for device, (_, out) in outputs.items():
        for line in out.splitlines():
            words = line.split()
            if words[:1] == ["@large"] and len(words) == 3:
                seen.large[(device, words[1])] = words[2] == "ok"
        if any(h.name == device for h in hosts) and dns is not None and lab.services:
            answers = {
                (w[0].rstrip("."), w[4])
                for w in (line.split() for line in out.splitlines())
                if len(w) == 5 and w[2:4] == ["IN", "A"]
            }
            seen.names[device] = frozenset(answers)
    for g in spec.vrrp if lab.gateways else ():
        held = tuple(r for r in (g.master, g.backup) if f" {g.vip}/" in outputs.get(r, (0, ""))[1])
        seen.vips[g.vrid] = held
    if dns is not None and lab.services is not None:
        clients = [(lan.hosts[0], spec.host(lan.hosts[0]).intf) for lan in host_lans(spec)]
        for host, offer in leases(lab.emu._ns_fds, clients).items():
            subnet = ipaddress.IPv4Network(spec.lan(spec.host(host).lan).subnet)
            inside = offer is not None and ipaddress.IPv4Address(offer.address) in subnet
            seen.leases[host] = None if offer is None else (inside, offer.router)
    return seen
