"""Variety by construction: which lab a query runs on, its stratum, and the stratum cap.

Labs. Query `index` of (level, seed) runs on entry `index // LAB_BLOCK` of the seed's lab
cycle: every (family, size) pair the config allows, in an order shuffled per seed and
level, crossed with the lab variants 0..VARIANTS-1 (netlab's tier catalogue), the variant
advancing once per pass over the pairs. So any 12 x LAB_BLOCK consecutive queries of an
unrestricted tier spread evenly over the six families and the tier's two sizes, and
LAB_BLOCK consecutive queries share a lab (a lab built once serves them all, in
generation and in play). The lab depends on the index only: a redrawn query stays on it.

Strata. A query's stratum is `family/size/kind@placement+...` (its faults sorted;
`family/size/healthy` for a healthy detect query); `queries.stratum` stores it.

The cap. A draw whose stratum already holds at least 1 + floor(CAP_SHARE * index) of the
seed's queries 0..index-1 is redrawn (from the query's own stream, before any lab work),
so after n queries no stratum holds more than 1 + CAP_SHARE * n of them: at most 8.1 %
at n = 1,000, per seed and so over any set of seeds. A config so narrow that CAP_TRIES
draws in a row all land in full strata takes, of those draws, the one whose stratum holds
the fewest queries (the cap is then as good as the space allows; README says so).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

from generators.netlab.spec import VARIANTS
from pipeline.api import share_cap

LAB_BLOCK = 4  # consecutive queries on one lab
CAP_SHARE = 0.08
CAP_TRIES = 64


def lab_cycle(
    families: Iterable[str], sizes: Iterable[str], level: int, seed: int
) -> list[tuple[str, str]]:
    """The (family, size) pairs in the seed's order (every pair once)."""
    pairs = [(f, s) for f in families for s in sizes]
    random.Random(f"incidents-labs:{level}:{seed}").shuffle(pairs)
    return pairs


def lab_of(pairs: list[tuple[str, str]], index: int) -> tuple[str, str, int]:
    """(family, size, variant) of query `index` (see the module docstring)."""
    block = index // LAB_BLOCK
    family, size = pairs[block % len(pairs)]
    return family, size, (block // len(pairs)) % VARIANTS


def stratum(family: str, size: str, faults: Iterable[tuple[str, str]]) -> str:
    """`family/size/kind@placement+...` of (kind, placement) pairs; healthy when none."""
    parts = sorted(f"{kind}@{placement}" for kind, placement in faults)
    return f"{family}/{size}/{'+'.join(parts) or 'healthy'}"


class StratumCap:
    """The strata of one seed's queries so far; see the module docstring."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.taken = 0

    def bound(self) -> int:
        return share_cap(self.taken, CAP_SHARE)

    def allows(self, name: str) -> bool:
        return self.counts[name] < self.bound()

    def add(self, name: str) -> None:
        self.counts[name] += 1
        self.taken += 1

    def top_share(self) -> float:
        return max(self.counts.values()) / self.taken if self.taken else 0.0
