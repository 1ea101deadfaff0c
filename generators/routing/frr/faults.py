"""FRR faults of levels 4 and 5: OSPF, BGP and data-plane, each with its injection and fix.

A fault is a `generators.routing.faults.Fault`: injections are trusted argv lists the
app runs itself (`vtysh -c ...` through the router's own socket, or a kernel tool on the
device); fixes are the oracle's replies, sent through the command sandbox as an agent's
would be. `subnets` records the routers a fault touches, so the faults of one query are
drawn on different routers where the topology allows.

Types (the `operation` labels):
  ospf_area      one side of a link's `network` statement in area 0.0.0.1 (area mismatch)
  ospf_timers    one side's hello (or dead) interval differs from its neighbour's
  ospf_passive   a link interface made passive (no hellos, no adjacency)
  ospf_network   a router's LAN missing from its OSPF `network` statements
  bgp_neighbor   a border router's neighbour configured at a wrong address
  bgp_remote_as  a border router expects the wrong AS from its peer
  bgp_filter     a prefix-list or route-map on the session denies a LAN (in or out)
  bgp_network    a border router's `network` statement for a LAN of its AS is missing
  drop_traffic   a router's iptables FORWARD chain drops a LAN's traffic (data plane)
Not drawn: a cost that steers traffic onto a broken path needs a second path, which a
chain has not (see README, routing levels 4-5).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping

from generators.routing.faults import Fault
from generators.routing.frr.topology import ASNS, DEAD, HELLO, FrrTopology
from pipeline.api import weighted_choice

OSPF = ("ospf_area", "ospf_timers", "ospf_passive", "ospf_network")
BGP = ("bgp_neighbor", "bgp_remote_as", "bgp_filter", "bgp_network")
DATA = ("drop_traffic",)
TYPES = (*OSPF, *BGP, *DATA)
CATEGORY = {
    **dict.fromkeys(OSPF, "ospf"),
    **dict.fromkeys(BGP, "bgp"),
    **dict.fromkeys(DATA, "data"),
}


def vtysh(*lines: str) -> tuple[str, ...]:
    out: list[str] = ["vtysh"]
    for line in lines:
        out += ["-c", line]
    return tuple(out)


def fix_command(*lines: str) -> str:
    """The oracle's vtysh reply: one command, the lines as -c arguments."""
    return "vtysh " + " ".join(f"-c '{line}'" for line in lines)


def _link_side(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> tuple[int, int, str]:
    """(link k, router index on the chosen side, its interface on link k)."""
    links = [k for k in topo.ospf_links if not {k, k + 1} & avoid] or list(topo.ospf_links)
    k = links[rng.randrange(len(links))]
    if rng.random() < 0.5:
        return k, k, topo.right(k)
    return k, k + 1, topo.left(k + 1)


def ospf_area(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    k, r, intf = _link_side(rng, topo, avoid)
    area = rng.choice(["0.0.0.1", "0.0.0.2", "0.0.0.10"])
    net = topo.link(k)
    return Fault(
        "ospf_area",
        "area_mismatch",
        f"r{r} has {net} ({intf}) in area {area}; its neighbour in area 0",
        (
            (
                f"r{r}",
                vtysh(
                    "configure terminal",
                    "router ospf",
                    f"no network {net} area 0",
                    f"network {net} area {area}",
                ),
            ),
        ),
        (
            (
                f"r{r}",
                fix_command(
                    "configure terminal",
                    "router ospf",
                    f"no network {net} area {area}",
                    f"network {net} area 0",
                ),
            ),
        ),
        (k, k + 1),
    )


def ospf_timers(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    k, r, intf = _link_side(rng, topo, avoid)
    if rng.random() < 0.5:
        hello = rng.choice([2, 3, 5])
        variant, lines = (
            "hello",
            (f"ip ospf hello-interval {hello}", f"ip ospf dead-interval {4 * hello}"),
        )
        what = f"hello {hello} s / dead {4 * hello} s"
    else:
        dead = rng.choice([6, 8, 12])
        variant, lines = "dead", (f"ip ospf dead-interval {dead}",)
        what = f"dead interval {dead} s"
    return Fault(
        "ospf_timers",
        variant,
        f"r{r}'s {intf} has {what}; its neighbour hello {HELLO} s / dead {DEAD} s",
        ((f"r{r}", vtysh("configure terminal", f"interface {intf}", *lines)),),
        (
            (
                f"r{r}",
                fix_command(
                    "configure terminal",
                    f"interface {intf}",
                    f"ip ospf hello-interval {HELLO}",
                    f"ip ospf dead-interval {DEAD}",
                ),
            ),
        ),
        (k, k + 1),
    )


def ospf_passive(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    k, r, intf = _link_side(rng, topo, avoid)
    return Fault(
        "ospf_passive",
        "link_passive",
        f"r{r}'s link interface {intf} is passive in OSPF",
        ((f"r{r}", vtysh("configure terminal", f"interface {intf}", "ip ospf passive")),),
        ((f"r{r}", fix_command("configure terminal", f"interface {intf}", "no ip ospf passive")),),
        (k, k + 1),
    )


def _router(rng: random.Random, candidates: list[int], avoid: set[int]) -> int:
    free = [i for i in candidates if i not in avoid] or candidates
    return free[rng.randrange(len(free))]


def ospf_network(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    # At level 5 a border router's own LAN stays reachable through BGP from the other AS
    # but not inside its own: still a loss, so every router is a candidate.
    r = _router(rng, list(topo.rs), avoid)
    lan = topo.lan(r)
    return Fault(
        "ospf_network",
        "lan_missing",
        f"r{r}'s OSPF has no network statement for its LAN {lan}",
        ((f"r{r}", vtysh("configure terminal", "router ospf", f"no network {lan} area 0")),),
        ((f"r{r}", fix_command("configure terminal", "router ospf", f"network {lan} area 0")),),
        (r,),
    )


def _border(rng: random.Random, topo: FrrTopology) -> tuple[int, int, str, int]:
    """(border router, its AS, its peer's address, the peer's AS)."""
    b = rng.choice(topo.borders)
    mine = topo.asn(b)
    return b, mine, topo.bgp_peer(b), ASNS[1] if mine == ASNS[0] else ASNS[0]


def bgp_neighbor(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    b, mine, peer, other = _border(rng, topo)
    wrong = f"10.100.{topo.split}.{rng.choice([5, 6, 9, 10])}"
    return Fault(
        "bgp_neighbor",
        "wrong_address",
        f"r{b} has its eBGP neighbour at {wrong} instead of {peer}",
        (
            (
                f"r{b}",
                vtysh(
                    "configure terminal",
                    f"router bgp {mine}",
                    f"no neighbor {peer}",
                    f"neighbor {wrong} remote-as {other}",
                ),
            ),
        ),
        (
            (
                f"r{b}",
                fix_command(
                    "configure terminal",
                    f"router bgp {mine}",
                    f"no neighbor {wrong}",
                    f"neighbor {peer} remote-as {other}",
                    f"neighbor {peer} timers connect 1",
                    f"neighbor {peer} advertisement-interval 0",
                ),
            ),
        ),
        topo.borders,
    )


def bgp_remote_as(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    b, mine, peer, other = _border(rng, topo)
    wrong = rng.choice([mine, 65003, 65020, 64512])
    return Fault(
        "bgp_remote_as",
        "own_as" if wrong == mine else "wrong_as",
        f"r{b} expects AS {wrong} from its peer {peer}, which is AS {other}",
        (
            (
                f"r{b}",
                vtysh(
                    "configure terminal", f"router bgp {mine}", f"neighbor {peer} remote-as {wrong}"
                ),
            ),
        ),
        (
            (
                f"r{b}",
                fix_command(
                    "configure terminal", f"router bgp {mine}", f"neighbor {peer} remote-as {other}"
                ),
            ),
        ),
        topo.borders,
    )


def bgp_filter(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    b, mine, peer, _ = _border(rng, topo)
    direction = rng.choice(["in", "out"])
    # In: a LAN of the other AS is refused; out: one of its own AS is not sent.
    owners = [i for i in topo.rs if (topo.asn(i) == mine) == (direction == "out")]
    lan = topo.lan(owners[rng.randrange(len(owners))])
    name = f"FILTER-{direction.upper()}"
    kind = rng.choice(["prefix_list", "route_map"])
    lists = (
        f"ip prefix-list {name} seq 5 deny {lan}",
        f"ip prefix-list {name} seq 10 permit 0.0.0.0/0 le 32",
    )
    if kind == "prefix_list":
        attach = f"neighbor {peer} prefix-list {name} {direction}"
        setup = lists
    else:
        attach = f"neighbor {peer} route-map {name} {direction}"
        setup = (
            f"ip prefix-list {name}-DENY seq 5 permit {lan}",
            f"route-map {name} deny 10",
            f"match ip address prefix-list {name}-DENY",
            "exit",
            f"route-map {name} permit 20",
            "exit",
        )
    return Fault(
        "bgp_filter",
        f"{kind}_{direction}",
        f"r{b}'s {kind.replace('_', '-')} {name} ({direction}) on its session with {peer} "
        f"denies {lan}",
        (
            (
                f"r{b}",
                vtysh(
                    "configure terminal",
                    *setup,
                    f"router bgp {mine}",
                    "address-family ipv4 unicast",
                    attach,
                ),
            ),
        ),
        (
            (
                f"r{b}",
                fix_command(
                    "configure terminal",
                    f"router bgp {mine}",
                    "address-family ipv4 unicast",
                    f"no {attach}",
                ),
            ),
        ),
        topo.borders,
    )


def bgp_network(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    b, mine, _, _ = _border(rng, topo)
    own = list(topo.as_routers(mine))
    lan = topo.lan(own[rng.randrange(len(own))])
    return Fault(
        "bgp_network",
        "network_missing",
        f"r{b} does not announce {lan} (its network statement is missing)",
        (
            (
                f"r{b}",
                vtysh(
                    "configure terminal",
                    f"router bgp {mine}",
                    "address-family ipv4 unicast",
                    f"no network {lan}",
                ),
            ),
        ),
        (
            (
                f"r{b}",
                fix_command(
                    "configure terminal",
                    f"router bgp {mine}",
                    "address-family ipv4 unicast",
                    f"network {lan}",
                ),
            ),
        ),
        topo.borders,
    )


def drop_traffic(rng: random.Random, topo: FrrTopology, avoid: set[int]) -> Fault:
    r = _router(rng, list(topo.rs), avoid)
    k = rng.choice([i for i in topo.rs if i != r])  # a LAN whose traffic r0 forwards
    way = rng.choice(["s", "d"])
    target = rng.choice(["DROP", "REJECT"])
    rule = f"FORWARD -{way} {topo.lan(k)} -j {target}"
    return Fault(
        "drop_traffic",
        f"forward_{'from' if way == 's' else 'to'}_{target.lower()}",
        f"r{r}'s iptables {target}s forwarded traffic {'from' if way == 's' else 'to'} "
        f"{topo.lan(k)}",
        ((f"r{r}", ("iptables", "-A", *rule.split())),),
        ((f"r{r}", f"iptables -D {rule}"),),
        (r,),
    )


DRAW: dict[str, Callable[[random.Random, FrrTopology, set[int]], Fault]] = {
    "ospf_area": ospf_area,
    "ospf_timers": ospf_timers,
    "ospf_passive": ospf_passive,
    "ospf_network": ospf_network,
    "bgp_neighbor": bgp_neighbor,
    "bgp_remote_as": bgp_remote_as,
    "bgp_filter": bgp_filter,
    "bgp_network": bgp_network,
    "drop_traffic": drop_traffic,
}


def level_types(level: int, allowed: list[str] | None) -> dict[str, tuple[str, ...]]:
    """The fault types a level draws from, per category (app.faults narrows them)."""
    keep = (lambda t: True) if allowed is None else (lambda t: t in allowed)
    cats = {"ospf": OSPF} if level == 4 else {"ospf": OSPF, "bgp": BGP, "data": DATA}
    return {c: tuple(t for t in types if keep(t)) for c, types in cats.items()}


def combinations_of(level: int, allowed: list[str] | None) -> list[tuple[str, ...]]:
    """Every combination of types a level can draw, as its operation label sorts them."""
    cats = level_types(level, allowed)
    if level == 4:
        pool = list(cats["ospf"])
        return list(itertools.combinations(pool, 2)) if len(pool) > 1 else [(pool[0], pool[0])]
    return list(itertools.product(*(t for t in cats.values() if t)))


def draw_types(
    rng: random.Random,
    level: int,
    allowed: list[str] | None,
    weights: Mapping[str, float] | None = None,
) -> list[str]:
    """L4: two OSPF faults of different types (the same type twice only when app.faults
    leaves one); L5: one OSPF, one BGP and one data-plane fault (a category app.faults
    empties is filled from the others). With `weights` (failure-driven sampling), the
    combination is drawn by its operation label's weight."""
    if weights is not None:
        combo = weighted_choice(
            rng, combinations_of(level, allowed), weights, label=lambda c: "+".join(sorted(c))
        )
        chosen = list(combo)
        pool = [t for t in TYPES if allowed is None or t in allowed]
        while len(chosen) < (2 if level == 4 else 3):
            chosen.append(rng.choice(pool))
        rng.shuffle(chosen)
        return chosen
    cats = level_types(level, allowed)
    if level == 4:
        pool = list(cats["ospf"])
        if len(pool) >= 2:
            return rng.sample(pool, 2)
        return [pool[0], pool[0]]
    chosen = [rng.choice(types) for types in cats.values() if types]
    pool = [t for types in cats.values() for t in types]
    while len(chosen) < 3:
        chosen.append(rng.choice(pool))
    return chosen
