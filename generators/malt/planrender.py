"""The natural-language task of a capacity-planning query (levels 4 and 5; plancheck.py).

The prose states every rule the plan checker holds an answer to, and no optimum: the agent
finds the limits the task implies (how many ports reach a target, how low a balanced
level can go) from the graph itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Ref = Callable[[str], str]

NEW_PORTS = (
    "A port added to an existing packet switch is named `<switch>.p<k>`, numbering on from "
    "the highest port number the switch has (a switch whose ports go up to `.p16` gets "
    "`.p17`, `.p18`, ...); a new packet switch's ports are `<switch>.p1`, `<switch>.p2`, .... "
    'A new port is a node of type ["EK_PORT"] with "name" and "physical_capacity_bps" and '
    "nothing else, contained in its switch."
)
NEW_SWITCH = (
    'A new packet switch is a node of type ["EK_PACKET_SWITCH"] with "name" and "switch_loc" '
    '{{"stage": {stage}}} and nothing else, contained in {block} (and in nothing else).'
)
MOVED = (
    "A port is moved by giving the receiving switch a new port with the same "
    "physical_capacity_bps; the drained switch is then removed together with everything "
    "it contains."
)
ANY_PLAN = (
    "Several plans may meet these rules: any plan that meets all of them is accepted. "
    "Change nothing else. Return the modified graph (the same DiGraph object, changed in "
    "place)."
)


def task(spec: dict[str, Any], ref: Ref) -> str:
    """The task paragraph of a planning spec; `ref` names a base node in prose."""
    body = _BODIES[spec["op"]](spec, ref)
    return f"{body}\n{ANY_PLAN}"


def _drain(spec: dict[str, Any], ref: Ref) -> str:
    switch, block = spec["switch"], spec["block"]
    return (
        f"Drain {ref(switch)} for maintenance: move each of its ports to another packet "
        f"switch of {ref(block)} with the same stage as `{switch}`, never to a switch that "
        f"would then hold more than {spec['max_ports']} ports, then remove `{switch}`. "
        f"{MOVED} {NEW_PORTS}"
    )


def _drain_balance(spec: dict[str, Any], ref: Ref) -> str:
    first, second = spec["switches"]
    return (
        f"Drain {ref(first)} and {ref(second)} of {ref(spec['block'])} for maintenance: move "
        "each port of a drained switch to a packet switch of the same block that has the same "
        "stage as that drained switch and is not itself being drained, then remove both. "
        f"{MOVED} Spread the moved ports so that, for each stage, the largest number of ports "
        "that any switch receiving moved ports ends with is as small as it can be. "
        f"{NEW_PORTS}"
    )


def _switch_list(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _expand(spec: dict[str, Any], ref: Ref) -> str:
    block = ref(spec["block"])
    return (
        f"Expand {block}: add the new packet switches {_switch_list(spec['switches'])} to it "
        f"and give each new ports of physical_capacity_bps {spec['capacity']}, so that the total "
        f"physical capacity of the ports in {block} reaches at least {spec['target']} bps. Add as "
        "few new ports as possible in all, and balance them: the numbers of ports of the new "
        "switches may differ by at most one (each gets at least one). "
        + NEW_SWITCH.format(stage=spec["stage"], block=f"`{spec['block']}`")
        + f" {NEW_PORTS}"
    )


def _expand_fill(spec: dict[str, Any], ref: Ref) -> str:
    block, most = ref(spec["block"]), spec["max_ports"]
    return (
        f"Bring the total physical capacity of the ports in {block} to at least "
        f"{spec['target']} bps by adding ports of physical_capacity_bps {spec['capacity']}: to its "
        f"existing packet switches of stage {spec['stage']} and, where they cannot take enough, to "
        f"new packet switches of stage {spec['stage']} added to it, whose names are taken in this "
        f"order: {_switch_list(spec['names'])} (use a prefix of this list). No switch, existing "
        f"or new, may end with more than {most} ports, and every new switch gets at least one. "
        "Add as few new ports as possible and, with that, as few new switches as possible. "
        + NEW_SWITCH.format(stage=spec["stage"], block=f"`{spec['block']}`")
        + f" {NEW_PORTS}"
    )


def _upgrade_rules(spec: dict[str, Any]) -> str:
    return (
        f"Only ports now below {spec['capacity']} bps may be upgraded, an upgraded port's "
        f"physical_capacity_bps becomes exactly {spec['capacity']}, at most {spec['per_switch']} "
        "ports may be upgraded per packet switch (its optics budget), and as few ports as "
        "possible are upgraded"
    )


def _upgrade(spec: dict[str, Any], ref: Ref) -> str:
    block = ref(spec["block"])
    return (
        f"Upgrade ports of {block} so that the total physical capacity of its ports reaches at "
        f"least {spec['target']} bps. {_upgrade_rules(spec)}."
    )


def _upgrade_superblock(spec: dict[str, Any], ref: Ref) -> str:
    return (
        f"Upgrade ports of {ref(spec['superblock'])} so that the total physical capacity of the "
        f"ports in each of its aggregation blocks reaches at least {spec['target']} bps (a block "
        f"already there needs nothing). {_upgrade_rules(spec)} in all."
    )


def _placement(spec: dict[str, Any], ref: Ref) -> str:
    most = f"{spec['per_switch']} new port" + ("s" if spec["per_switch"] != 1 else "")
    return (
        f"Add {spec['ports']} new ports of physical_capacity_bps {spec['capacity']} to "
        f"{ref(spec['superblock'])}, each on a packet switch of stage {spec['stage']} in one of "
        f"its aggregation blocks, at most {most} per switch"
    )


def _place(spec: dict[str, Any], ref: Ref) -> str:
    return (
        f"{_placement(spec, ref)}. Each aggregation block has a power and cooling budget of "
        f"{spec['budget']} bps: no block that gets new ports may end with a total physical "
        f"capacity of its ports above it. {NEW_PORTS}"
    )


def _place_balance(spec: dict[str, Any], ref: Ref) -> str:
    return (
        f"{_placement(spec, ref)}, placed so that afterwards the smallest total physical "
        f"capacity of the ports of any aggregation block of {ref(spec['superblock'])} (the "
        f"weakest block) is as large as it can be. {NEW_PORTS}"
    )


_BODIES: dict[str, Callable[[dict[str, Any], Ref], str]] = {
    "drain": _drain,
    "drain_balance": _drain_balance,
    "expand": _expand,
    "expand_fill": _expand_fill,
    "upgrade": _upgrade,
    "upgrade_superblock": _upgrade_superblock,
    "place": _place,
    "place_balance": _place_balance,
}
