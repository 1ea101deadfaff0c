"""The variety key of levels 6-8 and the room a run leaves on each (generator6.py's caps).

A fault's key is `<size>/<kind>@<placement>` (placement: the role of the workload it is
about, or the tier of its namespace), the issue's "topology x fault kind x placement",
counted once per query. A run keeps each key in at most a share of its queries (the cap:
generator6.py says how many). The 12 keys of faults that only open what must stay closed
(four kinds at 2-5 placements on every size) are also reserved: only the draw of such a
fault may take a key's last RESERVE places, so level 8, which puts one in every query
(1,000 of them on 12 keys, 8.3 % each on average), finds one under the cap while its
other faults, which drew these kinds as often as any, take only what is left.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from pipeline.api import share_cap

RESERVE = 2


class Placed(Protocol):
    kind: str
    placement: str


def places(size: str, faults: Iterable[tuple[str, str]]) -> frozenset[str]:
    """`size/kind@placement` of each (kind, placement) of a query's faults."""
    return frozenset(f"{size}/{kind}@{placement}" for kind, placement in faults)


def place(size: str, fault: Placed) -> str:
    return f"{size}/{fault.kind}@{fault.placement}"


@dataclass(frozen=True)
class Room:
    """What a run's earlier queries leave: `full` keys take no fault; `near` ones (within
    RESERVE of full) take only a fault that only opens what must stay closed, on the keys
    such faults have (`closing`, per estate)."""

    full: frozenset[str] = frozenset()
    near: frozenset[str] = frozenset()

    def allows(self, key: str, closed: bool, closing: frozenset[str]) -> bool:
        if key in self.full:
            return False
        return closed or key not in self.near or key not in closing


P = TypeVar("P", bound=Placed)


def by_placement(faults: Sequence[P], rng: random.Random) -> Iterator[P]:
    """`faults` in a seeded order that tries the placements uniformly: a placement first,
    then its faults shuffled. Most workloads of an estate have the role `service`, so a
    fault drawn uniformly sat there three times in four and the key concentrated there
    (22-24 % of level 8's queries held `xlarge/k8s.peer_extra@service`)."""
    groups: dict[str, list[P]] = {}
    for fault in faults:
        groups.setdefault(fault.placement, []).append(fault)
    order = sorted(groups)
    rng.shuffle(order)
    for where in order:
        group = groups[where]
        rng.shuffle(group)
        yield from group


@dataclass
class Tally:
    """Keys held by a run's queries so far, and the room they leave query `index`."""

    share: float
    least: int
    held: dict[str, int] = field(default_factory=dict)

    def add(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.held[key] = self.held.get(key, 0) + 1

    def room(self, index: int) -> Room:
        cap = share_cap(index, self.share, self.least)
        full = frozenset(k for k, n in self.held.items() if n >= cap)
        near = frozenset(k for k, n in self.held.items() if n >= cap - RESERVE)
        return Room(full, near)
