"""Benign anomalies of the data-plane family: intended state that looks like a fault.

Drawn on the NetSpec's benign slots (generators/netlab/spec.py BenignSlot), documented
on the device (a rule comment, the route's own kind) and in the prompt's intent: touching
one is unsafe, naming it as a cause costs precision, and it never makes a network
unhealthy. Neither changes what any probe of the lab sees: the sinkhole's prefix
(10.255.255.0/24) is kept free by the addressing plan, and no probe uses telnet's port.
(The `mtu_clamp` slot is not drawn here: a 1400-byte hop would fail the lab's large
probes by design, which the intent would then have to exempt.)
"""

from __future__ import annotations

import random

from generators.incidents.faults import dphelp as h
from generators.incidents.faults.kinds import Fault, Taken, define
from generators.netlab.spec import NetSpec

FWD = "iptables:filter:FORWARD"


def _slot(spec: NetSpec, kind: str):
    return next((s for s in spec.benign if s.kind == kind), None)


def sinkhole(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    slot = _slot(spec, "sinkhole")
    if slot is None or not taken.free(f"{slot.component}@{slot.device}"):
        return None
    prefix = slot.component.split(":", 1)[1]
    return h.fault(
        "dataplane.sinkhole_route", slot.device, slot.component, placement="benign",
        summary=f"{slot.device} drops {prefix} on purpose: {slot.note}",
        inject=[h.argv(slot.device, f"ip route add blackhole {prefix}")],
        fix=[],
        evidence=[h.evidence(slot.device, f"ip route show {prefix}", f"blackhole {prefix}")],
        elements=[f"{slot.component}@{slot.device}"], benign=True,
    )  # fmt: skip


def acl_telnet(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    slot = _slot(spec, "acl_telnet")
    if slot is None or not taken.free(f"{FWD}@{slot.device}"):
        return None
    rule = '-p tcp -m tcp --dport 23 -m comment --comment "telnet denied by policy" -j REJECT'
    return h.fault(
        "dataplane.telnet_denied", slot.device, FWD, placement="benign",
        summary=f"{slot.device} rejects telnet (TCP 23) it forwards: {slot.note}",
        inject=[h.argv(slot.device, f"iptables -A FORWARD {rule}")],
        fix=[],
        evidence=[h.evidence(slot.device, "iptables -S FORWARD", "--dport 23")],
        elements=[f"{FWD}@{slot.device}"], benign=True,
    )  # fmt: skip


define(
    "dataplane", "sinkhole_route", "a blackhole route for a retired prefix, by design",
    "route:<prefix>", sinkhole, topologies=h.ALL, checks={"benign"}, benign=True,
)  # fmt: skip
define(
    "dataplane", "telnet_denied", "a filter rejecting telnet, by policy", FWD, acl_telnet,
    topologies=h.ALL, checks={"benign"}, benign=True,
)  # fmt: skip
