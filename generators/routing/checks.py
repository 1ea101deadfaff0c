"""The routing app's intended state, probed after every step: what the network must do.

The healthy lab is open end to end, so the intended state is a set of flows that must
work (emulators/probe.py), sent together in one probe:

  icmp  every ordered pair of machines (the matrix agents see, as Mininet's pingall);
  tcp   a TCP echo on port 7 between representative pairs (below);
  udp   a UDP echo on port 7 between the same pairs.

Representative pairs cover every machine and every path through r0 at least once: each
host with r0 (both ways: r0's INPUT and OUTPUT, the host's own filters), each host with the
host of the same index in the next subnet (both ways: FORWARD for every host), every
ordered pair of subnets through their first hosts (FORWARD for every pair of subnets), and
each host with the next host of its own subnet (the switch). On the largest topology (8
subnets of 4 hosts) that is 232 pairs per protocol instead of 1,056: all pairs would cost
about 0.7 s of TCP per step there; these cost about 0.1 s.

A flow counts only when the probed address answered and the target machine received it
(an address answered by another machine fails). `Connectivity` holds one
`emulators.base.Reachability` per protocol and is what a step's evidence records. Where a
task names the mechanism as well as the traffic (levels 4-5: fix the routing protocols),
it also holds the `Gap`s between the protocol state and the intended one
(generators/routing/frr/intent.py); `repaired` needs both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from emulators.base import Emulator, Lab, Reachability
from emulators.probe import PROTOCOLS, Flow
from generators.routing.topology import RoutingTopology

SHOWN_FAILURES = 8  # failing TCP/UDP pairs listed in an observation


def representative_pairs(topo: RoutingTopology) -> list[tuple[str, str]]:
    """The ordered pairs TCP and UDP are probed on; see the module docstring."""
    pairs: dict[tuple[str, str], None] = {}

    def both(a: str, b: str) -> None:
        pairs.setdefault((a, b))
        pairs.setdefault((b, a))

    ks, js = list(topo.ks), list(topo.js)
    for k in ks:
        for j in js:
            both(topo.host(k, j), "r0")
            nxt = ks[(ks.index(k) + 1) % len(ks)]
            both(topo.host(k, j), topo.host(nxt, j))
            if len(js) > 1:
                both(topo.host(k, j), topo.host(k, js[(js.index(j) + 1) % len(js)]))
    for k in ks:
        for m in ks:
            if m != k:
                pairs.setdefault((topo.host(k, 1), topo.host(m, 1)))
    return list(pairs)


def flows(topo: RoutingTopology, lab: Lab, protocols: Sequence[str]) -> list[Flow]:
    """The flows of the intended state over `protocols`."""
    devices = lab.probed
    out = []
    for protocol in protocols:
        pairs = (
            [(s, t) for s in devices for t in devices if s != t]
            if protocol == "icmp"
            else representative_pairs(topo)
        )
        out += [Flow(s, t, lab.probe_address(s, t), protocol) for s, t in pairs]
    return out


@dataclass(frozen=True)
class Gap:
    """One part of the intended protocol state a network lacks: `kind` (ospf, bgp, learned,
    kernel, missing) and what, in words."""

    kind: str
    what: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "what": self.what}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Gap:
        return cls(str(data["kind"]), str(data["what"]))


@dataclass(frozen=True)
class Connectivity:
    """The intended state as probed: one Reachability per protocol (ICMP always) and, where
    the protocol state is judged too, its gaps (None: only traffic is judged)."""

    by_protocol: Mapping[str, Reachability]
    gaps: tuple[Gap, ...] | None = None

    @property
    def icmp(self) -> Reachability:
        return self.by_protocol["icmp"]

    @property
    def full(self) -> bool:
        """Every probed flow works."""
        return all(r.full for r in self.by_protocol.values())

    @property
    def repaired(self) -> bool:
        """Every probed flow works and nothing of the judged protocol state is missing."""
        return self.full and not self.gaps

    def lost_since(self, before: Connectivity) -> dict[str, list[tuple[str, str]]]:
        """Per protocol, the pairs that answered in `before` and do not now."""
        lost = {}
        for protocol, now in self.by_protocol.items():
            earlier = before.by_protocol.get(protocol)
            pairs = now.lost_since(earlier) if earlier is not None else []
            if pairs:
                lost[protocol] = pairs
        return lost

    def render(self) -> str:
        """The ping matrix, then a line per other protocol."""
        lines = [self.icmp.render()]
        for protocol, reach in self.by_protocol.items():
            if protocol == "icmp":
                continue
            name = protocol.upper()
            if reach.full:
                lines.append(f"{name} echo (port 7): all {reach.pairs} pairs checked answer.")
                continue
            failed = reach.failed
            shown = ", ".join(f"{s} -> {t}" for s, t in failed[:SHOWN_FAILURES])
            more = f" (and {len(failed) - SHOWN_FAILURES} more)" if len(failed) > 8 else ""
            lines.append(
                f"{name} echo (port 7): {len(failed)} of {reach.pairs} pairs checked fail: "
                f"{shown}{more}."
            )
        return "\n".join(lines)

    def evidence(self) -> dict[str, Any]:
        """Rows per protocol: {"icmp": [...], "tcp": [...], ...}."""
        return {p: r.rows() for p, r in self.by_protocol.items()}

    @classmethod
    def from_evidence(
        cls, devices: Sequence[str], rows: Mapping[str, Any], gaps: tuple[Gap, ...] | None = None
    ) -> Connectivity:
        return cls({p: Reachability.from_rows(devices, r) for p, r in rows.items()}, gaps)


def observe(emu: Emulator, topo: RoutingTopology, protocols: Sequence[str]) -> Connectivity:
    """Probe the intended state of `topo` running on `emu`."""
    lab = topo.lab()
    wanted = flows(topo, lab, protocols)
    results = emu.probe(wanted)
    devices = lab.probed
    by_protocol = {}
    for protocol in PROTOCOLS:
        if protocol not in protocols:
            continue
        mine = [f for f in wanted if f.protocol == protocol]
        ok = frozenset((f.source, f.target) for f in mine if results[f])
        probed = None if protocol == "icmp" else frozenset((f.source, f.target) for f in mine)
        by_protocol[protocol] = Reachability(devices, ok, probed)
    return Connectivity(by_protocol)
