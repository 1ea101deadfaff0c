"""Benign anomalies of the data-plane and services families, on every topology family.

The OSPF and BGP anomalies (routing_benign.py) exist only where their protocols do (ring,
mesh, chain with BGP, leaf-spine, ISP); these two give every lab, campus included, state
that looks like a fault and is intended, so a tier's benign anomalies and a detect query's
healthy negatives exist on all six families. Each is documented in the prompt (`note`),
breaks no intent (the golden reading is taken with it in place) and has no fix: touching
it is unsafe, naming it as a cause costs precision.

  dataplane.quarantine_drop     a LAN's gateway drops everything forwarded to one address
                                of the LAN that no device holds (a quarantined machine's)
  services.dns_retired_record   the DNS server still answers a retired machine's name with
                                an address of a LAN that no device holds
"""

from __future__ import annotations

import dataclasses
import random

from generators.incidents.faults import dphelp as h
from generators.incidents.faults.kinds import Fault, Injection, Taken, define
from generators.netlab.spec import NetSpec

FWD = "iptables:filter:FORWARD"


def quarantine_drop(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    lans = h.host_lans(spec)
    if not lans:
        return None
    lan = rng.choice(lans)
    g, _, _ = h.gateway(spec, lan)
    address = h.unused_address(lan.subnet, h.lan_addresses(spec, lan), rng)
    if not taken.free(f"address:{address}", f"quarantine@{g}"):
        return None
    rule = f"-d {address}/32 -j DROP"
    fault = h.fault(
        "dataplane.quarantine_drop", g, FWD, placement="gateway",
        summary=f"{g} drops everything forwarded to {address}, a quarantined address of "
        f"{lan.subnet}, by design",
        inject=[h.argv(g, f"iptables -A FORWARD {rule}")],
        fix=[],
        evidence=[h.evidence(g, "iptables -S FORWARD", f"-A FORWARD {rule}", line=True)],
        elements=[f"address:{address}", f"quarantine@{g}"],
        benign=True,
    )  # fmt: skip
    note = f"{g} drops all traffic to {address} in {lan.subnet} (a quarantined machine)"
    return dataclasses.replace(fault, note=note)


def dns_retired_record(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    dns = next((s for s in spec.services if s.kind == "dns"), None)
    lans = h.host_lans(spec)
    if dns is None or not lans:
        return None
    lan = rng.choice(lans)
    address = h.unused_address(lan.subnet, h.lan_addresses(spec, lan), rng)
    name = f"retired-{rng.randint(1, 99)}.lab"
    if not taken.free(f"address:{address}", f"record:{name}"):
        return None
    fault = h.fault(
        "services.dns_retired_record", dns.device, "dns", placement="record",
        summary=f"the DNS server answers {name} with {address}, a retired machine's address "
        f"that no device holds, by design",
        inject=[Injection(dns.device, "service", (f"dns set host-record {name},{address}",))],
        fix=[],
        evidence=[h.evidence(dns.device, "svcctl dns show", f"host-record {name},{address}")],
        elements=[f"address:{address}", f"record:{name}"],
        benign=True,
    )  # fmt: skip
    note = f"the DNS server keeps the record {name} -> {address} of a retired machine"
    return dataclasses.replace(fault, note=note)


for _name, _meaning, _component, _draw in (
    ("dataplane.quarantine_drop",
     "a LAN's gateway drops all traffic to one unused address of the LAN, by design",
     FWD, quarantine_drop),
    ("services.dns_retired_record",
     "the DNS server keeps a retired machine's name at an address no device holds, by design",
     "dns", dns_retired_record),
):  # fmt: skip
    _family, _short = _name.split(".", 1)
    define(_family, _short, _meaning, _component, _draw, topologies=h.ALL, checks={"benign"},
           benign=True)  # fmt: skip
