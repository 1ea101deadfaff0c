"""BGP faults of one session end: the other end keeps the intent's configuration.

Kinds (component `bgp:<peer address>`, the session as the deviating router configures it
in the intent, unless said otherwise):

  bgp.neighbor_address      the neighbour configured at a wrong address
  bgp.remote_as             the neighbour's remote-as wrong
  bgp.md5_mismatch          a TCP MD5 password on one end only
  bgp.max_prefix            a maximum-prefix below what the peer sends: Idle (PfxCt)
  bgp.neighbor_shutdown     the neighbour administratively shut down
  bgp.ebgp_requires_policy  `bgp ebgp-requires-policy` on a router whose eBGP sessions have
                            no policies: nothing is sent or accepted (component `bgp`)

Placement classes: `<role>-ebgp` / `<role>-ibgp` (`<role>-process` for the last). A
max-prefix is drawn where the peer sends at least two prefixes (a leaf from its spine, a
customer edge from its provider, an AS border from the other AS's): a limit of one then
always trips; ebgp_requires_policy on routers whose own LANs then vanish (leaves, chain
borders, customer edges), so that a flow fails wherever it is drawn.
"""

from __future__ import annotations

import ipaddress
import random
import re

from generators.incidents.faults.frr import (
    Peer,
    bgp_peers,
    choose,
    conf,
    fix_conf,
    neighbour_lines,
    placement,
    session_down,
    show,
)
from generators.incidents.faults.kinds import Cause, Fault, FaultKind, Taken, define
from generators.netlab.spec import NetSpec

BGP_FAMILIES = frozenset({"chain", "leafspine", "isp"})
SESSION_MASKS = ("bgp.md5_mismatch", "bgp.remote_as", "bgp.neighbor_shutdown", "bgp.max_prefix")
PASSWORDS = ("S3cret", "bgpkey", "Peering1", "md5pass")


def _peer(rng: random.Random, spec: NetSpec, taken: Taken, peers=None) -> Peer | None:
    return choose(rng, bgp_peers(spec) if peers is None else peers, taken, lambda p: (p.element,))


def _fault(kind: str, spec: NetSpec, p: Peer, summary: str, **parts) -> Fault:
    return Fault(
        kind=kind,
        cause=Cause(p.router, f"bgp:{p.address}", kind),
        placement=placement(spec, p.router, p.kind),
        summary=summary,
        elements=frozenset({p.element}),
        **parts,
    )


def _peer_view(p: Peer):
    """The other end's summary shows the session down."""
    return show(p.peer, "show bgp summary", session_down(p.own_address))


def _addresses(spec: NetSpec, router: str) -> set[str]:
    out = {spec.router(router).loopback}
    for port in spec.ports_of(router):
        out |= {a.split("/")[0] for a in port.addresses}
    for bridge in spec.bridges_of(router):
        out |= {a.split("/")[0] for a in bridge.addresses}
    return out


def _wrong_address(rng: random.Random, spec: NetSpec, p: Peer) -> str:
    """A typo of the peer's address: no address of this router, nor of any router it has
    a session with (so no session of the intent can come up on it by chance)."""
    taken = _addresses(spec, p.router)
    for s in spec.sessions_of(p.router):
        taken |= _addresses(spec, s.peer_of(p.router)[0])
    base = int(ipaddress.IPv4Address(p.address))
    steps = (1, 2, -1, 3, 10, 20, 50) if p.kind == "ibgp" else (4, 8, -4, 256, 512)
    options = []
    for step in steps:
        candidate = str(ipaddress.IPv4Address(base + step))
        last = int(candidate.rsplit(".", 1)[1])
        if candidate not in taken and 0 < last < 255:
            options.append(candidate)
        if len(options) == 3:
            break
    return rng.choice(options)


def neighbor_address(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    p = _peer(rng, spec, taken)
    if p is None:
        return None
    wrong = _wrong_address(rng, spec, p)
    top, family = neighbour_lines(spec, p.router, p.address)
    moved = [line.replace(f"neighbor {p.address} ", f"neighbor {wrong} ") for line in top]
    moved_af = [line.replace(f"neighbor {p.address} ", f"neighbor {wrong} ") for line in family]
    af = ["address-family ipv4 unicast"]
    return _fault(
        "bgp.neighbor_address",
        spec,
        p,
        f"{p.router} has its neighbour {p.peer} at {wrong}; the intent: {p.address}",
        inject=(
            conf(
                p.router,
                f"router bgp {p.asn}",
                f"no neighbor {p.address}",
                *moved,
                *(af + moved_af if moved_af else []),
            ),
        ),
        fix=(
            (
                p.router,
                fix_conf(
                    f"router bgp {p.asn}",
                    f"no neighbor {wrong}",
                    *top,
                    *(af + family if family else []),
                ),
            ),
        ),
        evidence=(
            show(p.router, "show bgp summary", rf"(?m)^{re.escape(wrong)}\s"),
            _peer_view(p),
        ),
    )


def remote_as(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    # eBGP sessions only: an iBGP neighbour given another AS becomes an eBGP one, and FRR
    # drops its iBGP-only settings (route-reflector-client): a fix of the AS alone would
    # not bring the intent back, which is another fault than this one.
    p = _peer(rng, spec, taken, [p for p in bgp_peers(spec) if p.kind == "ebgp"])
    if p is None:
        return None
    others = {r.asn for r in spec.routers if r.asn} | {p.peer_asn + 1, p.peer_asn + 10}
    wrong = rng.choice(sorted(others - {p.asn, p.peer_asn}))
    return _fault(
        "bgp.remote_as",
        spec,
        p,
        f"{p.router} expects AS {wrong} from {p.peer} ({p.address}); {p.peer} is AS {p.peer_asn}",
        inject=(conf(p.router, f"router bgp {p.asn}", f"neighbor {p.address} remote-as {wrong}"),),
        fix=(
            (
                p.router,
                fix_conf(f"router bgp {p.asn}", f"neighbor {p.address} remote-as {p.peer_asn}"),
            ),
        ),
        evidence=(
            show(p.router, f"show bgp neighbors {p.address}", rf"remote AS {wrong}\b"),
            _peer_view(p),
        ),
    )


def md5_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    p = _peer(rng, spec, taken)
    if p is None:
        return None
    password = rng.choice(PASSWORDS)
    return _fault(
        "bgp.md5_mismatch",
        spec,
        p,
        f"{p.router} signs its session with {p.peer} with a TCP MD5 password; the intent "
        f"and {p.peer}: none",
        inject=(
            conf(p.router, f"router bgp {p.asn}", f"neighbor {p.address} password {password}"),
        ),
        fix=((p.router, fix_conf(f"router bgp {p.asn}", f"no neighbor {p.address} password")),),
        evidence=(
            show(p.router, "show running-config", rf"neighbor {re.escape(p.address)} password"),
            _peer_view(p),
        ),
    )


def _sent(spec: NetSpec, p: Peer) -> set[str]:
    """Prefixes the peer of `p` sends it, at least: those originated outside p's AS (in a
    leaf-spine fabric, by any other leaf)."""
    if spec.family == "leafspine":
        return {n for r in spec.routers if r.name != p.router for n in r.bgp_networks}
    return {n for r in spec.routers if r.asn != p.asn for n in r.bgp_networks}


def max_prefix(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    receivers = ("leaf", "border", "ce", "asbr")
    peers = [
        p
        for p in bgp_peers(spec)
        if p.kind == "ebgp"
        and spec.router(p.router).role in receivers
        and spec.router(p.peer).role != "ce"
        and len(_sent(spec, p)) >= 2
    ]
    p = _peer(rng, spec, taken, peers)
    if p is None:
        return None
    af = "address-family ipv4 unicast"
    return _fault(
        "bgp.max_prefix",
        spec,
        p,
        f"{p.router} accepts at most 1 prefix from {p.peer}, which sends more: the session "
        "is shut down",
        inject=(
            conf(p.router, f"router bgp {p.asn}", af, f"neighbor {p.address} maximum-prefix 1"),
        ),
        fix=(
            (
                p.router,
                fix_conf(f"router bgp {p.asn}", af, f"no neighbor {p.address} maximum-prefix 1"),
            ),
        ),
        evidence=(
            show(p.router, "show bgp summary", rf"(?m)^{re.escape(p.address)}\s.*Idle \(PfxCt\)"),
        ),
    )


def neighbor_shutdown(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    p = _peer(rng, spec, taken)
    if p is None:
        return None
    return _fault(
        "bgp.neighbor_shutdown",
        spec,
        p,
        f"{p.router}'s neighbour {p.peer} ({p.address}) is shut down; the intent: up",
        inject=(conf(p.router, f"router bgp {p.asn}", f"neighbor {p.address} shutdown"),),
        fix=((p.router, fix_conf(f"router bgp {p.asn}", f"no neighbor {p.address} shutdown")),),
        evidence=(
            show(p.router, "show bgp summary", rf"(?m)^{re.escape(p.address)}\s.*Idle \(Admin\)"),
        ),
    )


def ebgp_requires_policy(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    roles = {"leafspine": ("leaf", "border"), "chain": ("border",), "isp": ("ce",)}
    candidates = [
        r.name
        for r in spec.routers
        if r.role in roles.get(spec.family, ())
        and r.bgp_networks
        and any(s.kind == "ebgp" for s in spec.sessions_of(r.name))
    ]

    def elements(router: str) -> list[str]:
        ebgp = (s for s in spec.sessions_of(router) if s.kind == "ebgp")
        return [f"router:{router}", *(f"session:{s.a}-{s.b}" for s in ebgp)]

    router = choose(rng, candidates, taken, elements)
    if router is None:
        return None
    asn = spec.router(router).asn
    kind = "bgp.ebgp_requires_policy"
    return Fault(
        kind=kind,
        cause=Cause(router, "bgp", kind),
        placement=placement(spec, router, "process"),
        summary=f"{router} requires policies on eBGP sessions (RFC 8212) and has none: it "
        "sends and accepts nothing",
        # FRR applies the rule to sessions as they come up: the injection restarts them,
        # as the reload that brought the setting in would.
        inject=(conf(router, f"router bgp {asn}", "bgp ebgp-requires-policy", "do clear bgp *"),),
        fix=(
            (
                router,
                fix_conf(
                    f"router bgp {asn}", "no bgp ebgp-requires-policy", "end", "clear bgp * soft"
                ),
            ),
        ),
        evidence=(show(router, "show bgp summary", r"\(Policy\)"),),
        elements=frozenset(elements(router)),
    )


def _kind(
    name: str,
    meaning: str,
    draw,
    topologies=BGP_FAMILIES,
    checks=("works", "intent"),
    masks: tuple[str, ...] = (),
    component: str = "the session, as bgp:<peer address> (bgp:172.16.0.6)",
) -> FaultKind:
    return define(
        "bgp", name, meaning, component, draw, topologies=topologies, checks=checks, masks=masks
    )


_kind(
    "neighbor_address",
    "a router configures a BGP neighbour at a wrong address",
    neighbor_address,
    masks=SESSION_MASKS,
)
_kind(
    "remote_as",
    "a router expects a wrong AS from a BGP neighbour",
    remote_as,
    masks=("bgp.md5_mismatch", "bgp.neighbor_shutdown", "bgp.max_prefix"),
)
_kind(
    "md5_mismatch",
    "one end of a BGP session has a TCP MD5 password the intent does not have",
    md5_mismatch,
    masks=("bgp.remote_as", "bgp.neighbor_shutdown", "bgp.max_prefix"),
)
_kind(
    "max_prefix", "a maximum-prefix limit below what the peer sends shuts the session", max_prefix
)
_kind(
    "neighbor_shutdown",
    "a BGP neighbour the intent keeps up is shut down",
    neighbor_shutdown,
    masks=("bgp.md5_mismatch", "bgp.remote_as", "bgp.max_prefix"),
)
_kind(
    "ebgp_requires_policy",
    "a router requires policies on its eBGP sessions and has none",
    ebgp_requires_policy,
    component="bgp",
)
