"""How many distinct routing queries a level holds: a counting formula over the draws.

A key is the topology and the faults as injected (generator.fault_key), except that a
free number does not make another query: the ip-rule preference (900 values), the MTU
(12) and the foreign address (187 x 256 x 254) a variant draws count once (the agent
finds and fixes the same thing whichever was drawn). Per topology of N subnets and M
hosts, the faults a draw can make (with the free numbers' counts, which `free=True`
multiplies in for comparison):

  disable_routing    3 (ip_forward, FORWARD policy, FORWARD rule) + 900 (ip rule pref)
                     + N (a subnet's traffic dropped)
  disable_interface  N (router side down) + 12 N (MTU 68-79) + N M (a host's side down)
  remove_ip          N (1 flush + 12,159,488 foreign + N - 1 other subnet + P prefix
                     lengths, P = 3 when M >= 3 else 2)
  drop_traffic       5 N (a tbf; ICMP to or from, DROP or REJECT)
  wrong_routing      N (N - 1) (3 + 2 M) (wrong interface, dead gateway, M hosts as
                     gateway, high metric, M hosts as a loop)

Level 1 sums one type over the level's topologies; a pair (levels 2 and 3) multiplies
the first type's count by the second's on the subnets the first left (N - 2: a lower
bound, the generator falls back to used subnets when none is left). Validity is checked
on live labs and not counted: the formula counts draws, which the measured rejection
rates (a few percent) barely dent, so `exact` is False. With the free numbers counted,
the same formula gives the number of draws that differ at all, shown in `how`.
"""

from __future__ import annotations

import math
import random

from generators.routing.config import RoutingConfig
from generators.routing.faults import TYPES
from generators.routing.frr.faults import level_types
from generators.routing.frr.generator import routers_range
from generators.routing.generator import PAIRS, draw, fault_key
from pipeline.api import SEED_SLOTS, Capacity, key_slot

FOREIGN = 187 * 256 * 254  # 10.64-250.x.1-254
PREFS = 900
MTUS = 12


def count(kind: str, subnets: int, hosts: int, free: bool = True) -> int:
    """Faults of `kind` a draw can make on a topology (`free`: count free operands)."""
    n, m = max(subnets, 0), hosts
    prefs, mtus, foreign = (PREFS, MTUS, FOREIGN) if free else (1, 1, 1)
    if kind == "disable_routing":
        return 3 + prefs + n
    if kind == "disable_interface":
        return n + mtus * n + n * m
    if kind == "remove_ip":
        return n * (1 + foreign + max(n - 1, 0) + (3 if m >= 3 else 2))
    if kind == "drop_traffic":
        return 5 * n
    if kind == "wrong_routing":
        return n * max(n - 1, 0) * (3 + 2 * m)
    raise ValueError(f"unknown fault type {kind!r}")


def _topologies(cfg: RoutingConfig, level: int) -> list[tuple[int, int]]:
    size = cfg.sizes[level - 1]
    return [
        (n, m)
        for n in range(size.subnets[0], size.subnets[1] + 1)
        for m in range(size.hosts[0], size.hosts[1] + 1)
    ]


def operations(level: int) -> list[tuple[str, ...]]:
    return [(t,) for t in TYPES] if level == 1 else [tuple(p) for p in PAIRS[level]]


def by_operation(cfg: RoutingConfig, level: int, free: bool = True) -> dict[str, int]:
    out = {}
    for kinds in operations(level):
        total = 0
        for n, m in _topologies(cfg, level):
            if len(kinds) == 1:
                total += count(kinds[0], n, m, free)
            else:
                total += count(kinds[0], n, m, free) * count(kinds[1], n - 2, m, free)
        out["+".join(sorted(kinds))] = total
    return out


ENUMERATE_BELOW = 5_000  # levels this small are enumerated by drawing (cheap, no lab)
MAX_DRAWS = 400_000


def slot_counts(cfg: RoutingConfig, level: int, total: int) -> list[int] | None:
    """Keys per seed slot, by drawing until every one of the `total` keys was seen (the
    draws touch no lab); None if they were not all seen within MAX_DRAWS."""

    keys: set[str] = set()
    for i in range(MAX_DRAWS):
        topo, faults = draw(cfg, level, random.Random(f"capacity:{level}:{i}"))
        keys.add(fault_key(topo, faults))
        if len(keys) == total:
            counts = [0] * SEED_SLOTS
            for key in keys:
                counts[key_slot(key)] += 1
            return counts
    return None


def per_seed(cfg: RoutingConfig, level: int, total: int) -> tuple[int, str]:
    """What one seed can get: its slot's keys (types are drawn at random, not in turn):
    counted when the level is small, else a lower bound on the smallest slot's share
    (a slot holds ~ Binomial(total, 1/4) keys; four standard deviations below its mean)."""
    if total <= ENUMERATE_BELOW:
        counts = slot_counts(cfg, level, total)
        if counts is not None:
            return min(counts), f"keys per slot counted by drawing: {counts}"
    share = total / SEED_SLOTS
    spread = math.sqrt(total * (1 / SEED_SLOTS) * (1 - 1 / SEED_SLOTS))
    return max(0, math.floor(share - 4 * spread)), "per seed: a lower bound on a slot's share"


def capacity(cfg: RoutingConfig, level: int) -> Capacity:
    if level >= 4:
        return frr_capacity(cfg, level)
    found = by_operation(cfg, level, free=False)
    with_numbers = by_operation(cfg, level, free=True)
    total = sum(found.values())
    one_seed, how_seed = per_seed(cfg, level, total)
    return Capacity(
        total=total,
        by_operation=found,
        exact=False,
        per_seed=one_seed,
        how=(
            "counting formula over the draws (generators/routing/capacity.py), validity on "
            f"live labs not counted; a free number (rule preference, MTU, foreign address) "
            f"makes no new query: with them, {sum(with_numbers.values()):,} draws differ; "
            f"{how_seed}"
        ),
    )


def frr_count(kind: str, level: int, routers: int) -> int:
    """Faults of `kind` a level 4-5 draw can make on a chain of `routers` (free numbers
    counted once: generators/routing/generator.py FREE_NUMBER)."""
    n = routers
    a = n // 2 if level == 5 else n
    sides = 2 * (n - 1 - (1 if level == 5 else 0))  # both ends of every OSPF link
    counts = {
        "ospf_area": sides,
        "ospf_timers": 2 * sides,  # hello or dead
        "ospf_passive": sides,
        "ospf_network": n,
        "bgp_neighbor": 2,
        "bgp_remote_as": 2 * 2,  # its own AS or another
        "bgp_filter": 2 * 2 * (a + (n - a)),  # side, prefix-list or route-map, in/out LAN
        "bgp_network": a + (n - a),
        "drop_traffic": n * (n - 1) * 2 * 2,  # router, LAN, from/to, DROP/REJECT
    }
    return counts[kind]


def frr_capacity(cfg: RoutingConfig, level: int) -> Capacity:
    from itertools import combinations, product

    cats = level_types(level, cfg.faults)
    low, high = routers_range(cfg, level)
    found: dict[str, int] = {}
    for n in range(low, high + 1):
        if level == 4:
            pool = list(cats["ospf"])
            combos = list(combinations(pool, 2)) if len(pool) > 1 else [(pool[0], pool[0])]
        else:
            combos = list(product(*(t for t in cats.values() if t)))
        for combo in combos:
            total = 1
            for kind in combo:
                total *= frr_count(kind, level, n)
            key = "+".join(sorted(combo))
            found[key] = found.get(key, 0) + total
    total = sum(found.values())
    share = total / SEED_SLOTS
    spread = math.sqrt(total * (1 / SEED_SLOTS) * (1 - 1 / SEED_SLOTS))
    return Capacity(
        total=total,
        by_operation=found,
        exact=False,
        per_seed=max(0, math.floor(share - 4 * spread)),
        how=(
            "counting formula over the FRR draws (generators/routing/capacity.py frr_count), "
            "faults on the same router counted as on different ones, validity on live labs "
            "not counted; per seed: a lower bound on a slot's share"
        ),
    )
