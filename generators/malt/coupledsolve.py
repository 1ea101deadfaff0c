"""Exact search for the coupled-constraint plans of MALT levels 6-8 (coupled.py).

Plain Python on tuples of small integers, with no imports, because this module's source
is also the core of the oracle's program (coupledoracle.py), which runs in the agent
sandbox (emulators/pysandbox: no numpy, no scipy, 5 CPU-s). Tests hold every function to
a brute-force enumeration on tiny instances, and the generator holds every plan the
solvers make to the plan checker (coupledcheck.py).

Items are grouped by type (a port speed): `counts[t]` items of type t. A bin (a switch)
takes a vector x of items within its free slots and, for each resource j,
sum_t loads[j][t] * x[t] <= heads[j] (its headroom: watts, bps, ...).

- `pack`: put every item into bins, fewest bins used, then (optionally) the lowest peak
  of one resource over the bins used: a vector bin packing.
- `cover`: reach a gain with the least cost, choosing per group (a switch) at most `cap`
  of its items (ports) and for each an option (a faster optic: gain, cost, stock used),
  never using more stock of a kind than there is: a multiple-choice knapsack with
  cardinality and stock; several demands (blocks) in sequence share the stock.
- `fill`: add items of catalogue types to bins (existing switches, then new ones that each
  take at least one) to reach a gain with the fewest new bins, then the least cost, then
  the fewest items.

Each is a dynamic program over the bins or groups, one layer each, a layer mapping a state
(items left; gain reached and stock used) to its best value and the choice that led there.
A bin's or group's choices that another choice dominates (no better in any respect) are
dropped first. `order` (1 or -1) reverses the order in which equal-valued choices are
tried, so a solver called with -1 makes another optimal plan where there is one.
`budget` (None: no limit) is a one-item list holding how much work, (state, choice)
pairs tried, the search may still do; it is spent as the search goes (across several
calls that share it) and OverflowError is raised when it runs out: the generator keeps
only tasks whose exact search is this small, so an agent's search can finish too.
"""


def _spend(layer, choices, budget):
    if budget is not None:
        budget[0] -= len(layer) * len(choices)
        if budget[0] < 0:
            raise OverflowError("the exact search ran out of its budget")


def vectors(counts, slots, loads, heads, least=0):
    """Every x <= counts with least <= sum(x) <= slots and each resource within its
    headroom (loads are non-negative, so a partial vector over its headroom is cut)."""
    out = []
    n, m = len(counts), len(heads)

    def grow(t, x, used, spent):
        if t == n:
            if used >= least:
                out.append(tuple(x))
            return
        for k in range(min(counts[t], slots - used) + 1):
            now = [spent[j] + loads[j][t] * k for j in range(m)]
            if any(now[j] > heads[j] for j in range(m)):
                break
            x.append(k)
            grow(t + 1, x, used + k, now)
            x.pop()

    grow(0, [], 0, [0] * m)
    return out


def _walk(layers, state):
    """The choices that led to `state` in the last layer, first layer first."""
    picks = []
    for layer in reversed(layers):
        _, before, pick = layer[state]
        picks.append(pick)
        state = before
    return picks[::-1]


def pack(counts, bins, loads, peak=None, order=1, budget=None):
    """(bins used, peak, plan) placing every item, or None when they do not fit.

    bins: [(slots, heads, base)] with `base` the bin's value of the peak resource before
    (ignored without `peak`); peak: the per-type load of the peak resource, or None.
    plan: one vector per bin (all zero for a bin not used)."""
    counts = tuple(counts)
    m = len(loads)
    # What the bins from i on could still take, to drop states that cannot finish.
    room = [(0, (0,) * m)]
    for slots, heads, _ in reversed(bins):
        taken, spare = room[-1]
        room.append((taken + slots, tuple(a + b for a, b in zip(spare, heads, strict=True))))
    room.reverse()
    layer = {counts: ((0, 0), None, None)}
    layers = []
    for i, (slots, heads, base) in enumerate(bins):
        choices = vectors(counts, slots, loads, heads)[::order]
        _spend(layer, choices, budget)
        after = {}
        slots_left, heads_left = room[i + 1]
        for rem, ((used, top), _, _) in layer.items():
            for x in choices:
                left = tuple(r - a for r, a in zip(rem, x, strict=True))
                if min(left) < 0 or sum(left) > slots_left:
                    continue
                if any(sum(ld[t] * left[t] for t in range(len(left))) > h
                       for ld, h in zip(loads, heads_left, strict=True)):  # fmt: skip
                    continue
                if any(x):
                    here = base + sum(p * a for p, a in zip(peak, x, strict=True)) if peak else 0
                    value = (used + 1, max(top, here))
                else:
                    value = (used, top)
                if left not in after or value < after[left][0]:
                    after[left] = (value, rem, x)
        layers.append(after)
        layer = after
    done = tuple(0 for _ in counts)
    if done not in layer:
        return None
    (used, top), _, _ = layer[done]
    return used, top, _walk(layers, done)


def _dominates(q, p):
    """Whether pick q is no worse than p: at least its gain, at no more cost or stock."""
    return q[0] >= p[0] and q[1] <= p[1] and all(a <= b for a, b in zip(q[2], p[2], strict=True))


def _frontier(picks):
    """The picks no other pick dominates, each (gain, cost, stock used, pick); of equal
    ones, the first stays."""
    kept = []
    for p in picks:
        if not any(_dominates(q, p) for q in kept):
            kept = [q for q in kept if not _dominates(p, q)]
            kept.append(p)
    return kept


def group_options(items, cap, options):
    """Every way to upgrade at most `cap` of a group's items: a tuple of (item type,
    option) pairs, each type used at most as often as the group has it.
    items: {type: how many}; options: {type: [option, ...]} (its index is its name)."""
    pairs = [(t, o) for t in sorted(items) for o in range(len(options[t]))]
    out = []

    def grow(i, chosen, left, used):
        out.append(tuple(chosen))
        if left == 0:
            return
        for j in range(i, len(pairs)):
            t, o = pairs[j]
            if used.get(t, 0) < items[t]:
                used[t] = used.get(t, 0) + 1
                chosen.append((t, o))
                grow(j, chosen, left - 1, used)
                chosen.pop()
                used[t] -= 1

    grow(0, [], cap, {})
    return out


def cover(demands, options, stock, order=1, budget=None):
    """(cost, plan) of the cheapest upgrades meeting every demand, or None.

    demands: [(need, groups, cap)], in order: `need` gain units, `groups` a list of
    {type: how many} (a switch's upgradable ports by speed), at most `cap` upgrades per
    group; options: {type: [(gain units, cost, stock kind or None), ...]}; stock: {kind:
    how many}. plan: per demand, per group, the tuple of (type, option index) chosen."""
    kinds = sorted(stock)
    limit = tuple(stock[k] for k in kinds)
    layer = {(0, tuple(0 for _ in kinds)): (0, None, None)}
    layers = []
    shape = []
    for d, (need, groups, cap) in enumerate(demands):
        for g, items in enumerate(groups):
            menu = []
            for pick in group_options(items, cap, options):
                gain = sum(options[t][o][0] for t, o in pick)
                cost = sum(options[t][o][1] for t, o in pick)
                take = tuple(sum(1 for t, o in pick if options[t][o][2] == k) for k in kinds)
                menu.append((min(gain, need), cost, take, pick))
            menu = _frontier(menu)[::order]
            last = g == len(groups) - 1
            _spend(layer, menu, budget)
            after = {}
            for (gained, used), (cost, _, _) in layer.items():
                for gain, more, take, pick in menu:
                    now = tuple(u + k for u, k in zip(used, take, strict=True))
                    if any(u > s for u, s in zip(now, limit, strict=True)):
                        continue
                    reached = min(need, gained + gain)
                    if last:
                        if reached < need:
                            continue
                        reached = 0
                    state = (reached, now)
                    if state not in after or cost + more < after[state][0]:
                        after[state] = (cost + more, (gained, used), pick)
            layers.append(after)
            shape.append((d, g))
            layer = after
    if not layer:
        return None
    end = min(layer, key=lambda s: (layer[s][0], s))
    plan = [[None] * len(groups) for _, groups, _ in demands]
    for (d, g), pick in zip(shape, _walk(layers, end), strict=True):
        plan[d][g] = pick
    return layer[end][0], plan


def fill(need, speeds, costs, loads, bins, spare, spares, order=1, budget=None):
    """(new bins, cost, items, plan) reaching `need` gain units with the fewest new bins,
    then the least cost, then the fewest items, or None.

    speeds[t], costs[t]: gain units and cost of one item of type t; loads: per resource,
    per type; bins: [(slots, heads)] of the existing bins; spare: (slots, heads) of a new
    bin; spares: how many new bins there may be. plan: one vector per existing bin, then
    one per new bin used."""
    big = [need // max(1, s) + 1 for s in speeds]

    def menu(slots, heads, least):
        found = []
        for p in vectors(big, slots, loads, heads, least):
            gain = min(need, sum(s * a for s, a in zip(speeds, p, strict=True)))
            cost = sum(c * a for c, a in zip(costs, p, strict=True))
            found.append((gain, cost, (sum(p),), p))
        return _frontier(found)[::order]

    own = [menu(s, h, 0) for s, h in bins]
    new = menu(spare[0], spare[1], 1)
    for extra in range(spares + 1):
        layer = {0: ((0, 0), None, None)}
        layers = []
        for choices in own + [new] * extra:
            _spend(layer, choices, budget)
            after = {}
            for gained, ((cost, items), _, _) in layer.items():
                for gain, more, (count,), pick in choices:
                    state = min(need, gained + gain)
                    value = (cost + more, items + count)
                    if state not in after or value < after[state][0]:
                        after[state] = (value, gained, pick)
            layers.append(after)
            layer = after
        if need in layer:
            (cost, items), _, _ = layer[need]
            return extra, cost, items, _walk(layers, need)
    return None


def transport(items, bins, order=1, budget=None):
    """(cost, plan) moving every item onto bins at the least total cost, or None when
    they do not fit: a min-cost flow (successive shortest paths, Bellman-Ford).

    items[t]: how many of type t; bins: [(slots, caps, costs)] with at most `slots` items
    in all, at most caps[t] of type t, each of type t costing costs[t]. plan: one vector
    per bin. Costs are non-negative integers, so the flow found is optimal."""
    n, m = len(items), len(bins)
    source, sink = n + m, n + m + 1
    arcs = []  # [head, residual capacity, cost, index of the reverse arc]
    out = [[] for _ in range(n + m + 2)]

    def arc(a, b, cap, cost):
        out[a].append(len(arcs))
        arcs.append([b, cap, cost, len(arcs) + 1])
        out[b].append(len(arcs))
        arcs.append([a, 0, -cost, len(arcs) - 1])

    for t in range(n):
        arc(source, t, items[t], 0)
    cells = {}
    for j in range(m)[::order]:
        slots, caps, costs = bins[j]
        for t in range(n):
            if min(slots, caps[t]) > 0:
                cells[(j, t)] = len(arcs)
                arc(t, n + j, min(slots, caps[t]), costs[t])
        arc(n + j, sink, max(0, slots), 0)
    moved = total = 0
    while moved < sum(items):
        if budget is not None:
            budget[0] -= len(arcs) * (n + m + 2)
            if budget[0] < 0:
                raise OverflowError("the exact search ran out of its budget")
        dist = [None] * (n + m + 2)
        via = [None] * (n + m + 2)
        dist[source] = 0
        for _ in range(n + m + 1):
            changed = False
            for a in range(n + m + 2):
                if dist[a] is None:
                    continue
                for e in out[a]:
                    b, cap, cost, _ = arcs[e]
                    if cap > 0 and (dist[b] is None or dist[a] + cost < dist[b]):
                        dist[b], via[b], changed = dist[a] + cost, e, True
            if not changed:
                break
        if dist[sink] is None:
            return None
        push, b = sum(items) - moved, sink
        while b != source:
            e = via[b]
            push = min(push, arcs[e][1])
            b = arcs[arcs[e][3]][0]
        b = sink
        while b != source:
            e = via[b]
            arcs[e][1] -= push
            arcs[arcs[e][3]][1] += push
            b = arcs[arcs[e][3]][0]
        moved += push
        total += push * dist[sink]
    plan = [[0] * n for _ in range(m)]
    for (j, t), e in cells.items():
        plan[j][t] = arcs[e + 1][1]  # the reverse arc's capacity: the flow on the cell
    return total, [tuple(x) for x in plan]
