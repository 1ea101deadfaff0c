"""The rule a capacity plan (levels 4 and 5) is judged by: scope, invariants and optima.

Several plans satisfy a planning task (which switch takes which moved port, which ports
are upgraded), so an answer is held to what every right plan shares, never to the plan
the oracle made:

- `violations` (safety): nothing outside the task's scope (planbase.Scope: the nodes it
  may remove, the ports whose capacity it may change, and `inside`, the block or
  superblock new nodes may be added in) differs from the base, and the graph keeps
  checker.py's structural rules. Wiping a block, removing or changing any other node,
  upgrading ports outside the block asked about, or adding nodes anywhere else is unsafe;
- `errors` (correctness): the plan is safe and keeps every invariant of its task: every
  drained port re-homed with its capacity on an allowed switch, the names the task gives,
  every limit (ports per switch, per-block budget, upgrades per switch), and each optimum
  it asks for (planmath.py, computed from the base here, independently of the solver).

Tasks (specs; prose in planrender.py, drawing in plandraw.py, oracle code in planoracle.py):

    drain              {"switch": S, "block": B, "max_ports": M}
    drain_balance      {"block": B, "switches": [S1, S2]}
    expand             {"block": B, "stage": s, "switches": [N...], "capacity": C, "target": T}
    expand_fill        {"block": B, "stage": s, "names": [N...], "capacity": C,
                        "max_ports": M, "target": T}
    upgrade            {"block": B, "capacity": C, "target": T, "per_switch": u}
    upgrade_superblock {"superblock": SB, "capacity": C, "target": T, "per_switch": u}
    place              {"superblock": SB, "stage": s, "ports": N, "capacity": C,
                        "budget": X, "per_switch": q}
    place_balance      {"superblock": SB, "stage": s, "ports": N, "capacity": C, "per_switch": q}

The coupled-constraint plans of levels 6-8 (coupledspec.py) are judged by coupledcheck.py
through the same three tables (`_SCOPES`, `_BOUNDS`, `_ERRORS`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from emulators.pysandbox import graphdiff
from generators.malt import coupledcheck
from generators.malt import planmath as pm
from generators.malt import schema as S
from generators.malt.checker import SafetyChecker
from generators.malt.coupledspec import KINDS as COUPLED
from generators.malt.planbase import (
    AGG,
    PORT,
    PS,
    Base,
    Changes,
    Scope,
    capacities,
    drain_groups,
    moved_ports,
    new_ports,
    one_container,
    only_hosts,
    outside_scope,
    same_stage,
    stage_hosts,
    upgrade_blocks,
    upgrade_gains,
)

Spec = dict[str, Any]
_BASES: WeakKeyDictionary[SafetyChecker, Base] = WeakKeyDictionary()


def base_of(checker: SafetyChecker) -> Base:
    """The containment lookups of a checker's base graph, kept as long as the checker."""
    found = _BASES.get(checker)
    if found is None:
        found = _BASES[checker] = Base(checker.graph)
    return found


def violations(checker: SafetyChecker, spec: Spec, diff: Any) -> list[str]:
    """Every safety violation of base+`diff` for the plan `spec` (empty = safe). Raises
    ValueError when `diff` is malformed or does not apply to the base."""
    graphdiff.validate_diff(diff)
    if graphdiff.is_empty(diff) and checker.base_safe:
        return []
    graphdiff.check_applicable(checker.graph, diff)
    stray = outside_scope(checker.graph, scope(base_of(checker), spec), diff)
    return stray or checker.check_diff(diff, validated=True)


def errors(checker: SafetyChecker, spec: Spec, diff: Any) -> list[str]:
    """Why base+`diff` is not a right plan for `spec` (empty = correct)."""
    try:
        unsafe = violations(checker, spec, diff)
    except ValueError as exc:
        return [f"the graph cannot be applied to the base topology: {exc}"]
    if unsafe:
        return unsafe
    base, changes = base_of(checker), Changes.of(diff)
    return one_container(changes) or _ERRORS[spec["op"]](base, spec, changes)


def scope(base: Base, spec: Spec) -> Scope:
    return _SCOPES[spec["op"]](base, spec)


def bounds(base: Base, spec: Spec) -> dict[str, Any]:
    """The limits and optima an answer is held to, as the checker computes them (stored
    with the ground truth for reading)."""
    return _BOUNDS[spec["op"]](base, spec)


def is_plan(spec: Spec) -> bool:
    return spec.get("op") in _ERRORS


# -- scopes --------------------------------------------------------------------------------


def inside(base: Base, spec: Spec) -> set[str]:
    """The block a task names and its switches, or a superblock's aggregation blocks and
    their switches: where a plan may add nodes (its blast radius)."""
    if "block" in spec:
        return {spec["block"], *base.members(spec["block"], PS)}
    return {*base.members(spec["superblock"], AGG), *base.members(spec["superblock"], PS)}


def _drain_scope(base: Base, spec: Spec) -> Scope:
    drained = [spec["switch"]] if spec["op"] == "drain" else list(spec["switches"])
    removable = {n for s in drained for n in (s, *base.ports(s))}
    hosts = inside(base, spec) - set(drained)
    return Scope(removable=frozenset(removable), hosts=frozenset(hosts), nested=True)


def _expand_scope(base: Base, spec: Spec) -> Scope:
    return Scope(hosts=frozenset(inside(base, spec)), nested=True)


def _upgrade_scope(base: Base, spec: Spec) -> Scope:
    """Only ports the task may upgrade (below the new capacity) may change, and only in
    their capacity: lowering a port already at it is outside the task."""
    node, target = base.graph._node, spec["capacity"]
    ports = [
        p
        for b in upgrade_blocks(spec, base)
        for p in base.members(b, PORT)
        if node[p][S.A_CAPACITY] < target
    ]
    allowed = frozenset({S.A_CAPACITY})
    return Scope(changeable={p: allowed for p in ports})


def _place_scope(base: Base, spec: Spec) -> Scope:
    return Scope(hosts=frozenset(inside(base, spec)), nested=True)


_SCOPES: dict[str, Callable[[Base, Spec], Scope]] = {
    "drain": _drain_scope,
    "drain_balance": _drain_scope,
    "expand": _expand_scope,
    "expand_fill": _expand_scope,
    "upgrade": _upgrade_scope,
    "upgrade_superblock": _upgrade_scope,
    "place": _place_scope,
    "place_balance": _place_scope,
}


# -- bounds --------------------------------------------------------------------------------


def _drain_bounds(base: Base, spec: Spec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stage, (group, ports) in sorted(drain_groups(base, spec).items()):
        counts = [len(base.ports(t)) for t in group]
        level = spec["max_ports"] if spec["op"] == "drain" else pm.water_level(counts, len(ports))
        out[f"stage{stage}"] = {"receivers": group, "moved": len(ports), "max_ports": level}
    return out


def _expand_bounds(base: Base, spec: Spec) -> dict[str, Any]:
    before = base.capacity(spec["block"])
    ports = max(0, pm.ceil_div(spec["target"] - before, spec["capacity"]))
    out: dict[str, Any] = {"capacity_before": before, "ports": ports}
    if spec["op"] == "expand_fill":
        group = same_stage(base, spec["block"], spec["stage"], set())
        room = sum(max(0, spec["max_ports"] - len(base.ports(t))) for t in group)
        out["room_on_existing"] = room
        out["new_switches"] = pm.ceil_div(max(0, ports - room), spec["max_ports"])
    return out


def _upgrade_bounds(base: Base, spec: Spec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for block in upgrade_blocks(spec, base):
        before = base.capacity(block)
        gains = upgrade_gains(base, block, spec["capacity"])
        fewest = pm.fewest_upgrades(gains, spec["per_switch"], spec["target"] - before)
        out[block] = {"capacity_before": before, "upgrades": fewest}
    return out


def _place_bounds(base: Base, spec: Spec) -> dict[str, Any]:
    hosts = stage_hosts(base, spec["superblock"], spec["stage"])
    caps = {b: base.capacity(b) for b in hosts}
    slots = {b: spec["per_switch"] * len(ts) for b, ts in hosts.items()}
    out: dict[str, Any] = {"capacity_before": caps}
    if spec["op"] == "place":
        room = {
            b: pm.budget_room(caps[b], slots[b], spec["capacity"], spec["budget"]) for b in caps
        }
        out["room"] = room
    else:
        order = sorted(caps)
        out["lowest_block_capacity"] = pm.raise_level(
            [caps[b] for b in order], [slots[b] for b in order], spec["ports"], spec["capacity"]
        )
    return out


_BOUNDS: dict[str, Callable[[Base, Spec], dict[str, Any]]] = {
    "drain": _drain_bounds,
    "drain_balance": _drain_bounds,
    "expand": _expand_bounds,
    "expand_fill": _expand_bounds,
    "upgrade": _upgrade_bounds,
    "upgrade_superblock": _upgrade_bounds,
    "place": _place_bounds,
    "place_balance": _place_bounds,
}


# -- invariants ----------------------------------------------------------------------------


def _drain_errors(base: Base, spec: Spec, ch: Changes) -> list[str]:
    errs: list[str] = []
    missing = sorted(_drain_scope(base, spec).removable - ch.removed)
    if missing:
        errs.append(
            f"the drained switches and their ports must be removed; still there: {missing[:3]}"
        )
    limits = _drain_bounds(base, spec)
    allowed: set[str] = set()
    for stage, (group, ports) in sorted(drain_groups(base, spec).items()):
        allowed |= set(group)
        level = limits[f"stage{stage}"]["max_ports"]
        moved: list[str] = []
        for switch in group:
            names, wrong = moved_ports(base, ch, switch)
            errs += wrong
            moved += names
            if names and len(base.ports(switch)) + len(names) > level:
                errs.append(
                    f"{switch} ends with {len(base.ports(switch)) + len(names)} ports; a switch "
                    f"taking drained ports may end with at most {level}"
                )
        want = Counter(base.graph._node[p][S.A_CAPACITY] for p in ports)
        if capacities(ch, moved) != want:
            errs.append(
                f"the ports moved to stage-{stage} switches must be the drained ports of that "
                f"stage, one new port per drained port with its capacity: expected capacities "
                f"{dict(sorted(want.items()))}, got {dict(sorted(capacities(ch, moved).items()))}"
            )
    return only_hosts(ch, allowed, "the switches that may take drained ports") + errs


def _new_switches(
    ch: Changes, spec: Spec, names: list[str], most: int | None
) -> tuple[int, list[int], list[str]]:
    """(new ports, per new switch, errors) of the new switches a plan adds to its block."""
    errs: list[str] = []
    added = ch.new_under(spec["block"])
    if sorted(added) != sorted(names):
        errs.append(
            f"the new packet switches of {spec['block']} must be {names}, got {sorted(added)}"
        )
    counts = []
    for switch in added:
        if ch.added[switch] != S.switch_attrs(switch, spec["stage"]):
            errs.append(
                f"new node {switch!r} must be a packet switch of stage {spec['stage']} with only "
                f"name, type and switch_loc (got {ch.added[switch]!r:.120})"
            )
        got, wrong = new_ports(ch, switch, spec["capacity"], first=1)
        errs += wrong
        counts.append(len(got))
        if most is not None and len(got) > most:
            errs.append(f"new switch {switch} has {len(got)} ports; at most {most} are allowed")
    return sum(counts), counts, errs


def _expand_errors(base: Base, spec: Spec, ch: Changes) -> list[str]:
    want = _expand_bounds(base, spec)
    if spec["op"] == "expand":
        total, counts, errs = _new_switches(ch, spec, list(spec["switches"]), None)
        errs = only_hosts(ch, {spec["block"]}, "the new switches") + errs
        if counts and max(counts) - min(counts) > 1:
            errs.append(f"the new switches' port counts {counts} differ by more than one")
    else:
        names = list(spec["names"][: want["new_switches"]])
        total, _, errs = _new_switches(ch, spec, names, spec["max_ports"])
        group = same_stage(base, spec["block"], spec["stage"], set())
        errs = only_hosts(ch, {spec["block"], *group}, f"the stage-{spec['stage']} switches") + errs
        for switch in group:
            first = base.highest_port(switch) + 1
            got, wrong = new_ports(ch, switch, spec["capacity"], first=first)
            errs += wrong
            total += len(got)
            if got and len(base.ports(switch)) + len(got) > spec["max_ports"]:
                errs.append(
                    f"{switch} ends with {len(base.ports(switch)) + len(got)} ports; at most "
                    f"{spec['max_ports']} are allowed"
                )
    if total != want["ports"]:
        errs.append(
            f"{total} new ports added; {want['ports']} of {spec['capacity']} bps are the fewest "
            f"that bring {spec['block']} from {want['capacity_before']} to at least "
            f"{spec['target']} bps"
        )
    return errs


def _upgrade_errors(base: Base, spec: Spec, ch: Changes) -> list[str]:
    errs: list[str] = []
    node, target = base.graph._node, spec["capacity"]
    per_switch: Counter[str] = Counter()
    for port, after in sorted(ch.changed.items()):
        before = node[port][S.A_CAPACITY]
        if before >= target or after.get(S.A_CAPACITY) != target:
            errs.append(
                f"port {port} went from {before} to {after.get(S.A_CAPACITY)!r} bps; only ports "
                f"below {target} bps may be upgraded, to exactly {target}"
            )
    for block, want in _upgrade_bounds(base, spec).items():
        upgraded = 0
        gained = 0
        for switch in base.members(block, PS):
            for port in base.ports(switch):
                if port in ch.changed:
                    upgraded += 1
                    per_switch[switch] += 1
                    gained += int(ch.changed[port].get(S.A_CAPACITY, 0)) - node[port][S.A_CAPACITY]
        if want["capacity_before"] + gained < spec["target"]:
            errs.append(
                f"{block} ends with {want['capacity_before'] + gained} bps; at least "
                f"{spec['target']} were asked for"
            )
        if upgraded != want["upgrades"]:
            errs.append(
                f"{upgraded} ports of {block} upgraded; {want['upgrades']} is the fewest that "
                "reach the target"
            )
    over = sorted(s for s, n in per_switch.items() if n > spec["per_switch"])
    if over:
        errs.append(f"more than {spec['per_switch']} ports upgraded on {over[:3]}")
    return errs


def _place_errors(base: Base, spec: Spec, ch: Changes) -> list[str]:
    hosts = stage_hosts(base, spec["superblock"], spec["stage"])
    want = _place_bounds(base, spec)
    allowed = {t for ts in hosts.values() for t in ts}
    errs = only_hosts(ch, allowed, f"the stage-{spec['stage']} switches of {spec['superblock']}")
    total = 0
    for block, switches in hosts.items():
        placed = 0
        for switch in switches:
            got, wrong = new_ports(
                ch, switch, spec["capacity"], first=base.highest_port(switch) + 1
            )
            errs += wrong
            placed += len(got)
            if len(got) > spec["per_switch"]:
                errs.append(
                    f"{switch} got {len(got)} new ports; at most {spec['per_switch']} per switch"
                )
        total += placed
        after = want["capacity_before"][block] + placed * spec["capacity"]
        if spec["op"] == "place" and placed and after > spec["budget"]:
            errs.append(f"{block} ends with {after} bps, above the budget ({spec['budget']} bps)")
        if spec["op"] == "place_balance" and after < want["lowest_block_capacity"]:
            errs.append(
                f"{block} ends with {after} bps; the lowest block total can be raised to "
                f"{want['lowest_block_capacity']} bps"
            )
    if total != spec["ports"]:
        errs.append(f"{total} new ports placed; the task asks for {spec['ports']}")
    return errs


_ERRORS: dict[str, Callable[[Base, Spec, Changes], list[str]]] = {
    "drain": _drain_errors,
    "drain_balance": _drain_errors,
    "expand": _expand_errors,
    "expand_fill": _expand_errors,
    "upgrade": _upgrade_errors,
    "upgrade_superblock": _upgrade_errors,
    "place": _place_errors,
    "place_balance": _place_errors,
}

_SCOPES.update({op: coupledcheck.scope for op in COUPLED})
_BOUNDS.update({op: coupledcheck.bounds for op in COUPLED})
_ERRORS.update({op: coupledcheck.errors for op in COUPLED})
