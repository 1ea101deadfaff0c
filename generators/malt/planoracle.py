"""The oracle's Python program for a capacity-planning spec (levels 4 and 5).

The program is oracle.py's helper prelude, the planning helpers below, the one task
function its spec needs, and a `process_graph(graph)` that calls it with the spec's
operands. It computes its plan from the graph it is given, as an agent would; the
generator runs it and holds its plan to the plan checker (plancheck.py), independently of
the analytic plan (plansolve.py).
"""

from __future__ import annotations

from typing import Any

from generators.malt.oracle import ORACLE_PRELUDE

PLAN_HELPERS = '''

def port_number(name):
    tail = name.rsplit(".p", 1)[-1]
    return int(tail) if tail.isdigit() else 0


class Ports:
    """Port counts and next port numbers of switches while ports are added."""

    def __init__(self, graph):
        self.graph, self.count, self.next = graph, {}, {}

    def of(self, switch):
        if switch not in self.count:
            ports = members(self.graph, switch, "EK_PORT")
            self.count[switch] = len(ports)
            self.next[switch] = max((port_number(p) for p in ports), default=0) + 1
        return self.count[switch]

    def add(self, switch, bps):
        self.of(switch)
        add_port(self.graph, switch, f"{switch}.p{self.next[switch]}", bps)
        self.next[switch] += 1
        self.count[switch] += 1


def add_switch(graph, block, name, stage):
    graph.add_node(name, name=name, type=["EK_PACKET_SWITCH"], switch_loc={"stage": stage})
    graph.add_edge(block, name, type=["RK_CONTAINS"])


def spread(names, total):
    """`total` ports over `names` as evenly as can be, the extra ones to the first names."""
    share, rest = divmod(total, len(names))
    return {name: share + (i < rest) for i, name in enumerate(sorted(names))}


def needed_ports(graph, block, target, bps):
    return max(0, -(-(target - capacity(graph, block)) // bps))
'''

TASKS: dict[str, str] = {
    "drain": '''

def drain(graph, block, drained, max_ports=None):
    """Move the drained switches' ports to same-stage switches of the block, fewest ports
    first; the limit is `max_ports`, or else the lowest level that takes them all."""
    ports = Ports(graph)
    stages = sorted({stage(graph, s) for s in drained})
    for st in stages:
        group = [t for t in members(graph, block, "EK_PACKET_SWITCH")
                 if t not in drained and stage(graph, t) == st]
        moving = [graph.nodes[p]["physical_capacity_bps"]
                  for s in sorted(drained) if stage(graph, s) == st
                  for p in sorted(members(graph, s, "EK_PORT"), key=port_number)]
        limit = max_ports
        if limit is None:
            limit = min(ports.of(t) for t in group)
            while sum(max(0, limit - ports.of(t)) for t in group) < len(moving):
                limit += 1
        for bps in moving:
            room = [t for t in group if ports.of(t) < limit]
            ports.add(min(room, key=lambda t: (ports.of(t), t)), bps)
    for s in drained:
        remove_with_contents(graph, s)
''',
    "expand": '''

def expand(graph, block, names, st, bps, target):
    """The fewest new ports that reach the target, spread evenly over the new switches."""
    ports = Ports(graph)
    counts = spread(names, needed_ports(graph, block, target, bps))
    for name in names:
        add_switch(graph, block, name, st)
        for _ in range(counts[name]):
            ports.add(name, bps)
''',
    "expand_fill": '''

def expand_fill(graph, block, names, st, bps, max_ports, target):
    """Fill the existing switches of the stage (fewest ports first) up to the limit, then
    spread what is left over the fewest new switches."""
    ports = Ports(graph)
    needed = needed_ports(graph, block, target, bps)
    group = [t for t in members(graph, block, "EK_PACKET_SWITCH") if stage(graph, t) == st]
    for t in sorted(group, key=lambda t: (ports.of(t), t)):
        while needed and ports.of(t) < max_ports:
            ports.add(t, bps)
            needed -= 1
    if needed:
        chosen = names[:-(-needed // max_ports)]
        counts = spread(chosen, needed)
        for name in chosen:
            add_switch(graph, block, name, st)
            for _ in range(counts[name]):
                ports.add(name, bps)
''',
    "upgrade": '''

def upgrade(graph, blocks, bps, target, per_switch):
    """Per block, upgrade the lowest-capacity ports first until the block reaches the
    target, at most `per_switch` per switch."""
    for block in blocks:
        deficit = target - capacity(graph, block)
        candidates = sorted(
            (graph.nodes[p]["physical_capacity_bps"], p, s)
            for s in members(graph, block, "EK_PACKET_SWITCH")
            for p in members(graph, s, "EK_PORT")
            if graph.nodes[p]["physical_capacity_bps"] < bps
        )
        used = {}
        for before, port, s in candidates:
            if deficit <= 0:
                break
            if used.get(s, 0) < per_switch:
                used[s] = used.get(s, 0) + 1
                graph.nodes[port]["physical_capacity_bps"] = bps
                deficit -= bps - before
''',
    "place": '''

def place(graph, superblock, st, count, bps, per_switch, budget=None):
    """Each new port goes to the block with the lowest total that still has room (under
    the budget, if any), on its switch with the fewest new ports."""
    ports = Ports(graph)
    hosts = {b: [t for t in members(graph, b, "EK_PACKET_SWITCH") if stage(graph, t) == st]
             for b in members(graph, superblock, "EK_AGG_BLOCK")}
    total = {b: capacity(graph, b) for b in hosts}
    placed = {t: 0 for ts in hosts.values() for t in ts}
    for _ in range(count):
        open_blocks = [b for b, ts in hosts.items()
                       if any(placed[t] < per_switch for t in ts)
                       and (budget is None or total[b] + bps <= budget)]
        block = min(open_blocks, key=lambda b: (total[b], b))
        switch = min((t for t in hosts[block] if placed[t] < per_switch),
                     key=lambda t: (placed[t], t))
        ports.add(switch, bps)
        placed[switch] += 1
        total[block] += bps
''',
}
TASK_OF = {
    "drain": "drain",
    "drain_balance": "drain",
    "expand": "expand",
    "expand_fill": "expand_fill",
    "upgrade": "upgrade",
    "upgrade_superblock": "upgrade",
    "place": "place",
    "place_balance": "place",
}
PLAN_PRELUDE = ORACLE_PRELUDE + PLAN_HELPERS


def _call(spec: dict[str, Any]) -> str:
    op = spec["op"]
    if op == "drain":
        return f"drain(graph, {spec['block']!r}, [{spec['switch']!r}], {spec['max_ports']!r})"
    if op == "drain_balance":
        return f"drain(graph, {spec['block']!r}, {list(spec['switches'])!r})"
    if op == "expand":
        return (
            f"expand(graph, {spec['block']!r}, {list(spec['switches'])!r}, {spec['stage']!r}, "
            f"{spec['capacity']!r}, {spec['target']!r})"
        )
    if op == "expand_fill":
        return (
            f"expand_fill(graph, {spec['block']!r}, {list(spec['names'])!r}, {spec['stage']!r}, "
            f"{spec['capacity']!r}, {spec['max_ports']!r}, {spec['target']!r})"
        )
    if op in ("upgrade", "upgrade_superblock"):
        blocks = (
            repr([spec["block"]])
            if op == "upgrade"
            else f"members(graph, {spec['superblock']!r}, 'EK_AGG_BLOCK')"
        )
        return (
            f"upgrade(graph, {blocks}, {spec['capacity']!r}, {spec['target']!r}, "
            f"{spec['per_switch']!r})"
        )
    budget = f", budget={spec['budget']!r}" if op == "place" else ""
    return (
        f"place(graph, {spec['superblock']!r}, {spec['stage']!r}, {spec['ports']!r}, "
        f"{spec['capacity']!r}, {spec['per_switch']!r}{budget})"
    )


def program(spec: dict[str, Any]) -> str:
    """The oracle's program for a planning spec: it returns the modified graph."""
    return (
        f"{PLAN_PRELUDE}{TASKS[TASK_OF[spec['op']]]}\n\n"
        f"def process_graph(graph):\n    {_call(spec)}\n    return graph\n"
    )
