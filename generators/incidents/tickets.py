"""The user's ticket of a level 7-8 query: one symptom, as far from its causes as it gets.

A ticket names one violation of the faulty network as a user or a monitoring system would
report it: a host pair that does not answer (preferred: what users feel), large packets
that stall, a name that does not resolve, and where no flow is lost, a path or ECMP intent
or an adjacency that monitoring flags; last, a flow a security audit finds open. Among the
candidates it takes the one whose endpoints are farthest, in router hops, from every
fault's device (`distance`), so the agent starts from a symptom and has to find the cause;
ties go to the first in sorted order, so the same network gives the same ticket. The
wording is drawn from the query's own stream among a few phrasings, so tickets of one lab
and pair still read differently.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from generators.netlab.spec import NetSpec

# A closed flow comes last: the security policy's open flows (faults/security.py) end on
# the faulty router itself, so such a ticket would point at a fault that is silent by
# design; it is the ticket only when nothing else is reported.
PREFERENCE = ("works:icmp", "works:tcp", "works:udp", "works:large", "works:name",
              "intent:path", "intent:ecmp", "intent:adjacency", "intent:session",
              "intent:route", "closed")  # fmt: skip


DISTANT = {"small": 2, "medium": 3, "large": 3, "xlarge": 3}  # hops of a distant symptom


@dataclass(frozen=True)
class Ticket:
    violation: str  # the violation id it reports
    text: str
    distance: int  # router hops from the nearest fault's device to its nearest endpoint

    def to_json(self) -> dict:
        return {"violation": self.violation, "text": self.text, "distance": self.distance}


def graph(spec: NetSpec) -> dict[str, set[str]]:
    """Routers and their neighbours over router-router links (spares too: they are
    cables), plus hosts and switches hung off their LAN's routers."""
    g: dict[str, set[str]] = {d: set() for d in spec.devices}
    for x in spec.links:
        g[x.a].add(x.b)
        g[x.b].add(x.a)
    for lan in spec.lans:
        members = [*lan.hosts, *([lan.switch] if lan.switch else [])]
        for a in lan.routers:
            for m in members:
                g[a.router].add(m)
                g[m].add(a.router)
    return g


def hops(g: dict[str, set[str]], source: str) -> dict[str, int]:
    """Router hops from `source` (a host or switch counts as its router's place)."""
    seen = {source: 0}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for peer in g.get(node, ()):
            if peer not in seen:
                seen[peer] = seen[node] + 1
                queue.append(peer)
    return seen


def endpoints(violation: str) -> tuple[str, ...]:
    """The devices a violation id names (`works:icmp:h1_1>h2_3` -> h1_1, h2_3)."""
    parts = violation.split(":")
    if parts[0] in ("works", "closed") and len(parts) >= 3:
        return tuple(parts[2].split(">")) if ">" in parts[2] else (parts[2],)
    if parts[0] == "intent" and len(parts) >= 3:
        return tuple(parts[2].split(">"))
    return ()


def distance(spec: NetSpec, devices: Iterable[str], violation: str) -> int:
    return Distances(spec, devices)(violation)


class Distances:
    """Router hops from the nearest of `devices` to a violation's nearest endpoint."""

    def __init__(self, spec: NetSpec, devices: Iterable[str]) -> None:
        g = graph(spec)
        self.tables = [hops(g, d) for d in devices]
        self.routers = {r.name for r in spec.routers}
        self.sources = list(devices)

    def __call__(self, violation: str) -> int:
        best = None
        for source, table in zip(self.sources, self.tables, strict=True):
            for end in endpoints(violation):
                d = table.get(end)
                if d is None:
                    continue
                # a host or switch sits one hop off its router: count router hops only
                d = max(0, d - sum(1 for x in (source, end) if x not in self.routers))
                best = d if best is None else min(best, d)
        return best if best is not None else 0


def choose(
    spec: NetSpec, violations: Iterable[str], causes: Iterable[str], rng: random.Random
) -> Ticket | None:
    """The ticket of a faulty network (see the module docstring); None when nothing it
    violates can be reported as one."""
    far = Distances(spec, causes)
    found = sorted(v for v in violations if v.startswith(PREFERENCE))
    if not found:
        return None
    rank = {p: i for i, p in enumerate(PREFERENCE)}

    def order(v: str) -> tuple[int, int, str]:
        kind = next(p for p in PREFERENCE if v.startswith(p))
        return (-far(v), rank[kind], v)

    best = min(found, key=order)
    return Ticket(best, words(spec, best, rng), far(best))


def _addr(spec: NetSpec, device: str) -> str:
    try:
        return spec.host(device).address.split("/")[0]
    except KeyError:
        return device


def words(spec: NetSpec, violation: str, rng: random.Random) -> str:
    parts = violation.split(":")
    head = ":".join(parts[:2])
    if head in ("works:icmp", "works:tcp", "works:udp", "works:large"):
        src, dst = parts[2].split(">")
        a, b = f"{src} ({_addr(spec, src)})", f"{dst} ({_addr(spec, dst)})"
        if head == "works:large":
            return rng.choice((
                f"Ticket: file transfers from {a} to {b} stall; small pings get through.",
                f"Ticket: {a} reaches {b}, but full-size packets (1,500 bytes) never arrive.",
            ))  # fmt: skip
        proto = parts[1].upper()
        return rng.choice((
            f"Ticket: a user on {a} cannot reach {b} ({proto}).",
            f"Ticket: {b} does not answer {a} over {proto}.",
            f"Ticket: since this morning {a} has lost {b} ({proto}).",
        ))  # fmt: skip
    if head == "works:name":
        return f"Ticket: a user on {parts[2]} cannot resolve {parts[3]}."
    if parts[0] == "closed":
        src, dst = parts[2].split(">")
        return (
            f"Ticket (security audit): {src} reaches {dst} over {parts[1].upper()}, and must not."
        )
    if head == "intent:path":
        src, dst = parts[2].split(">")
        return (
            f"Ticket (monitoring): traffic from {src} to {dst} no longer takes its intended path."
        )
    if head == "intent:ecmp":
        return (
            f"Ticket (monitoring): {parts[2]} no longer spreads traffic to "
            f"{':'.join(parts[3:])} over its intended next hops."
        )
    if head == "intent:adjacency":
        return f"Ticket (monitoring): an OSPF adjacency of {parts[2]} is not Full."
    if head == "intent:session":
        return f"Ticket (monitoring): a BGP session of {parts[2]} is not Established."
    return f"Ticket (monitoring): {parts[2]} does not learn {':'.join(parts[3:])} as intended."


def may_be_distant(spec: NetSpec) -> bool:
    """Whether some host of the lab is DISTANT router hops from some router: a ticket can be
    a distant symptom there. Leaf-spine labs (2 hops at every size) and medium campus labs
    (2) hold none, so a level 7-8 query there is composed by a masking pair or not at all."""
    g = graph(spec)
    routers = {r.name for r in spec.routers}
    hosts = {h.name for h in spec.hosts}
    need = DISTANT[spec.size] + 1  # a host sits one hop off its router
    return any(d >= need for r in routers for end, d in hops(g, r).items() if end in hosts)
