"""Seeded drawing of the capacity-planning tasks of levels 4 and 5 (specs: plancheck.py).

Level 4 is one planning operation under constraints on a block or a superblock: drain a
switch for maintenance without exceeding a port limit, add switches and spread new ports
evenly to reach a capacity target, upgrade the fewest ports under an optics budget per
switch, place new ports under a per-block budget. Level 5 makes each larger and asks for
an optimum: drain two switches with the moved ports balanced, fill existing switches and
add the fewest new switches, upgrade every block of a superblock, place ports so the
highest block total is as low as it can be.

A template is drawn first (`pipeline.querygen.weighted_choice`: uniform, or by the weights
of failure-driven sampling), then its operands from sorted sequences, so a draw depends
only on the RNG state. Limits are drawn so that they bind (a limit every plan keeps asks
nothing) and the task is feasible; a draw that is not raises Redraw. Levels 6-8 are drawn
by coupleddraw.py, whose templates a topology may not offer (`available`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from generators.malt import planmath as pm
from generators.malt import schema as S
from generators.malt.coupleddraw import CoupledDrawer
from generators.malt.index import Redraw, TopoIndex
from generators.malt.operations import TEMPLATES, selects
from pipeline.api import ConfigError, weighted_choice

GBPS = 1_000_000_000
CAPACITIES = tuple(g * GBPS for g in (1, 10, 25, 40, 100, 200, 400))
PS, PORT, AGG, SPINE, SB = (
    S.EK_PACKET_SWITCH,
    S.EK_PORT,
    S.EK_AGG_BLOCK,
    S.EK_SPINEBLOCK,
    S.EK_SUPERBLOCK,
)
_SWITCH_NAME = re.compile(r"\.s(\d+)c(\d+)$")


def _pick(rng: random.Random, seq: Sequence[Any]) -> Any:
    if not seq:
        raise Redraw("nothing to choose from")
    return seq[rng.randrange(len(seq))]


class PlanDrawer:
    """Draws planning specs on one base topology (`operations`: the templates allowed)."""

    def __init__(self, index: TopoIndex, operations: Sequence[str] | None = None) -> None:
        self.ix = index
        self.switches = index.by_kind[PS]
        self.blocks = tuple(sorted(index.by_kind[AGG] + index.by_kind[SPINE]))
        self.superblocks = index.by_kind[SB]
        self._memo: dict[tuple[Any, ...], Any] = {}  # base values, computed once each
        self.coupled = CoupledDrawer(index)
        self.templates = {
            level: [t for t in names if selects(operations, t) and self.coupled.available(t)]
            for level, names in TEMPLATES.items()
        }
        self._draw: dict[str, Callable[[random.Random], dict[str, Any]]] = {
            "drain": self.drain,
            "drain_balance": self.drain_balance,
            "expand": self.expand,
            "expand_fill": self.expand_fill,
            "upgrade": self.upgrade,
            "upgrade_superblock": self.upgrade_superblock,
            "place": self.place,
            "place_balance": self.place_balance,
            **self.coupled.draws,
        }

    def draw(
        self, level: int, rng: random.Random, weights: Mapping[str, float] | None = None
    ) -> dict[str, Any]:
        return self.draw_named(self.pick(level, rng, weights), rng)

    def pick(
        self, level: int, rng: random.Random, weights: Mapping[str, float] | None = None
    ) -> str:
        """A template of `level`: uniform, or by `weights`."""
        options = self.templates[level]
        if not options:
            raise ConfigError(
                f"app.operations selects none of level {level}'s operations "
                f"({', '.join(TEMPLATES[level])}) on this topology"
            )
        return weighted_choice(rng, options, weights)

    def draw_named(self, template: str, rng: random.Random) -> dict[str, Any]:
        return self._draw[template](rng)

    # -- the base, read off the index ----------------------------------------------------

    def members(self, node: str, kind: str) -> tuple[str, ...]:
        return self._once(("members", node, kind), lambda: self.ix.members(node, kind))

    def ports(self, switch: str) -> tuple[str, ...]:
        return self.members(switch, PORT)

    def stage(self, switch: str) -> int:
        return self.ix.attrs[switch][S.A_SWITCH_LOC][S.A_STAGE]

    def _once(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def capacity(self, node: str) -> int:
        attrs = self.ix.attrs
        return self._once(
            ("capacity", node),
            lambda: sum(attrs[p][S.A_CAPACITY] for p in self.members(node, PORT)),
        )

    def block_of(self, switch: str) -> str:
        block = self.ix.container(switch, AGG) or self.ix.container(switch, SPINE)
        if block is None:
            raise Redraw(f"{switch!r} is in no block")
        return block

    def group(self, block: str, stage: int, leave: Sequence[str] = ()) -> list[str]:
        return [t for t in self.members(block, PS) if t not in leave and self.stage(t) == stage]

    def new_switch_names(self, block: str, stage: int, count: int) -> list[str]:
        """The next `count` free switch names of `stage` in `block` (`<block>.s<stage>c<n>`)."""
        used = [
            int(m.group(2))
            for n in self.members(block, PS)
            if (m := _SWITCH_NAME.search(n)) and int(m.group(1)) == stage
        ]
        top = max(used, default=0)
        return [f"{block}.s{stage}c{top + i}" for i in range(1, count + 1)]

    def best_gains(self, block: str, capacity: int, per_switch: int) -> list[int]:
        """planmath.best_gains of upgrading ports of `block` to `capacity`."""
        attrs = self.ix.attrs

        def gains() -> list[int]:
            by_switch = {
                t: [
                    capacity - attrs[p][S.A_CAPACITY]
                    for p in self.ports(t)
                    if attrs[p][S.A_CAPACITY] < capacity
                ]
                for t in self.members(block, PS)
            }
            return pm.best_gains(by_switch, per_switch)

        return self._once(("gains", block, capacity, per_switch), gains)

    def upgrade_capacity(self, rng: random.Random, scope: str) -> int:
        attrs = self.ix.attrs
        lowest = self._once(
            ("lowest", scope),
            lambda: min(attrs[p][S.A_CAPACITY] for p in self.members(scope, PORT)),
        )
        return _pick(rng, [c for c in CAPACITIES if c > lowest])

    def target(self, rng: random.Random, before: int, ports: int, capacity: int) -> int:
        """A capacity target that `ports` new ports of `capacity` reach and one fewer do not."""
        return (
            before + (ports - 1) * capacity + _pick(rng, [capacity // 4, capacity // 2, capacity])
        )

    # -- level 4 ---------------------------------------------------------------------------

    def drain(self, rng: random.Random) -> dict[str, Any]:
        switch = _pick(rng, self.switches)
        block = self.block_of(switch)
        group = self.group(block, self.stage(switch), [switch])
        if not group:
            raise Redraw("no switch of the same stage to take the ports")
        level = pm.water_level([len(self.ports(t)) for t in group], len(self.ports(switch)))
        return {
            "op": "drain",
            "switch": switch,
            "block": block,
            "max_ports": level + rng.randint(0, 3),
        }

    def expand(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.blocks)
        stage = self.stage(_pick(rng, self.members(block, PS)))
        k = rng.randint(2, 4)
        capacity = _pick(rng, CAPACITIES)
        ports = rng.randint(k + 1, 6 * k)
        ports += ports % k == 0  # a count the switches cannot share equally: several plans
        return {
            "op": "expand",
            "block": block,
            "stage": stage,
            "switches": self.new_switch_names(block, stage, k),
            "capacity": capacity,
            "target": self.target(rng, self.capacity(block), ports, capacity),
        }

    def upgrade(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.blocks)
        capacity = self.upgrade_capacity(rng, block)
        per_switch = rng.randint(1, 4)
        best = self.best_gains(block, capacity, per_switch)
        if len(best) < 2:
            raise Redraw("fewer than two ports can be upgraded")
        k = rng.randint(2, min(len(best), 12))
        reach = self.capacity(block) + sum(best[: k - 1])
        target = reach + GBPS * rng.randint(1, best[k - 1] // GBPS)
        return {
            "op": "upgrade",
            "block": block,
            "capacity": capacity,
            "target": target,
            "per_switch": per_switch,
        }

    def place(self, rng: random.Random) -> dict[str, Any]:
        superblock, stage, capacity, per_switch, hosts = self._placement(rng)
        caps = {b: self.capacity(b) for b in hosts}
        budget = max(caps.values()) + capacity * rng.randint(0, 3) + _pick(rng, [0, capacity // 2])
        room = [
            pm.budget_room(caps[b], per_switch * len(hosts[b]), capacity, budget) for b in hosts
        ]
        if sum(room) < 2 or sum(room) == per_switch * sum(len(h) for h in hosts.values()):
            raise Redraw("the budget leaves no room, or never binds")
        return {
            "op": "place",
            "superblock": superblock,
            "stage": stage,
            "ports": rng.randint(max(2, sum(room) // 2), sum(room)),
            "capacity": capacity,
            "budget": budget,
            "per_switch": per_switch,
        }

    def _placement(self, rng: random.Random) -> tuple[str, int, int, int, dict[str, list[str]]]:
        superblock = _pick(rng, self.superblocks)
        stage = self.stage(_pick(rng, self.members(superblock, PS)))
        capacity = _pick(rng, CAPACITIES)
        per_switch = rng.randint(1, 3)
        hosts = {b: self.group(b, stage) for b in self.members(superblock, AGG)}
        if len(hosts) < 2:
            raise Redraw("a superblock of one aggregation block has nothing to balance")
        return superblock, stage, capacity, per_switch, hosts

    # -- level 5 ---------------------------------------------------------------------------

    def drain_balance(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.blocks)
        members = list(self.members(block, PS))
        first = _pick(rng, members)
        second = _pick(rng, [m for m in members if m != first])
        pair = sorted([first, second])
        for switch in pair:
            if not self.group(block, self.stage(switch), pair):
                raise Redraw("no switch of the same stage to take the ports")
        return {"op": "drain_balance", "block": block, "switches": pair}

    def expand_fill(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.blocks)
        stage = self.stage(_pick(rng, self.members(block, PS)))
        counts = [len(self.ports(t)) for t in self.group(block, stage)]
        most = max(counts) + rng.randint(0, 3)
        room = sum(most - c for c in counts)
        extra = rng.randint(1, 3 * most)  # ports the existing switches cannot take
        switches = pm.ceil_div(extra, most)
        capacity = _pick(rng, CAPACITIES)
        return {
            "op": "expand_fill",
            "block": block,
            "stage": stage,
            "names": self.new_switch_names(block, stage, switches + rng.randint(1, 2)),
            "capacity": capacity,
            "max_ports": most,
            "target": self.target(rng, self.capacity(block), room + extra, capacity),
        }

    def upgrade_superblock(self, rng: random.Random) -> dict[str, Any]:
        superblock = _pick(rng, self.superblocks)
        blocks = self.members(superblock, AGG)
        capacity = self.upgrade_capacity(rng, superblock)
        per_switch = rng.randint(1, 4)
        caps = sorted(self.capacity(b) for b in blocks)
        if len(caps) < 2:
            raise Redraw("a superblock of one aggregation block")
        # At most 16 upgrades per block, and every block can reach the target.
        reach = min(
            self.capacity(b) + sum(self.best_gains(b, capacity, per_switch)[:16]) for b in blocks
        )
        # Above the second-lowest block (two blocks need upgrades) where every block can
        # reach that far, else above the lowest.
        low = caps[1] if reach > caps[1] else caps[0]
        if reach <= low:
            raise Redraw("no block can reach a target above its capacity")
        target = low + GBPS * rng.randint(1, (reach - low) // GBPS)
        return {
            "op": "upgrade_superblock",
            "superblock": superblock,
            "capacity": capacity,
            "target": target,
            "per_switch": per_switch,
        }

    def place_balance(self, rng: random.Random) -> dict[str, Any]:
        superblock, stage, capacity, per_switch, hosts = self._placement(rng)
        slots = per_switch * sum(len(h) for h in hosts.values())
        if slots < 2:
            raise Redraw("no room for two ports")
        return {
            "op": "place_balance",
            "superblock": superblock,
            "stage": stage,
            "ports": rng.randint(2, min(slots, 40)),
            "capacity": capacity,
            "per_switch": per_switch,
        }
