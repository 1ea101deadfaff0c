"""The oracle's Python program for a coupled-constraint plan (levels 6-8).

The program is planoracle.py's prelude (graph helpers, port numbering), the source of
coupledsolve.py (the exact searches), the helpers below that read the task's instance off
the graph it is given and apply the plan found, and a `process_graph(graph)` calling one
of them with the spec's operands. It runs in the agent sandbox as an agent's program
would (plain Python, allowed imports only, within the sandbox's CPU limit), and the
generator holds its plan to the plan checker (coupledcheck.py).
"""

from __future__ import annotations

import inspect
from typing import Any

from generators.malt import coupledsolve
from generators.malt.planoracle import PLAN_PRELUDE

COUPLED_HELPERS = '''

import itertools
import math


def speeds_of(graph, switch):
    return [graph.nodes[p]["physical_capacity_bps"] for p in members(graph, switch, "EK_PORT")]


def now(graph, switch, watts):
    """(ports, watts, bps) of a switch as it is."""
    speeds = speeds_of(graph, switch)
    return len(speeds), sum(watts[s] for s in speeds), sum(speeds)


def stage_switches(graph, block, st, leave=()):
    return [t for t in members(graph, block, "EK_PACKET_SWITCH")
            if t not in leave and stage(graph, t) == st]


def packing_bins(graph, switches, watts, max_ports, max_watts, max_bps=None):
    """pack's bins: free slots, headrooms (watts, and bps under a blast radius), watts now;
    a switch already past a limit takes nothing."""
    bins = []
    for t in switches:
        n, w, b = now(graph, t, watts)
        heads = [max_watts - w] + ([max_bps - b] if max_bps is not None else [])
        slots = max_ports - n
        if slots < 0 or min(heads) < 0:
            slots, heads = 0, [0] * len(heads)
        bins.append((slots, tuple(heads), w))
    return bins


def packing_loads(types, watts, max_bps=None):
    rows = [tuple(watts[t] for t in types)]
    if max_bps is not None:
        rows.append(tuple(types))
    return tuple(rows)


def place_vectors(graph, switches, types, vectors):
    ports = Ports(graph)
    for t, x in zip(switches, vectors):
        for speed, k in zip(types, x):
            for _ in range(k):
                ports.add(t, speed)


def drain_coupled(graph, block, drained, max_ports, max_watts, watts, max_bps=None, peak=False):
    """Each stage's drained ports onto that stage's other switches of the block: fewest
    receiving switches, then (with `peak`) the lowest peak power."""
    plans = []
    for st in sorted({stage(graph, s) for s in drained}):
        takers = stage_switches(graph, block, st, drained)
        moving = [v for s in drained if stage(graph, s) == st for v in speeds_of(graph, s)]
        types = sorted(set(moving))
        found = pack([moving.count(t) for t in types],
                     packing_bins(graph, takers, watts, max_ports, max_watts, max_bps),
                     packing_loads(types, watts, max_bps),
                     [watts[t] for t in types] if peak else None)
        plans.append((takers, types, found[2]))
    for takers, types, vectors in plans:
        place_vectors(graph, takers, types, vectors)
    for s in drained:
        remove_with_contents(graph, s)


def place_coupled(graph, block, stages, mix, max_ports, max_watts, watts):
    """The new ports shared between the two stages with equal capacity, the split whose
    two packings use the fewest switches in all."""
    types = sorted(mix)
    pool = [mix[t] for t in types]
    groups = [stage_switches(graph, block, st) for st in stages]
    bins = [packing_bins(graph, g, watts, max_ports, max_watts) for g in groups]
    loads = packing_loads(types, watts)
    best = None
    for low in itertools.product(*(range(c + 1) for c in pool)):
        high = [c - a for c, a in zip(pool, low)]
        if sum(t * a for t, a in zip(types, low)) != sum(t * a for t, a in zip(types, high)):
            continue
        found = [pack(low, bins[0], loads), pack(high, bins[1], loads)]
        if None not in found and (best is None or found[0][0] + found[1][0] < best[0]):
            best = (found[0][0] + found[1][0], found)
    for g, found in zip(groups, best[1]):
        place_vectors(graph, g, types, found[2])


def upgrade_coupled(graph, blocks, targets, st, per_switch, optics, stock):
    """The cheapest optics meeting every block's target, at most `per_switch` per switch,
    the scarce optics' stock shared (coupledsolve.cover, in units of the gains' gcd)."""
    top = max(optics)
    work = []
    for block, target in zip(blocks, targets):
        groups = [[p for p in sorted(members(graph, t, "EK_PORT"), key=port_number)
                   if graph.nodes[p]["physical_capacity_bps"] < top]
                  for t in stage_switches(graph, block, st)]
        work.append((target - capacity(graph, block), groups))
    bps = lambda p: graph.nodes[p]["physical_capacity_bps"]
    speeds = sorted({bps(p) for _, groups in work for g in groups for p in g})
    unit = 0
    for s in speeds:
        for o in optics:
            if o > s:
                unit = math.gcd(unit, o - s)
    faster = {s: [o for o in sorted(optics) if o > s] for s in speeds}
    options = {s: [((o - s) // unit, optics[o], o if o in stock else None) for o in faster[s]]
               for s in speeds}
    demands = []
    for need, groups in work:
        counts = [{s: [bps(p) for p in g].count(s) for s in {bps(p) for p in g}} for g in groups]
        demands.append((-(-need // unit), counts, per_switch))
    _, picks = cover(demands, options, stock)
    for (_, groups), chosen in zip(work, picks):
        for ports, pick in zip(groups, chosen):
            for s, o in pick:
                port = next(p for p in ports if bps(p) == s)
                ports.remove(port)
                graph.nodes[port]["physical_capacity_bps"] = faster[s][o]


def expand_coupled(graph, block, st, target, optics, watts, max_ports, max_watts, names):
    """Fewest new switches, then least cost, then fewest ports (coupledsolve.fill)."""
    speeds = sorted(optics)
    unit = 0
    for s in speeds:
        unit = math.gcd(unit, s)
    existing = stage_switches(graph, block, st)
    bins = []
    for t in existing:
        n, w, _ = now(graph, t, watts)
        room = (max_ports - n, (max_watts - w,))
        bins.append(room if room[0] >= 0 and room[1][0] >= 0 else (0, (0,)))
    need = target - capacity(graph, block)
    extra, _, _, vectors = fill(-(-need // unit), [s // unit for s in speeds],
                                [optics[s] for s in speeds], ([watts[s] for s in speeds],),
                                bins, (max_ports, (max_watts,)), len(names))
    for name in names[:extra]:
        add_switch(graph, block, name, st)
    place_vectors(graph, existing + list(names[:extra]), speeds, vectors)


def drain_min_cost(graph, block, drained, max_ports, per_speed, costs):
    """The drained ports onto the stage's other switches at the least total cost: a
    min-cost flow, speed -> receiving switch (coupledsolve.transport)."""
    st = stage(graph, drained[0])
    takers = stage_switches(graph, block, st, drained)
    moving = [v for s in drained for v in speeds_of(graph, s)]
    types = sorted(set(moving))
    bins = [(max(0, max_ports - len(speeds_of(graph, t))), [per_speed] * len(types),
             [costs[t][s] for s in types]) for t in takers]
    _, vectors = transport([moving.count(s) for s in types], bins)
    place_vectors(graph, takers, types, vectors)
    for s in drained:
        remove_with_contents(graph, s)
'''

COUPLED_PRELUDE = PLAN_PRELUDE + "\n\n" + inspect.getsource(coupledsolve) + COUPLED_HELPERS


def _table(pairs: list) -> str:
    return "{" + ", ".join(f"{int(k)}: {int(v)}" for k, v, *_ in pairs) + "}"


def _call(spec: dict[str, Any]) -> str:
    op = spec["op"]
    if op in ("drain_power_binpack", "drain_blast_radius"):
        switches = [spec["switch"]] if op == "drain_power_binpack" else list(spec["switches"])
        extra = f", max_bps={spec['max_bps']!r}, peak=True" if op == "drain_blast_radius" else ""
        return (
            f"drain_coupled(graph, {spec['block']!r}, {switches!r}, {spec['max_ports']!r}, "
            f"{spec['max_watts']!r}, {_table(spec['watts'])}{extra})"
        )
    if op == "drain_min_cost":
        costs = "{" + ", ".join(f"{n!r}: {_table(pairs)}" for n, pairs in spec["costs"]) + "}"
        return (
            f"drain_min_cost(graph, {spec['block']!r}, {list(spec['switches'])!r}, "
            f"{spec['max_ports']!r}, {spec['per_speed']!r}, {costs})"
        )
    if op == "place_two_stage":
        return (
            f"place_coupled(graph, {spec['block']!r}, {list(spec['stages'])!r}, "
            f"{_table(spec['ports'])}, {spec['max_ports']!r}, {spec['max_watts']!r}, "
            f"{_table(spec['watts'])})"
        )
    if op in ("upgrade_knapsack", "shared_budget_two_blocks"):
        blocks = [spec["block"]] if "block" in spec else list(spec["blocks"])
        targets = [spec["target"]] if "target" in spec else list(spec["targets"])
        return (
            f"upgrade_coupled(graph, {blocks!r}, {targets!r}, {spec['stage']!r}, "
            f"{spec['per_switch']!r}, {_table(spec['optics'])}, {_table(spec.get('stock', []))})"
        )
    return (
        f"expand_coupled(graph, {spec['block']!r}, {spec['stage']!r}, {spec['target']!r}, "
        f"{_table(spec['optics'])}, {_table(spec['watts'])}, {spec['max_ports']!r}, "
        f"{spec['max_watts']!r}, {list(spec['names'])!r})"
    )


def program(spec: dict[str, Any]) -> str:
    """The oracle's program for a coupled-constraint spec: it returns the modified graph."""
    return f"{COUPLED_PRELUDE}\n\ndef process_graph(graph):\n    {_call(spec)}\n    return graph\n"
