"""Silent security faults: filter mistakes that open what the security policy closes.

Large and xlarge labs carry a standing policy (security.py): every
router's INPUT chain rejects TCP and UDP port 7 from the LANs, and the closed probes of
every read check it on each router with an address on a host LAN (from one host of that
LAN, `security.probers`). These kinds break only that: no flow that must work is lost, so
"everything pings" finds none of them (`checks=("closed",)`: intent-only, drawn at level
8 and weighed up in detect queries); the evidence is one `iptables -S INPUT` on the
router, the fix the agent's own iptables. Each is placed on a probed router, so what it
opens is what that router's probe asks (the kept prefix of `narrow` is never the probing
LAN's; the LAN `shadowed` accepts is). One per router (the element `INPUT@router`), which
the benign anomaly takes too.

  dataplane.mgmt_filter_missing      both policy rules deleted
  dataplane.mgmt_filter_shadowed     an ACCEPT of everything from one LAN above them
  dataplane.mgmt_filter_narrow       both rules match one LAN's /24 instead of the range
  dataplane.mgmt_filter_wrong_proto  the TCP rule written for UDP: TCP open
  dataplane.noc_echo_allowed         (benign) one router accepts TCP 7 from a named NOC
                                     host above the rules, documented "By design"
"""

from __future__ import annotations

import dataclasses
import random

from generators.incidents.faults import dphelp as h
from generators.incidents.faults import security
from generators.incidents.faults.frr import placement
from generators.incidents.faults.kinds import Evidence, Fault, Taken, define
from generators.netlab.spec import NetSpec

INPUT = "iptables:filter:INPUT"
LIST = "iptables -S INPUT"


def _place(rng: random.Random, spec: NetSpec, taken: Taken):
    """A probed router whose INPUT chain nothing else of the query touches, or None."""
    free = [p for p in security.probers(spec) if taken.free(f"{INPUT}@{p.router}")]
    return rng.choice(free) if free else None


def _fault(kind: str, p, spec: NetSpec, **kw) -> Fault:
    return h.fault(
        kind, p.router, INPUT, placement=placement(spec, p.router, "input"),
        elements=[f"{INPUT}@{p.router}"], **kw,
    )  # fmt: skip


def _rule(rule: str, source: str) -> str:
    """A policy rule matching `source` instead of the LANs' range."""
    return f"-s {source} " + rule.replace(f" -m iprange --src-range {security.LANS}", "")


def missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    p = _place(rng, spec, taken)
    if p is None:
        return None
    tcp, udp = security.RULES
    return _fault(
        "dataplane.mgmt_filter_missing", p, spec,
        summary=f"{p.router}'s INPUT chain lost both policy rules: its echo service answers "
        "every LAN",
        inject=[h.argv(p.router, f"iptables -D INPUT {tcp}"),
                h.argv(p.router, f"iptables -D INPUT {udp}")],
        fix=[(p.router, f"iptables -A INPUT {tcp}"), (p.router, f"iptables -A INPUT {udp}")],
        # the listing shows the chain and no rule on port 7
        evidence=[Evidence(p.router, LIST, r"\A(?![\s\S]*--dport 7\b)[\s\S]*-P INPUT ")],
    )  # fmt: skip


def shadowed(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    p = _place(rng, spec, taken)
    if p is None:
        return None
    rule = f"-s {p.subnet} -j ACCEPT"
    return _fault(
        "dataplane.mgmt_filter_shadowed", p, spec,
        summary=f"{p.router} accepts everything from {p.subnet} above the policy's rules: "
        "that LAN reaches its echo service",
        inject=[h.argv(p.router, f"iptables -I INPUT 1 {rule}")],
        fix=[(p.router, f"iptables -D INPUT {rule}")],
        evidence=[h.evidence(p.router, LIST, f"-A INPUT {rule}", line=True)],
    )  # fmt: skip


def narrow(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    p = _place(rng, spec, taken)
    others = sorted(lan.subnet for lan in h.host_lans(spec) if lan.id != p.lan) if p else []
    if p is None or not others:
        return None
    kept = rng.choice(others)
    tcp, udp = (_rule(r, kept) for r in security.RULES)
    return _fault(
        "dataplane.mgmt_filter_narrow", p, spec,
        summary=f"{p.router}'s policy rules match only {kept}, not every LAN: the other LANs "
        "reach its echo service",
        inject=[h.argv(p.router, f"iptables -R INPUT 1 {tcp}"),
                h.argv(p.router, f"iptables -R INPUT 2 {udp}")],
        fix=[(p.router, f"iptables -R INPUT 1 {security.TCP_RULE}"),
             (p.router, f"iptables -R INPUT 2 {security.UDP_RULE}")],
        evidence=[h.evidence(p.router, LIST, f"-A INPUT {tcp}", line=True)],
    )  # fmt: skip


def wrong_proto(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    p = _place(rng, spec, taken)
    if p is None:
        return None
    return _fault(
        "dataplane.mgmt_filter_wrong_proto", p, spec,
        summary=f"{p.router}'s TCP policy rule was written for UDP (the UDP rule twice): its "
        "echo service answers the LANs over TCP",
        inject=[h.argv(p.router, f"iptables -R INPUT 1 {security.UDP_RULE}")],
        fix=[(p.router, f"iptables -R INPUT 1 {security.TCP_RULE}")],
        # the listing shows the UDP rule and no TCP rule on port 7
        evidence=[Evidence(p.router, LIST, r"\A(?![\s\S]*-p tcp\b)[\s\S]*-p udp .*--dport 7 ")],
    )  # fmt: skip


def noc_echo(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    """By design: one probed router also answers TCP 7 from one NOC host (never the host
    that probes it, so no probe changes)."""
    p = _place(rng, spec, taken)
    hosts = [x for x in spec.hosts if x.role == "host" and x.name != p.host] if p else []
    if p is None or not hosts:
        return None
    noc = rng.choice(hosts)
    address = h.addr(noc.address)
    rule = f"-s {address}/32 -p tcp -m tcp --dport 7 -j ACCEPT"
    fault = _fault(
        "dataplane.noc_echo_allowed", p, spec,
        summary=f"{p.router} accepts TCP port 7 from the NOC host {noc.name} ({address}) "
        "above the policy's rules, by design",
        inject=[h.argv(p.router, f"iptables -I INPUT 1 {rule}")],
        fix=[],
        evidence=[h.evidence(p.router, LIST, f"-A INPUT {rule}", line=True)],
        benign=True,
    )  # fmt: skip
    note = (
        f"{p.router} also answers TCP port 7 from the NOC host {noc.name} ({address}): its "
        "INPUT chain accepts it above the security policy's rules (monitoring)"
    )
    return dataclasses.replace(fault, placement="benign", note=note)


for _name, _draw, _meaning in (
    ("mgmt_filter_missing", missing,
     "a router's INPUT chain lacks the security policy's rules: its echo service is open"),
    ("mgmt_filter_shadowed", shadowed,
     "an ACCEPT above the security policy's rules opens a router's echo service to a LAN"),
    ("mgmt_filter_narrow", narrow,
     "a router's security policy rules match one LAN instead of every LAN"),
    ("mgmt_filter_wrong_proto", wrong_proto,
     "a router's security policy closes its echo service over UDP only, TCP is open"),
):  # fmt: skip
    define("dataplane", _name, _meaning, INPUT, _draw, topologies=h.ALL, checks=("closed",),
           sizes=security.SIZES, group="security_policy")  # fmt: skip
define(
    "dataplane", "noc_echo_allowed",
    "a router answers its echo service to one named NOC host above the security policy, "
    "by design",
    INPUT, noc_echo, topologies=h.ALL, checks={"benign"}, benign=True, sizes=security.SIZES,
)  # fmt: skip
