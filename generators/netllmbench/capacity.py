"""How many distinct NetLLMBench queries a level holds: a lower bound by counting labs.

A key is the lab with its addressing plan and the tasks (generator.task_key), so every
lab drawn differently is another query. `lab.draw_network` draws, independently: host,
router, switch and interface naming schemes (4 x 3 x 3 x 3 = 108), the address family
(192.168/16, 256 10.a/16, 16 172.b/16: 273), the prefix length (/24 to /27) with an
ordered choice of S distinct subnets from the 2^(p-16) of the family, and whether routers
take the first or last usable address (2). Those alone give, for S LAN switches,

    108 x 273 x 2 x sum over p in 24..27 of P(2^(p-16), S)

distinct labs, already more than 10^10 for S = 2; which host hangs off which switch, the
hosts' addresses, the ping pair, the task order and (level 1) the task played only add to
it, as do the transit /30 and the split of LANs between two routers (level 3). Each
operation of a level (level 1: the kind of the task played, every lab has each kind but
`route`, which needs two routers; levels 2 and 3: `chain<n>`, n tasks; levels 4 and 5:
the scenario, goals.py) gets the count of the sizes that produce it, among the kinds or
scenarios `app.tasks` selects. Validity (the oracle's play on a live lab) is not counted:
it fails only on environment trouble.
"""

from __future__ import annotations

import math

from generators.netllmbench.config import NetLLMBenchConfig, level_size
from generators.netllmbench.goals import GOAL_LEVELS, scenarios
from pipeline.api import SEED_SLOTS, Capacity

NAMINGS = 4 * 3 * 3 * 3
FAMILIES = 1 + 256 + 16
PREFIX_LENGTHS = (24, 25, 26, 27)


def labs(switches: int) -> int:
    """The lower bound of the module docstring for `switches` LAN switches."""
    subnets = sum(math.perm(1 << (p - 16), switches) for p in PREFIX_LENGTHS)
    return NAMINGS * FAMILIES * 2 * subnets


def capacity(cfg: NetLLMBenchConfig, level: int) -> Capacity:
    size = level_size(cfg, level)
    by_op: dict[str, int] = {}
    for switches in range(size.switches[0], size.switches[1] + 1):
        for hosts in range(max(size.hosts[0], switches), size.hosts[1] + 1):
            found = labs(switches)
            if level in GOAL_LEVELS:
                for scenario in scenarios(cfg.tasks):
                    by_op[scenario.name] = by_op.get(scenario.name, 0) + found
            elif level == 1:
                kinds = ["host_ip", "router_ip", "gateway", "ping"]
                kinds += ["route"] * (size.routers == 2)
                kinds = [k for k in kinds if cfg.tasks is None or k in cfg.tasks]
                for kind in kinds:
                    by_op[kind] = by_op.get(kind, 0) + found
            else:
                routes = switches if size.routers == 2 else 0  # each router: the other's LANs
                ports = switches + (2 if size.routers == 2 else 0)
                tasks = hosts + ports + routes + hosts + 1
                by_op[f"chain{tasks}"] = by_op.get(f"chain{tasks}", 0) + found
    total = sum(by_op.values())  # different operations, different keys
    return Capacity(
        total=total,
        by_operation=dict(sorted(by_op.items())),
        exact=False,
        per_seed=total // SEED_SLOTS,
        how=(
            "lower bound: distinct labs of the level's sizes, counted from the naming, "
            "addressing and subnet choices alone (generators/netllmbench/capacity.py)"
        ),
    )
