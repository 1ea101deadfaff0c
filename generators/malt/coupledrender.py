"""The natural-language task of a coupled-constraint plan (levels 6-8; coupledspec.py).

As for levels 4 and 5 (planrender.py), the prose states every rule the checker holds a plan
to (the tables of watts and costs, every limit, the order of the goals) and no optimum:
the graph holds every port, speed and switch the plan depends on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generators.malt.planrender import ANY_PLAN, MOVED, NEW_PORTS, NEW_SWITCH, Ref

Spec = dict[str, Any]


def task(spec: Spec, ref: Ref) -> str:
    return f"{_BODIES[spec['op']](spec, ref)}\n{ANY_PLAN}"


def _watts(spec: Spec) -> str:
    table = "; ".join(f"a port of {s} bps draws {w} W" for s, w in spec["watts"])
    return (
        f"Power: {table}. A switch draws the sum of what its ports draw (every port it has, "
        "old and new)."
    )


def _ports(count: int) -> str:
    return f"{count} port" + ("s" if count != 1 else "")


def _optics(pairs: list) -> str:
    return "; ".join(f"{s} bps at a cost of {c}" for s, c in pairs)


def _limits(spec: Spec, who: str) -> str:
    return (
        f"Every switch that {who} must end with at most {spec['max_ports']} ports and drawing "
        f"at most {spec['max_watts']} W"
    )


def _drain_power_binpack(spec: Spec, ref: Ref) -> str:
    switch = spec["switch"]
    return (
        f"Drain {ref(switch)} for maintenance: move each of its ports to another packet switch "
        f"of {ref(spec['block'])} with the same stage as `{switch}`, then remove `{switch}`. "
        f"{MOVED} {_watts(spec)} {_limits(spec, 'receives moved ports')} (a switch that "
        "receives nothing is left as it is). Use as few receiving switches as possible: the "
        f"number of switches that get at least one moved port is as small as it can be. "
        f"{NEW_PORTS}"
    )


def _upgrade_rules(spec: Spec) -> str:
    return (
        "An upgrade replaces a port's optic with a faster one from this catalogue, and the "
        "port's physical_capacity_bps becomes the optic's speed: "
        f"{_optics(spec['optics'])} (per optic installed). A port may take an optic only if it "
        f"is now below that optic's speed, and at most {_ports(spec['per_switch'])} may be "
        "upgraded per packet switch"
    )


def _upgrade_knapsack(spec: Spec, ref: Ref) -> str:
    block = ref(spec["block"])
    return (
        f"Upgrade ports of the stage-{spec['stage']} packet switches of {block} so that the "
        f"total physical capacity of the ports in {block} (all its switches, every stage) "
        f"reaches at least {spec['target']} bps. {_upgrade_rules(spec)}. Keep the total cost "
        "of the optics installed as low as it can be."
    )


def _shared_budget_two_blocks(spec: Spec, ref: Ref) -> str:
    (first, second), (t1, t2) = spec["blocks"], spec["targets"]
    stock = "; ".join(f"{n} optics of {s} bps" for s, n in spec["stock"])
    return (
        f"Upgrade ports of the stage-{spec['stage']} packet switches of {ref(first)} and of "
        f"{ref(second)} so that the total physical capacity of the ports in `{first}` (all its "
        f"switches, every stage) reaches at least {t1} bps and that of `{second}` at least "
        f"{t2} bps. {_upgrade_rules(spec)}. The stock is shared by both blocks and holds only "
        f"{stock} in all; every other optic of the catalogue is available without limit. Keep "
        "the total cost of the optics installed in both blocks together as low as it can be."
    )


def _place_two_stage(spec: Spec, ref: Ref) -> str:
    mix = ", ".join(f"{n} of {s} bps" for s, n in spec["ports"])
    low, high = spec["stages"]
    return (
        f"Add these new ports to packet switches of {ref(spec['block'])}: {mix}. Each goes to a "
        f"packet switch of that block, of stage {low} or {high}, and the two stages must gain "
        f"the same: the total physical capacity of the new ports on its stage-{low} switches "
        f"equals that of the new ports on its stage-{high} switches. "
        f"{_watts(spec)} {_limits(spec, 'gets new ports')}. Use as few switches as possible: "
        f"the number of switches that get at least one new port is as small as it can be. "
        f"{NEW_PORTS}"
    )


def _drain_blast_radius(spec: Spec, ref: Ref) -> str:
    first, second = spec["switches"]
    return (
        f"Drain {ref(first)} and {ref(second)} of {ref(spec['block'])} for maintenance: move "
        "each port of a drained switch to a packet switch of the same block that has the same "
        "stage as that drained switch and is not itself being drained, then remove both. "
        f"{MOVED} {_watts(spec)} {_limits(spec, 'receives moved ports')}, and with a total "
        f"physical capacity of its ports of at most {spec['max_bps']} bps, so that losing one "
        "switch loses little (a switch that receives nothing is left as it is). Choose the "
        "plan by these goals, in this order: first, as few receiving switches as possible (in "
        "both stages together); then, among the plans with that few, the lowest peak power: "
        "the most watts any receiving switch ends up drawing is as small as it can be. "
        f"{NEW_PORTS}"
    )


def _expand_lexicographic(spec: Spec, ref: Ref) -> str:
    block, stage = ref(spec["block"]), spec["stage"]
    names = ", ".join(f"`{n}`" for n in spec["names"])
    return (
        f"Bring the total physical capacity of the ports in {block} (all its switches, every "
        f"stage) to at least {spec['target']} bps by adding new ports to its existing packet "
        f"switches of stage {stage} and, where needed, to new packet switches of stage {stage} "
        f"added to it, whose names are taken in this order: {names} (use a prefix of this "
        "list). A new port takes a new optic from this catalogue, and its "
        f"physical_capacity_bps is the optic's speed: {_optics(spec['optics'])}. "
        f"{_watts(spec)} {_limits(spec, 'gets new ports, existing or new,')}, and every new "
        "switch gets at least one port. Choose the plan by these goals, in this order: first, "
        "as few new switches as possible; then, among those plans, the lowest total cost of "
        "the optics added; then, among those, as few new ports as possible. "
        + NEW_SWITCH.format(stage=stage, block=f"`{spec['block']}`")
        + f" {NEW_PORTS}"
    )


def _drain_min_cost(spec: Spec, ref: Ref) -> str:
    gone = spec["switches"]
    names = ", ".join(ref(s) for s in gone[:-1]) + f" and {ref(gone[-1])}"
    rows = "; ".join(
        f"`{name}`: " + ", ".join(f"{s} bps {c}" for s, c in pairs) for name, pairs in spec["costs"]
    )
    return (
        f"Drain {names} of {ref(spec['block'])} for maintenance (all of stage {spec['stage']}): "
        f"move each of their ports to a packet switch of the same block and stage that is not "
        f"itself being drained, then remove the drained switches. {MOVED} Every switch that "
        f"receives moved ports must end with at most {spec['max_ports']} ports (old and new) "
        f"and receive at most {spec['per_speed']} moved ports of any one speed (a switch that "
        "receives nothing is left as it is). A moved port costs, by the switch that receives "
        f"it and the port's physical_capacity_bps (optics and cabling there): {rows}. The cost "
        "of a plan is the sum of the costs of all its moved ports; use the lowest total cost "
        f"possible. {NEW_PORTS}"
    )


_BODIES: dict[str, Callable[[Spec, Ref], str]] = {
    "drain_power_binpack": _drain_power_binpack,
    "upgrade_knapsack": _upgrade_knapsack,
    "place_two_stage": _place_two_stage,
    "shared_budget_two_blocks": _shared_budget_two_blocks,
    "drain_blast_radius": _drain_blast_radius,
    "expand_lexicographic": _expand_lexicographic,
    "drain_min_cost": _drain_min_cost,
}
