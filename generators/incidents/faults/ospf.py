"""OSPF faults of one interface: one end of an intended adjacency deviates from the intent.

Each is drawn on one end of an OSPF link (frr.py: `End`), so "which side" is decidable: the
other end keeps the intent's configuration, and the evidence names the deviating end's
interface. Kinds (the prompt's vocabulary; component: the deviating interface):

  ospf.area_mismatch          the link's network statement in another area on one end
  ospf.hello_mismatch         one end's hello interval differs
  ospf.dead_mismatch          one end's dead interval differs
  ospf.passive_link           a link interface made passive (no hellos)
  ospf.network_missing        a LAN's or a link's network statement missing on its router
  ospf.mtu_mismatch           one end's interface MTU below the intended 1500 (ExStart)
  ospf.auth_mismatch          authentication on one end only

ospf_paths.py has the kinds that move traffic (network type, cost, max-metric),
ospf_process.py those of a router's OSPF process. `masks`: on one hop, a fault that keeps
the neighbours from seeing each other at all (area, hello, dead, passive, network) hides
one that would show only once they do (MTU's ExStart, authentication).
"""

from __future__ import annotations

import random
import re

from generators.incidents.faults.frr import (
    DEAD,
    HELLO,
    MTU,
    End,
    choose,
    conf,
    fix_conf,
    neighbour_absent,
    ospf_ends,
    placement,
    rid,
    show,
)
from generators.incidents.faults.frr import argv as run
from generators.incidents.faults.kinds import Cause, Evidence, Fault, FaultKind, Taken, define
from generators.netlab.spec import NetSpec

OSPF_FAMILIES = frozenset({"chain", "ring", "mesh", "campus", "isp"})
LINK_MASKS = ("ospf.mtu_mismatch", "ospf.auth_mismatch")


def _end(rng: random.Random, spec: NetSpec, taken: Taken) -> End | None:
    return choose(rng, ospf_ends(spec), taken, lambda e: (e.element,))


def _fault(kind: str, spec: NetSpec, end: End, summary: str, **parts) -> Fault:
    return Fault(
        kind=kind,
        cause=Cause(end.router, end.intf, kind),
        placement=placement(spec, end.router, "link"),
        summary=summary,
        elements=frozenset({end.element}),
        **parts,
    )


def _interface(spec: NetSpec, end: End, what: str) -> Evidence:
    return show(end.router, f"show ip ospf interface {end.intf}", what)


def _gone(spec: NetSpec, end: End) -> Evidence:
    """The peer lists no neighbour with the deviating router's router-id."""
    return show(end.peer, "show ip ospf neighbor", neighbour_absent(rid(spec, end.router)))


def area_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    end = _end(rng, spec, taken)
    if end is None:
        return None
    have = {a.id for a in spec.areas}
    wrong = rng.choice([f"0.0.0.{k}" for k in range(10, 40) if f"0.0.0.{k}" not in have])
    net = end.link.subnet
    return _fault(
        "ospf.area_mismatch",
        spec,
        end,
        f"{end.router} puts {end.intf} ({net}) in area {wrong}; the intent and {end.peer} "
        f"say area {end.area}",
        inject=(
            conf(
                end.router,
                "router ospf",
                f"no network {net} area {end.area}",
                f"network {net} area {wrong}",
            ),
        ),
        fix=(
            (
                end.router,
                fix_conf(
                    "router ospf",
                    f"no network {net} area {wrong}",
                    f"network {net} area {end.area}",
                ),
            ),
        ),
        evidence=(_interface(spec, end, rf"Area {re.escape(wrong)}\b"), _gone(spec, end)),
    )


def hello_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    end = _end(rng, spec, taken)
    if end is None:
        return None
    hello = rng.choice((2, 3))
    return _fault(
        "ospf.hello_mismatch",
        spec,
        end,
        f"{end.router}'s {end.intf} says hello every {hello} s; the intent and {end.peer}: "
        f"{HELLO} s",
        inject=(conf(end.router, f"interface {end.intf}", f"ip ospf hello-interval {hello}"),),
        fix=((end.router, fix_conf(f"interface {end.intf}", f"ip ospf hello-interval {HELLO}")),),
        evidence=(_interface(spec, end, rf"Hello {hello}s,"), _gone(spec, end)),
    )


def dead_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    end = _end(rng, spec, taken)
    if end is None:
        return None
    dead = rng.choice((6, 8, 12))
    return _fault(
        "ospf.dead_mismatch",
        spec,
        end,
        f"{end.router}'s {end.intf} has a dead interval of {dead} s; the intent and "
        f"{end.peer}: {DEAD} s",
        inject=(conf(end.router, f"interface {end.intf}", f"ip ospf dead-interval {dead}"),),
        fix=((end.router, fix_conf(f"interface {end.intf}", f"ip ospf dead-interval {DEAD}")),),
        evidence=(_interface(spec, end, rf"Dead {dead}s,"), _gone(spec, end)),
    )


def passive_link(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    end = _end(rng, spec, taken)
    if end is None:
        return None
    return _fault(
        "ospf.passive_link",
        spec,
        end,
        f"{end.router}'s link interface {end.intf} (to {end.peer}) is passive in OSPF",
        inject=(conf(end.router, f"interface {end.intf}", "ip ospf passive"),),
        fix=((end.router, fix_conf(f"interface {end.intf}", "no ip ospf passive")),),
        evidence=(_interface(spec, end, r"No Hellos \(Passive interface\)"), _gone(spec, end)),
    )


def network_missing(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    """A link's network statement on one end (the adjacency goes), or a LAN's on its only
    router (the LAN leaves OSPF). Not a LAN of the isp family, which BGP announces too,
    nor a campus VLAN, which both routers of its pair announce."""
    places: list[tuple[str, str, str, str, str, str]] = []  # router, intf, net, area, el, what
    for e in ospf_ends(spec):
        places.append((e.router, e.intf, e.link.subnet, e.area, e.element, e.peer))
    if spec.family != "isp":
        for lan in spec.lans:
            if lan.area is not None and len(lan.routers) == 1 and lan.hosts:
                at = lan.routers[0]
                places.append((at.router, at.intf, lan.subnet, lan.area, f"lan:{lan.id}", ""))
    place = choose(rng, places, taken, lambda p: (p[4],))
    if place is None:
        return None
    router, intf, net, area, element, peer = place
    if peer:
        seen = show(peer, "show ip ospf neighbor", neighbour_absent(rid(spec, router)))
        what = f"its link to {peer} ({intf}, {net})"
    else:
        other = next(e.peer for e in ospf_ends(spec) if e.router == router)
        seen = show(other, f"show ip route {net}", r"% Network not in table")
        what = f"its LAN {net} ({intf})"
    return Fault(
        kind="ospf.network_missing",
        cause=Cause(router, intf, "ospf.network_missing"),
        placement=placement(spec, router, "link" if peer else "lan"),
        summary=f"{router}'s OSPF has no network statement for {what}",
        inject=(conf(router, "router ospf", f"no network {net} area {area}"),),
        fix=((router, fix_conf("router ospf", f"network {net} area {area}")),),
        evidence=(show(router, f"show ip ospf interface {intf}", "OSPF not enabled"), seen),
        elements=frozenset({element}),
    )


def mtu_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    end = _end(rng, spec, taken)
    if end is None:
        return None
    mtu = rng.choice((1400, 1450, 1476, 1492))
    peer_rid = rid(spec, end.peer)
    # An adjacency already Full never looks at the MTU again: the trusted injection
    # restarts it, as a reboot or a flap would.
    return _fault(
        "ospf.mtu_mismatch",
        spec,
        end,
        f"{end.router}'s {end.intf} has MTU {mtu}; the intent and {end.peer}: {MTU}",
        inject=(
            run(end.router, "ip", "link", "set", end.intf, "mtu", str(mtu)),
            conf(end.router, f"do clear ip ospf neighbor {peer_rid}"),
        ),
        fix=((end.router, f"ip link set {end.intf} mtu {MTU}"),),
        evidence=(
            show(end.router, f"show ip ospf interface {end.intf}", rf"MTU {mtu} bytes"),
            show(end.router, "show ip ospf neighbor", rf"(?m)^{re.escape(peer_rid)}\s.*ExStart"),
        ),
    )


AUTH_KEYS = ("S3cret", "ospfkey", "Backb0ne", "k3y2024")


def auth_mismatch(rng: random.Random, spec: NetSpec, taken: Taken) -> Fault | None:
    end = _end(rng, spec, taken)
    if end is None:
        return None
    key = rng.choice(AUTH_KEYS)
    if rng.random() < 0.5:
        lines = ("ip ospf authentication message-digest", f"ip ospf message-digest-key 1 md5 {key}")
        undo = ("no ip ospf message-digest-key 1", "no ip ospf authentication")
        seen, what = r"Cryptographic authentication enabled", "MD5"
    else:
        lines = ("ip ospf authentication", f"ip ospf authentication-key {key}")
        undo = ("no ip ospf authentication-key", "no ip ospf authentication")
        seen, what = r"Simple password authentication enabled", "simple password"
    return _fault(
        "ospf.auth_mismatch",
        spec,
        end,
        f"{end.router}'s {end.intf} requires {what} authentication; the intent and "
        f"{end.peer}: none",
        inject=(conf(end.router, f"interface {end.intf}", *lines),),
        fix=((end.router, fix_conf(f"interface {end.intf}", *undo)),),
        evidence=(_interface(spec, end, seen), _gone(spec, end)),
    )


def _kind(
    name: str,
    meaning: str,
    draw,
    topologies=OSPF_FAMILIES,
    checks=("works", "intent"),
    masks: tuple[str, ...] = (),
    component: str = "the deviating interface (r7-eth2)",
) -> FaultKind:
    return define(
        "ospf", name, meaning, component, draw, topologies=topologies, checks=checks, masks=masks
    )


_kind(
    "area_mismatch",
    "one end of an OSPF link has the link's network in another area",
    area_mismatch,
    masks=(*LINK_MASKS, "ospf.hello_mismatch", "ospf.dead_mismatch"),
)
_kind(
    "hello_mismatch",
    "one end of an OSPF link sends hellos at another interval",
    hello_mismatch,
    masks=(*LINK_MASKS, "ospf.dead_mismatch"),
)
_kind(
    "dead_mismatch",
    "one end of an OSPF link has another dead interval",
    dead_mismatch,
    masks=LINK_MASKS,
)
_kind(
    "passive_link",
    "an interface towards an OSPF neighbour is passive",
    passive_link,
    masks=(*LINK_MASKS, "ospf.area_mismatch", "ospf.hello_mismatch", "ospf.dead_mismatch"),
)
_kind(
    "network_missing",
    "a router's OSPF lacks the network statement of one of its LANs or links",
    network_missing,
    masks=LINK_MASKS,
    component="the interface whose network is not in OSPF (r7-eth0)",
)
_kind(
    "mtu_mismatch",
    "one end of an OSPF link has an interface MTU other than the intended 1500",
    mtu_mismatch,
    component="the interface whose MTU differs from the intent",
)
_kind(
    "auth_mismatch",
    "one end of an OSPF link requires authentication the intent does not have",
    auth_mismatch,
    masks=("ospf.mtu_mismatch",),
)
