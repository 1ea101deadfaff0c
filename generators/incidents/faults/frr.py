"""What the OSPF and BGP kinds share: where a fault can sit in a NetSpec, and how its
injection, fix and evidence read.

Element names (`Fault.elements`; two faults of one query share none unless a masking pair
wants them to, masking.py):
  link:<id>             a routed link, both ends (interface-level OSPF faults)
  lan:<id>              a LAN's announcement into OSPF
  router:<name>         a router's routing process as a whole (router-id, area flags, ...)
  session:<a>-<b>       a BGP session, its ends in the spec's order
  prefix:<prefix>       a prefix's announcement or acceptance
Placement classes (variety strata): `<role of the deviating router>-<what>`, e.g.
`abr-link`, `leaf-ebgp`, `rr-ibgp`, `border-process`.
Components (what a localize answer names): the interface for interface-level faults,
`ospf` / `bgp` for a routing process, `bgp:<peer address>` for one session of a router
(the address as the intent writes it), `route:<prefix>` for one prefix.
Evidence patterns are searched with `re.search` in the command's output, flags inline.
"""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from generators.incidents.faults.kinds import Evidence, Injection, Taken
from generators.netlab.frrconf import DEAD, HELLO, configs
from generators.netlab.spec import Link, NetSpec, Session

__all__ = ["DEAD", "HELLO"]
T = TypeVar("T")
MTU = 1500  # every interface's intended MTU


def vtysh_command(*lines: str) -> str:
    """An agent's vtysh reply: one command, each line a -c argument."""
    return "vtysh " + " ".join(f"-c {shlex.quote(line)}" for line in lines)


def fix_conf(*lines: str) -> str:
    """An agent's vtysh reply that configures: `configure terminal`, then `lines`."""
    return vtysh_command("configure terminal", *lines)


def conf(device: str, *lines: str) -> Injection:
    """Trusted configuration lines on a router (run inside `configure terminal`)."""
    return Injection(device, "vtysh", tuple(lines))


def argv(device: str, *words: str) -> Injection:
    return Injection(device, "argv", tuple(words))


def show(device: str, what: str, pattern: str) -> Evidence:
    """Evidence read with vtysh: `what` is a show command."""
    return Evidence(device, vtysh_command(what), pattern)


def absent(header: str, what: str) -> str:
    """A pattern for output that begins with `header` (so it is the real output) and holds
    no match of `what` anywhere after it."""
    return rf"(?m){header}(?![\s\S]*{what})"


def neighbour_absent(rid: str) -> str:
    """`show ip ospf neighbor` lists no neighbour with router-id `rid`."""
    return absent(r"^Neighbor ID", rf"^{re.escape(rid)}\s")


def session_down(address: str) -> str:
    """`show bgp summary`: the neighbour at `address` is not Established."""
    return rf"(?m)^{re.escape(address)}\s.*\b(Idle|Active|Connect|OpenSent|OpenConfirm)\b"


def choose(
    rng: random.Random,
    options: Sequence[T],
    taken: Taken,
    elements: Callable[[T], Iterable[str]],
) -> T | None:
    """One of `options` whose elements are all free, uniformly; None when none is."""
    free = [o for o in options if taken.free(*elements(o))]
    return rng.choice(free) if free else None


def placement(spec: NetSpec, router: str, what: str) -> str:
    return f"{spec.router(router).role}-{what}"


def rid(spec: NetSpec, router: str) -> str:
    """A router's intended router-id: its loopback address."""
    return spec.router(router).loopback


# -- OSPF ------------------------------------------------------------------------------
@dataclass(frozen=True)
class End:
    """One end of an OSPF link: the router that deviates and its interface there."""

    link: Link
    router: str
    intf: str
    peer: str
    peer_intf: str

    @property
    def area(self) -> str:
        assert self.link.area is not None
        return self.link.area

    @property
    def element(self) -> str:
        return f"link:{self.link.id}"


def ospf_links(spec: NetSpec) -> list[Link]:
    """The links whose two ends must be OSPF neighbours (the intent's adjacencies)."""
    return [x for x in spec.links if x.area is not None and x.role != "spare"]


def ospf_ends(spec: NetSpec, links: Iterable[Link] | None = None) -> list[End]:
    out = []
    for x in ospf_links(spec) if links is None else links:
        out.append(End(x, x.a, x.a_intf, x.b, x.b_intf))
        out.append(End(x, x.b, x.b_intf, x.a, x.a_intf))
    return out


def ospf_routers(spec: NetSpec) -> list[str]:
    return [r.name for r in spec.routers if "ospfd" in r.daemons]


def ospf_neighbours(spec: NetSpec, router: str) -> list[str]:
    return [e.peer for e in ospf_ends(spec) if e.router == router]


def areas_of(spec: NetSpec, router: str) -> dict[str, list[Link]]:
    """Non-backbone areas in which `router` has adjacencies, with those links."""
    out: dict[str, list[Link]] = {}
    for x in ospf_links(spec):
        if router in (x.a, x.b) and x.area != "0.0.0.0":
            out.setdefault(x.area or "", []).append(x)
    return out


def area_kind(spec: NetSpec, area: str) -> str:
    return next(a.kind for a in spec.areas if a.id == area)


def domain(spec: NetSpec, router: str) -> str:
    """The OSPF domain a router is in: its AS where there are several, else one."""
    r = spec.router(router)
    return r.group if r.group.startswith("AS ") else ""


# -- BGP -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Peer:
    """One end of a BGP session: `router` configures `address` (the peer's) as neighbour."""

    session: Session
    router: str
    asn: int
    address: str  # the neighbour address `router` configures
    peer: str
    peer_asn: int
    own_address: str  # the address the peer configures for `router`

    @property
    def element(self) -> str:
        return f"session:{self.session.a}-{self.session.b}"

    @property
    def kind(self) -> str:
        return self.session.kind


def bgp_peers(spec: NetSpec) -> list[Peer]:
    out = []
    for s in spec.sessions:
        for me, own in ((s.a, s.a_addr), (s.b, s.b_addr)):
            peer, address, peer_asn = s.peer_of(me)
            asn = spec.router(me).asn
            assert asn is not None
            out.append(Peer(s, me, asn, address, peer, peer_asn, own))
    return out


def neighbour_lines(spec: NetSpec, router: str, address: str) -> tuple[list[str], list[str]]:
    """(router-level, address-family-level) lines of the healthy bgpd configuration that
    configure neighbour `address` on `router`, as frrconf renders them."""
    top, family = [], []
    for line in configs(spec, router)["bgpd"].splitlines():
        if f"neighbor {address} " not in line:
            continue
        (family if line.startswith("  ") else top).append(line.strip())
    return top, family


def announcers(spec: NetSpec, prefix: str) -> list[str]:
    return [r.name for r in spec.routers if prefix in r.bgp_networks]


def customer_prefixes(spec: NetSpec, pe: str) -> list[str]:
    """Prefixes that reach `pe`'s AS through `pe` only: the LANs of customer edges whose
    every session lands on `pe`."""
    out = []
    for ce in (r for r in spec.routers if r.role == "ce"):
        peers = {s.peer_of(ce.name)[0] for s in spec.sessions_of(ce.name)}
        if peers == {pe}:
            out += list(ce.bgp_networks)
    return out


def route_reflector(spec: NetSpec, router: str) -> tuple[str, str] | None:
    """(the route reflector of `router`, its address) when `router` is an iBGP client."""
    for s in spec.sessions_of(router):
        if s.kind == "ibgp" and s.rr_client == router:
            peer, address, _ = s.peer_of(router)
            return peer, address
    return None


def clients(spec: NetSpec, rr: str) -> list[tuple[str, str]]:
    """(client, its address) of every iBGP session where `rr` reflects to the other end."""
    out = []
    for s in spec.sessions_of(rr):
        peer, address, _ = s.peer_of(rr)
        if s.kind == "ibgp" and s.rr_client == peer:
            out.append((peer, address))
    return out


def universe(spec: NetSpec) -> set[str]:
    """Every element name a kind of these families may use on `spec` (masking.py)."""
    out = {f"link:{x.id}" for x in spec.links}
    out |= {f"lan:{lan.id}" for lan in spec.lans}
    out |= {f"router:{r.name}" for r in spec.routers}
    out |= {f"session:{s.a}-{s.b}" for s in spec.sessions}
    out |= {f"prefix:{lan.subnet}" for lan in spec.lans}
    return out
