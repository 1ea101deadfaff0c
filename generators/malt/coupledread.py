"""Reading the base graph for the coupled-constraint plans (levels 6-8): a `Reader` over
the checker's planbase.Base or the drawer's index.TopoIndex, and the state of a switch
that may take ports (`Switch`: ports, watts by the task's table, bps).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from generators.malt import schema as S
from generators.malt.planbase import port_number

PS, PORT = S.EK_PACKET_SWITCH, S.EK_PORT
_READERS: WeakKeyDictionary[Any, Reader] = WeakKeyDictionary()


class Reader:
    """What a task reads of the base graph: members of a node of a kind, a node's
    attributes. Built from planbase.Base (the checker's) or index.TopoIndex (the drawer's)."""

    def __init__(self, members: Callable[[str, str], Sequence[str]], attrs: Mapping) -> None:
        self._members = members
        self._attrs = attrs
        self._switches: dict[str, list[str]] = {}
        self._ports: dict[str, list[str]] = {}
        self._speeds: dict[str, tuple[tuple[int, int], ...]] = {}

    @classmethod
    def of(cls, source: Any) -> Reader:
        """The reader of a base graph, one per source (the base never changes, so what it
        reads is kept)."""
        ix = getattr(source, "ix", source)  # an index.View reads its index (the base)
        found = _READERS.get(ix)
        if found is None:
            graph = getattr(ix, "graph", None)  # planbase.Base has one, TopoIndex attrs
            found = cls(ix.members, graph._node if graph is not None else ix.attrs)
            _READERS[ix] = found
        return found

    def switches(self, node: str) -> list[str]:
        found = self._switches.get(node)
        if found is None:
            found = self._switches[node] = sorted(self._members(node, PS))
        return found

    def ports(self, switch: str) -> list[str]:
        found = self._ports.get(switch)
        if found is None:
            found = self._ports[switch] = sorted(self._members(switch, PORT), key=port_number)
        return found

    def speed(self, port: str) -> int:
        return int(self._attrs[port][S.A_CAPACITY])

    def speed_counts(self, switch: str) -> tuple[tuple[int, int], ...]:
        """(speed, ports of that speed) of a switch's ports, by speed: what `switch_of`
        sums (a coupled level's measurement asks it ~650,000 times of a few hundred
        switches, each summing every port's speed again)."""
        found = self._speeds.get(switch)
        if found is None:
            counts: dict[int, int] = {}
            for port in self.ports(switch):
                speed = self.speed(port)
                counts[speed] = counts.get(speed, 0) + 1
            found = self._speeds[switch] = tuple(sorted(counts.items()))
        return found

    def stage(self, switch: str) -> int:
        return int(self._attrs[switch][S.A_SWITCH_LOC][S.A_STAGE])

    def highest_port(self, switch: str) -> int:
        return max((port_number(p) for p in self.ports(switch)), default=0)


@dataclass(frozen=True)
class Switch:
    """A switch that may take new ports, as it is before the plan."""

    name: str
    ports: int
    watts: int
    bps: int


def switch_of(reader: Reader, name: str, watts: Mapping[int, int]) -> Switch:
    counts = reader.speed_counts(name)
    return Switch(
        name,
        sum(n for _, n in counts),
        sum(watts[s] * n for s, n in counts),
        sum(s * n for s, n in counts),
    )


def table(pairs: Sequence[Sequence[int]]) -> dict[int, int]:
    return {int(k): int(v) for k, v, *_ in pairs}
