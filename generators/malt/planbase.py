"""The pieces a capacity plan (levels 4 and 5) is judged with: containment lookups on the
base graph (`Base`), what a plan may touch (`Scope`, `outside_scope`), a diff read by node
(`Changes`), what the tasks work on (a block's switches of a stage, a drain's groups, the
gains of upgrades), and the rules every new port keeps (`new_ports`, `moved_ports`).

They know nothing of any one planning task: plancheck.py holds each task's scope,
invariants and optima. A scope is the blast radius a plan may have (the nodes it may
remove, the attributes it may change, the nodes new nodes may hang under); anything a
plan does outside it is unsafe, as any change outside a fixed task's footprint is
(intended.py).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from emulators.pysandbox import graphdiff
from generators.malt import schema as S
from generators.malt.intended import changed_keys

PS, PORT, AGG = S.EK_PACKET_SWITCH, S.EK_PORT, S.EK_AGG_BLOCK
_PORT_NUMBER = re.compile(r"\.p(\d+)$")
_EXAMPLES = 3


def port_number(name: str) -> int:
    found = _PORT_NUMBER.search(name)
    return int(found.group(1)) if found else 0


class Base:
    """Containment lookups on the base graph, cached per node: build one while the graph
    is the base (plancheck.base keeps one per checker, whose graph is only ever changed
    for the duration of a check and put back)."""

    def __init__(self, graph: nx.DiGraph) -> None:
        self.graph = graph
        self._below: dict[str, list[str]] = {}
        self._members: dict[tuple[str, str], list[str]] = {}

    def kinds(self, node: str) -> list[str]:
        return self.graph._node[node][S.A_TYPE]

    def contained(self, node: str) -> list[str]:
        hit = self._below.get(node)
        if hit is None:
            seen, stack, succ = set(), [node], self.graph._succ
            while stack:
                current = stack.pop()
                for child, attrs in succ[current].items():
                    if child != current and child not in seen and S.RK_CONTAINS in attrs[S.A_TYPE]:
                        seen.add(child)
                        stack.append(child)
            seen.discard(node)
            hit = self._below[node] = sorted(seen)
        return hit

    def members(self, node: str, kind: str) -> list[str]:
        hit = self._members.get((node, kind))
        if hit is None:
            hit = [n for n in self.contained(node) if kind in self.kinds(n)]
            self._members[(node, kind)] = hit
        return hit

    def ports(self, switch: str) -> list[str]:
        return self.members(switch, PORT)

    def capacity(self, node: str) -> int:
        ports = [node] if PORT in self.kinds(node) else self.ports(node)
        return sum(self.graph._node[p][S.A_CAPACITY] for p in ports)

    def stage(self, switch: str) -> int:
        return self.graph._node[switch][S.A_SWITCH_LOC][S.A_STAGE]

    def highest_port(self, switch: str) -> int:
        return max((port_number(p) for p in self.ports(switch)), default=0)


@dataclass(frozen=True)
class Scope:
    """What a plan may touch (see the module docstring)."""

    removable: frozenset[str] = frozenset()
    changeable: dict[str, frozenset[str]] = field(default_factory=dict)  # node -> attributes
    hosts: frozenset[str] = frozenset()  # base nodes new nodes may be contained in
    nested: bool = False  # new nodes may contain new nodes (ports of a new switch)


@dataclass
class Changes:
    """A well-formed diff read by node: what was removed, added (and under what), changed."""

    removed: set[str]
    added: dict[str, dict[str, Any]]
    parents: dict[str, list[str]]  # new node -> the nodes an added RK_CONTAINS edge comes from
    changed: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, diff: dict[str, list]) -> Changes:
        parents: dict[str, list[str]] = {}
        for u, v, _ in diff["edges_added"]:
            parents.setdefault(v, []).append(u)
        return cls(
            removed=set(diff["nodes_removed"]),
            added={n: a for n, a in diff["nodes_added"]},
            parents=parents,
            changed={n: a for n, a in diff["nodes_changed"]},
        )

    def new_under(self, host: str) -> list[str]:
        """Names of the new nodes contained in `host` (directly)."""
        return sorted(n for n, ps in self.parents.items() if host in ps and n in self.added)


def _summary(what: str, names: list[Any]) -> str:
    shown = ", ".join(repr(n)[:80] for n in names[:_EXAMPLES])
    more = f" and {len(names) - _EXAMPLES:,} more" if len(names) > _EXAMPLES else ""
    return f"{what} ({len(names):,}): {shown}{more}"


def outside_scope(base: nx.DiGraph, scope: Scope, diff: dict[str, list]) -> list[str]:
    """Violations of a well-formed diff against `scope`, one line per kind of change."""
    out: list[str] = []

    def report(what: str, found: list[Any]) -> None:
        if found:
            out.append(_summary(what, found))

    removed = set(diff["nodes_removed"])
    added = {n for n, _ in diff["nodes_added"]}
    report("removes nodes the task keeps", [n for n in removed if n not in scope.removable])
    strays = []
    for name, after in diff["nodes_changed"]:
        extra = changed_keys(graphdiff.normalized(base._node[name]), after) - scope.changeable.get(
            name, frozenset()
        )
        if extra:
            strays.append(f"{name} ({', '.join(sorted(extra))})")
    report("changes nodes or attributes the task leaves alone", strays)
    report(
        "removes edges the task keeps",
        [(u, v) for u, v in diff["edges_removed"] if u not in removed and v not in removed],
    )
    report("changes edges the task leaves alone", [(u, v) for u, v, _ in diff["edges_changed"]])
    # A new containment edge leads from a host (or a new node) to a new node, or to a node
    # the task may remove (a drained port hung elsewhere instead: wrong, not outside).
    bad_edges = [
        (u, v)
        for u, v, attrs in diff["edges_added"]
        if not (v in added or v in scope.removable)
        or attrs != S.contains_edge()
        or not (u in scope.hosts or (scope.nested and u in added))
    ]
    report("adds edges the task does not add", bad_edges)
    hung = {v for u, v, _ in diff["edges_added"]}
    report("adds nodes outside the task's scope", sorted(added - hung))
    return out


# -- what the tasks work on ----------------------------------------------------------------


def same_stage(base: Base, block: str, stage: int, leave: set[str]) -> list[str]:
    """The packet switches of `block` of `stage`, less `leave`."""
    return [t for t in base.members(block, PS) if t not in leave and base.stage(t) == stage]


def stage_hosts(base: Base, superblock: str, stage: int) -> dict[str, list[str]]:
    """Aggregation block -> its switches of `stage`, for every block of `superblock`."""
    return {
        b: [t for t in base.members(b, PS) if base.stage(t) == stage]
        for b in base.members(superblock, AGG)
    }


def drain_groups(base: Base, spec: dict[str, Any]) -> dict[int, tuple[list[str], list[str]]]:
    """Stage -> (switches that may take the drained ports, the drained ports) of a drain."""
    drained = [spec["switch"]] if spec["op"] == "drain" else list(spec["switches"])
    groups: dict[int, tuple[list[str], list[str]]] = {}
    for switch in drained:
        stage = base.stage(switch)
        if stage not in groups:
            groups[stage] = (same_stage(base, spec["block"], stage, set(drained)), [])
        groups[stage][1].extend(base.ports(switch))
    return groups


def upgrade_gains(base: Base, block: str, capacity: int) -> dict[str, list[int]]:
    caps = base.graph._node
    return {
        t: [
            capacity - caps[p][S.A_CAPACITY]
            for p in base.ports(t)
            if caps[p][S.A_CAPACITY] < capacity
        ]
        for t in base.members(block, PS)
    }


def upgrade_blocks(spec: dict[str, Any], base: Base) -> list[str]:
    if spec["op"] == "upgrade":
        return [spec["block"]]
    return base.members(spec["superblock"], AGG)


# -- shared invariants -------------------------------------------------------------------


def new_ports(ch: Changes, host: str, capacity: int, first: int = 1) -> tuple[list[str], list[str]]:
    """(the new ports under `host`, what is wrong with them): every one a port of
    `capacity` bps with exactly a new port's attributes, numbered on from `first`."""
    names = ch.new_under(host)
    wrong = []
    for name in names:
        if ch.added[name] != S.port_attrs(name, capacity):
            wrong.append(
                f"new node {name!r} under {host!r} is not a port of {capacity} bps with only "
                f"name, type and physical_capacity_bps (got {ch.added[name]!r:.120})"
            )
    want = {f"{host}.p{first + i}" for i in range(len(names))}
    if set(names) != want:
        wrong.append(
            f"the new ports of {host!r} must be named {host}.p{first} ... in order, got "
            f"{sorted(names, key=port_number)!r:.160}"
        )
    return names, wrong


def moved_ports(base: Base, ch: Changes, host: str) -> tuple[list[str], list[str]]:
    """New ports under a base switch, numbered on from its highest port; any capacity."""
    names = ch.new_under(host)
    wrong = [
        f"new node {name!r} under {host!r} is not a port with only name, type and a "
        f"positive integer physical_capacity_bps (got {ch.added[name]!r:.120})"
        for name in names
        if set(ch.added[name]) != {S.A_NAME, S.A_TYPE, S.A_CAPACITY}
        or ch.added[name] != S.port_attrs(name, ch.added[name][S.A_CAPACITY])
    ]
    first = base.highest_port(host) + 1
    want = {f"{host}.p{first + i}" for i in range(len(names))}
    if set(names) != want:
        wrong.append(
            f"the new ports of {host!r} must be named {host}.p{first}, {host}.p{first + 1}, "
            f"... (numbered on from its highest port), got "
            f"{sorted(names, key=port_number)!r:.160}"
        )
    return names, wrong


def capacities(ch: Changes, ports: list[str]) -> Counter[int]:
    return Counter(int(ch.added[p].get(S.A_CAPACITY, 0)) for p in ports)


def only_hosts(ch: Changes, allowed: set[str], what: str) -> list[str]:
    """An error for new nodes contained in a base node outside `allowed`."""
    stray = sorted(
        f"{n} (in {p})"
        for n, ps in ch.parents.items()
        for p in ps
        if p not in allowed and p not in ch.added
    )
    return [_summary(f"adds nodes outside {what}", stray)] if stray else []


def one_container(ch: Changes) -> list[str]:
    """An error for new nodes not contained in exactly one node."""
    odd = sorted(n for n in ch.added if len(ch.parents.get(n, ())) != 1)
    return [_summary("adds nodes not contained in exactly one node", odd)] if odd else []
