"""The MALT graph schema: entity kinds, relationship kinds, the containment hierarchy and
the attribute names every MALT graph in NetGauge uses (read from Google's file or generated).

Conventions (the prompt states them to agents, the checker enforces them):
- A node's key is the entity name; the node also carries `name` (the same string).
- `type` is always a sorted list of entity kinds. Entities of different kinds that share
  a name (a chassis, its control point and its packet switch) are one physical device
  and collapse into one node whose `type` lists all of their kinds.
- An edge's `type` is always a sorted list of relationship kinds. Relationships between
  same-named entities (the chassis contains its own packet switch and control point, the
  control point controls that switch) become one self-loop typed
  ["RK_CONTAINS", "RK_CONTROLS"]; the self-loop is kept so the graph has one edge per
  distinct (a, z) pair of names.
- Ports carry `physical_capacity_bps` (int, bits per second); packet switches carry
  `switch_loc` (a dict, e.g. {"stage": 2}).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

EK_JUPITER = "EK_JUPITER"
EK_SUPERBLOCK = "EK_SUPERBLOCK"
EK_SPINEBLOCK = "EK_SPINEBLOCK"
EK_AGG_BLOCK = "EK_AGG_BLOCK"
EK_RACK = "EK_RACK"
EK_CHASSIS = "EK_CHASSIS"
EK_CONTROL_DOMAIN = "EK_CONTROL_DOMAIN"
EK_CONTROL_POINT = "EK_CONTROL_POINT"
EK_PACKET_SWITCH = "EK_PACKET_SWITCH"
EK_PORT = "EK_PORT"

RK_CONTAINS = "RK_CONTAINS"
RK_CONTROLS = "RK_CONTROLS"

NODE_KINDS: tuple[str, ...] = (
    EK_JUPITER,
    EK_SUPERBLOCK,
    EK_SPINEBLOCK,
    EK_AGG_BLOCK,
    EK_RACK,
    EK_CHASSIS,
    EK_CONTROL_DOMAIN,
    EK_CONTROL_POINT,
    EK_PACKET_SWITCH,
    EK_PORT,
)
EDGE_KINDS: tuple[str, ...] = (RK_CONTAINS, RK_CONTROLS)

# Attribute names.
A_NAME = "name"
A_TYPE = "type"
A_CAPACITY = "physical_capacity_bps"
A_SWITCH_LOC = "switch_loc"
A_STAGE = "stage"  # key inside switch_loc

# Which kind may directly contain which: exactly the pairs in Google's example.
CONTAINS: dict[str, frozenset[str]] = {
    EK_JUPITER: frozenset({EK_SUPERBLOCK, EK_SPINEBLOCK}),
    EK_SUPERBLOCK: frozenset({EK_AGG_BLOCK}),
    EK_AGG_BLOCK: frozenset({EK_PACKET_SWITCH}),
    EK_SPINEBLOCK: frozenset({EK_PACKET_SWITCH}),
    EK_RACK: frozenset({EK_CHASSIS}),
    EK_CHASSIS: frozenset({EK_PACKET_SWITCH, EK_CONTROL_POINT}),
    EK_CONTROL_DOMAIN: frozenset({EK_CONTROL_POINT}),
    EK_PACKET_SWITCH: frozenset({EK_PORT}),
}
# Which kind may control which.
CONTROLS: dict[str, frozenset[str]] = {EK_CONTROL_POINT: frozenset({EK_PACKET_SWITCH})}

# Kinds that need no container: the tops of the three trees (fabric, racks, control).
ROOT_KINDS: frozenset[str] = frozenset({EK_JUPITER, EK_RACK, EK_CONTROL_DOMAIN})

# For each non-root kind, the kinds allowed to contain it.
CONTAINERS: dict[str, frozenset[str]] = {
    kind: frozenset(p for p, kids in CONTAINS.items() if kind in kids)
    for kind in NODE_KINDS
    if kind not in ROOT_KINDS
}

# Human-readable names used in prompts: (singular, plural).
KIND_NAMES: dict[str, tuple[str, str]] = {
    EK_JUPITER: ("Jupiter fabric", "Jupiter fabrics"),
    EK_SUPERBLOCK: ("superblock", "superblocks"),
    EK_SPINEBLOCK: ("spine block", "spine blocks"),
    EK_AGG_BLOCK: ("aggregation block", "aggregation blocks"),
    EK_RACK: ("rack", "racks"),
    EK_CHASSIS: ("chassis", "chassis"),
    EK_CONTROL_DOMAIN: ("control domain", "control domains"),
    EK_CONTROL_POINT: ("control point", "control points"),
    EK_PACKET_SWITCH: ("packet switch", "packet switches"),
    EK_PORT: ("port", "ports"),
}


def kind_name(kind: str, plural: bool = False) -> str:
    return KIND_NAMES[kind][1 if plural else 0]


def type_list(kinds: Iterable[str]) -> list[str]:
    """The canonical `type` value: sorted, without duplicates."""
    return sorted(set(kinds))


def port_attrs(name: str, capacity_bps: int) -> dict[str, Any]:
    return {A_NAME: name, A_TYPE: [EK_PORT], A_CAPACITY: int(capacity_bps)}


def switch_attrs(
    name: str, stage: int, kinds: Iterable[str] = (EK_PACKET_SWITCH,)
) -> dict[str, Any]:
    return {A_NAME: name, A_TYPE: type_list(kinds), A_SWITCH_LOC: {A_STAGE: int(stage)}}


def contains_edge() -> dict[str, Any]:
    return {A_TYPE: [RK_CONTAINS]}


# The kinds of a collapsed switch device: chassis, control point and packet switch.
DEVICE_KINDS: tuple[str, ...] = (EK_CHASSIS, EK_CONTROL_POINT, EK_PACKET_SWITCH)
