"""Seeded drawing of the coupled-constraint plans of levels 6-8 (specs: coupledspec.py).

A draw picks where the task sits and its numbers from sorted sequences with the caller's
RNG, so it depends only on the RNG state; it is cheap (no search). Limits are drawn around
what a few switches can take, so that they bind: the exact search and the greedy filter
(coupledgreedy.py) then run when the generator validates the draw, and most draws are
rejected there (the share is in the README). Tables of watts and costs are drawn per task
(increasing with speed, not in proportion to it), so two tasks on the same switches
differ in their numbers too.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from generators.malt import schema as S
from generators.malt.coupledgreedy import promising
from generators.malt.coupledread import Reader, switch_of, table
from generators.malt.coupledspec import DRAINS, block_total, stages_of, task_of, upgradable
from generators.malt.coupledtransport import SEARCH_FLOOR, dp_work
from generators.malt.index import Redraw, TopoIndex

G = 1_000_000_000
SPEEDS = tuple(g * G for g in (1, 10, 25, 40, 100, 200, 400))
# Watts of one port and cost of one optic, per speed: ranges a task's table is drawn from.
WATTS = {1: (1, 2), 10: (2, 4), 25: (3, 5), 40: (4, 7), 100: (6, 11), 200: (9, 15), 400: (13, 22)}
COSTS = {10: (1, 3), 25: (2, 5), 40: (3, 7), 100: (5, 13), 200: (9, 21), 400: (14, 34)}
MIX_TRIES = 50
LIMIT_TRIES = 12
WIDE_STAGE = 7  # switches of one stage a drain_min_cost needs: 3-6 drained, at least 4 take
COST = (1, 15)  # the range of a moved port's cost, per receiving switch and speed
_SWITCH_NAME = re.compile(r"\.s(\d+)c(\d+)$")


def _pick(rng: random.Random, seq: Sequence[Any]) -> Any:
    if not seq:
        raise Redraw("nothing to choose from")
    return seq[rng.randrange(len(seq))]


def _increasing(rng: random.Random, speeds: Sequence[int], ranges: dict[int, tuple]) -> list:
    """[[speed, value], ...]: a value per speed from its range, strictly increasing."""
    out, last = [], 0
    for speed in sorted(speeds):
        low, high = ranges[speed // G]
        value = max(rng.randint(low, high), last + 1)
        out.append([speed, value])
        last = value
    return out


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class CoupledDrawer:
    """Draws the specs of levels 6-8 on one base topology."""

    def __init__(self, index: TopoIndex) -> None:
        self.ix = index
        self.read = Reader.of(index)
        self.blocks = tuple(sorted(index.by_kind[S.EK_AGG_BLOCK] + index.by_kind[S.EK_SPINEBLOCK]))
        speeds = {a[S.A_CAPACITY] for n, a in index.attrs.items() if S.EK_PORT in index.kinds[n]}
        # Drains move the ports a switch has: with one port speed in the whole topology
        # (Google's example) every drained port is alike and a greedy packing is optimal.
        self.mixed = len(speeds) > 1
        self.full: frozenset[str] = frozenset()
        self.draws: dict[str, Callable[[random.Random], dict[str, Any]]] = {
            "drain_power_binpack": self.drain_power_binpack,
            "upgrade_knapsack": self.upgrade_knapsack,
            "place_power_binpack": self.place_power_binpack,
            "place_two_stage": self.place_two_stage,
            "shared_budget_two_blocks": self.shared_budget_two_blocks,
            "drain_blast_radius": self.drain_blast_radius,
            "expand_lexicographic": self.expand_lexicographic,
            "drain_min_cost": self.drain_min_cost,
        }
        # drain_min_cost needs a stage with room for a large search (coupledtransport.py).
        self.wide = any(
            len(self.group(b, s)) >= WIDE_STAGE
            for b in self.blocks
            for s in stages_of(self.read, b)
        )

    def open_blocks(self) -> tuple[str, ...]:
        """The blocks a one-block task may sit in: all but `full` (the generator sets it to
        the blocks whose variety stratum of the template is full; empty, every block)."""
        if not self.full:
            return self.blocks
        return tuple(b for b in self.blocks if b not in self.full)

    def available(self, name: str) -> bool:
        """Whether this topology offers the template `name` (any of levels 1-8)."""
        if name == "drain_min_cost":
            return self.mixed and self.wide
        return self.mixed or name not in DRAINS

    # -- reading the base ------------------------------------------------------------------

    def group(self, block: str, stage: int, leave: Sequence[str] = ()) -> list[str]:
        return [
            t for t in self.read.switches(block) if t not in leave and self.read.stage(t) == stage
        ]

    def speeds(self, switches: Sequence[str]) -> set[int]:
        return {self.read.speed(p) for t in switches for p in self.read.ports(t)}

    def limits(
        self, rng: random.Random, switches: Sequence[str], watts: list, ports: int, power: int
    ) -> tuple[int, int]:
        """(max ports, max watts) around what k of `switches` (k drawn) could take of
        `ports` ports drawing `power` watts in all."""
        per = table(watts)
        now = [switch_of(self.read, t, per) for t in switches]
        k = rng.randint(2, max(2, min(4, len(now))))
        counts = sorted(s.ports for s in now)
        power_now = sorted(s.watts for s in now)
        most = counts[min(k, len(now)) - 1] + _ceil(ports, k) + rng.randint(-1, 2)
        top = power_now[min(k, len(now)) - 1] + _ceil(power, k) + rng.randint(-3, 6)
        return most, top

    def new_names(self, block: str, stage: int, count: int) -> list[str]:
        used = [
            int(m.group(2))
            for n in self.read.switches(block)
            if (m := _SWITCH_NAME.search(n)) and int(m.group(1)) == stage
        ]
        top = max(used, default=0)
        return [f"{block}.s{stage}c{top + i}" for i in range(1, count + 1)]

    # -- level 6 ---------------------------------------------------------------------------

    def drain_power_binpack(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.open_blocks())
        switch = _pick(rng, self.read.switches(block))
        takers = self.group(block, self.read.stage(switch), [switch])
        if len(takers) < 2:
            raise Redraw("fewer than two switches of the stage to take the ports")
        watts = _increasing(rng, self.speeds([switch, *takers]), WATTS)
        moved = [self.read.speed(p) for p in self.read.ports(switch)]
        per = table(watts)
        head = {"op": "drain_power_binpack", "block": block, "switch": switch}
        return self.limited(rng, head, takers, watts, len(moved), sum(per[s] for s in moved))

    def catalogue(self, rng: random.Random, above: int, kinds: int) -> list:
        """[[speed, cost], ...]: `kinds` optics faster than `above`, costs increasing."""
        faster = [s for s in SPEEDS if s > above and s // G in COSTS]
        if len(faster) < 2:
            raise Redraw("no faster optics to choose from")
        chosen = sorted(rng.sample(faster, min(kinds, len(faster))))
        return _increasing(rng, chosen, COSTS)

    def need(self, rng: random.Random, found: Any, optics: list, per_switch: int) -> int:
        """A deficit between a tenth and two thirds of what the upgrades could add."""
        top = max(s for s, _ in optics)
        room = sum(
            sum(sorted((top - s for _, s in ports), reverse=True)[:per_switch])
            for _, ports in found.switches
        )
        if room < 10 * G:
            raise Redraw("too little to upgrade")
        return G * rng.randint(max(1, room // (10 * G)), max(1, 2 * room // (3 * G)))

    def upgrade_knapsack(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.open_blocks())
        stage = _pick(rng, stages_of(self.read, block))
        optics = self.catalogue(rng, min(self.speeds(self.group(block, stage))), rng.randint(2, 3))
        per_switch = rng.randint(1, 3)
        found = upgradable(self.read, block, stage, max(s for s, _ in optics))
        need = self.need(rng, found, optics, per_switch)
        return {
            "op": "upgrade_knapsack",
            "block": block,
            "stage": stage,
            "target": block_total(self.read, block) + need,
            "per_switch": per_switch,
            "optics": optics,
        }

    def place_power_binpack(self, rng: random.Random) -> dict[str, Any]:
        """A mix of new ports on one stage of a block. Unlike a drain, whose ports are the
        drained switch's (often all of one speed), the mix is drawn, so it defeats every
        greedy rule on narrow stages too (README: the small topology's level 6)."""
        block = _pick(rng, self.open_blocks())
        stage = _pick(rng, stages_of(self.read, block))
        group = self.group(block, stage)
        if len(group) < 3:  # on two, the roomiest or the emptiest first is optimal at 1
            raise Redraw("fewer than three switches of the stage to take the ports")
        speeds = sorted(rng.sample([s for s in SPEEDS if s >= 10 * G], rng.randint(2, 3)))
        mix = [[s, rng.randint(1, 5)] for s in speeds]
        watts = _increasing(rng, self.speeds(group) | set(speeds), WATTS)
        per = table(watts)
        count, power = sum(c for _, c in mix), sum(per[s] * c for s, c in mix)
        head = {"op": "place_power_binpack", "block": block, "stage": stage, "ports": mix}
        return self.limited(rng, head, group, watts, count, power)

    def limited(
        self, rng: random.Random, head: dict[str, Any], takers: Sequence[str], watts: list,
        count: int, power: int,
    ) -> dict[str, Any]:  # fmt: skip
        """`head` with port and power limits for `count` ports of `power` watts on
        `takers`, drawn until a greedy plan is not obviously optimal
        (coupledgreedy.promising): cheap, and it keeps the draws the exact filter then
        rejects from crowding the keys."""
        for _ in range(LIMIT_TRIES):
            most, top = self.limits(rng, takers, watts, count, power)
            spec = {**head, "max_ports": most, "max_watts": top, "watts": watts}
            if promising(task_of(spec, self.ix)):
                return spec
        raise Redraw("every limit drawn leaves a greedy plan optimal")

    # -- level 7 ---------------------------------------------------------------------------

    def place_two_stage(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.open_blocks())
        stages = stages_of(self.read, block)
        groups = [self.group(block, s) for s in stages]
        if len(stages) != 2 or min(map(len, groups)) < 2:
            raise Redraw("a block without two switches in each of two stages")
        for _ in range(MIX_TRIES):  # cheap: a mix the two stages can share equally
            speeds = sorted(rng.sample([s for s in SPEEDS if s >= 10 * G], rng.randint(2, 3)))
            counts = [rng.randint(1, 5) for _ in speeds]
            if _balanced(speeds, counts):
                break
        else:
            raise Redraw("the ports cannot be shared equally between the stages")
        mix = [[s, c] for s, c in zip(speeds, counts, strict=True)]
        watts = _increasing(rng, self.speeds([t for g in groups for t in g]) | set(speeds), WATTS)
        per = table(watts)
        power = sum(per[s] * c for s, c in mix)
        most, top = self.limits(rng, [t for g in groups for t in g], watts, sum(counts), power)
        return {
            "op": "place_two_stage",
            "block": block,
            "stages": stages,
            "ports": mix,
            "max_ports": most,
            "max_watts": top,
            "watts": watts,
        }

    def shared_budget_two_blocks(self, rng: random.Random) -> dict[str, Any]:
        if len(self.blocks) < 2:
            raise Redraw("a fabric of one block")
        pair = sorted(rng.sample(self.blocks, 2))  # any two blocks of the site share a store
        common = set(stages_of(self.read, pair[0])) & set(stages_of(self.read, pair[1]))
        stage = _pick(rng, sorted(common))
        lowest = min(self.speeds(self.group(pair[0], stage) + self.group(pair[1], stage)))
        optics = self.catalogue(rng, lowest, rng.randint(2, 3))
        per_switch = rng.randint(1, 3)
        top = max(s for s, _ in optics)
        targets = []
        for block in pair:
            found = upgradable(self.read, block, stage, top)
            targets.append(
                block_total(self.read, block) + self.need(rng, found, optics, per_switch)
            )
        return {
            "op": "shared_budget_two_blocks",
            "blocks": pair,
            "stage": stage,
            "targets": targets,
            "per_switch": per_switch,
            "optics": optics,
            "stock": [[top, rng.randint(1, 6)]],
        }

    # -- level 8 ---------------------------------------------------------------------------

    def drain_blast_radius(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.open_blocks())
        pair = sorted(rng.sample(self.read.switches(block), 2))
        takers = [t for t in self.read.switches(block) if t not in pair]
        for switch in pair:
            if len(self.group(block, self.read.stage(switch), pair)) < 2:
                raise Redraw("fewer than two switches of a stage to take the ports")
        watts = _increasing(rng, self.speeds(self.read.switches(block)), WATTS)
        per = table(watts)
        moved = [self.read.speed(p) for t in pair for p in self.read.ports(t)]
        most, top = self.limits(rng, takers, watts, len(moved), sum(per[s] for s in moved))
        bps = sorted(sum(self.read.speed(p) for p in self.read.ports(t)) for t in takers)
        k = rng.randint(2, max(2, min(6, len(bps))))
        cap = bps[k - 1] + _ceil(sum(moved), k) + G * rng.choice([0, 10, 20, 40])
        return {
            "op": "drain_blast_radius",
            "block": block,
            "switches": pair,
            "max_ports": most,
            "max_watts": top,
            "max_bps": cap,
            "watts": watts,
        }

    def expand_lexicographic(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.open_blocks())
        stage = _pick(rng, stages_of(self.read, block))
        group = self.group(block, stage)
        optics = self.catalogue(rng, 10 * G, rng.randint(2, 3))
        watts = _increasing(rng, self.speeds(group) | {s for s, _ in optics}, WATTS)
        per = table(watts)
        now = [switch_of(self.read, t, per) for t in group]
        most = max(s.ports for s in now) + rng.randint(-2, 3)
        top = sorted(s.watts for s in now)[len(now) // 2] + rng.randint(0, 4 * per[optics[0][0]])
        room = sum(max(0, min(most - s.ports, (top - s.watts) // per[optics[-1][0]])) for s in now)
        new = rng.randint(0, 2)
        fastest = optics[-1][0]
        # About what the existing switches take of the fastest optic, plus `new` switches.
        fill = room + new * min(most, top // per[fastest])
        need = max(G, fastest * fill // rng.choice([1, 2]) - G * rng.randint(0, 50))
        return {
            "op": "expand_lexicographic",
            "block": block,
            "stage": stage,
            "target": block_total(self.read, block) + need,
            "optics": optics,
            "watts": watts,
            "max_ports": most,
            "max_watts": top,
            "names": self.new_names(block, stage, 3),
        }

    def drain_min_cost(self, rng: random.Random) -> dict[str, Any]:
        block = _pick(rng, self.open_blocks())
        stage = _pick(rng, stages_of(self.read, block))
        group = self.group(block, stage)
        if len(group) < WIDE_STAGE:
            raise Redraw("a stage too small for a drain at least cost")
        gone = sorted(rng.sample(group, rng.randint(3, min(6, len(group) - 4))))
        takers = [t for t in group if t not in gone]
        moved = Counter(self.read.speed(p) for s in gone for p in self.read.ports(s))
        if len(moved) < 2:
            raise Redraw("the drained ports are all of one speed")
        ports = sorted(len(self.read.ports(t)) for t in takers)
        total = sum(moved.values())
        most = ports[len(ports) // 2] + _ceil(total, len(takers)) + rng.randint(-1, 2)
        per_speed = _ceil(max(moved.values()), len(takers)) + rng.randint(0, 3)
        costs = [[t, [[s, rng.randint(*COST)] for s in sorted(moved)]] for t in takers]
        spec = {
            "op": "drain_min_cost",
            "block": block,
            "stage": stage,
            "switches": gone,
            "max_ports": most,
            "per_speed": per_speed,
            "costs": costs,
        }
        if dp_work(task_of(spec, self.ix)) < SEARCH_FLOOR:
            raise Redraw("a per-switch search over the counts left would fit the sandbox")
        return spec


def _balanced(speeds: Sequence[int], counts: Sequence[int]) -> bool:
    """Whether some share of the ports has exactly half their capacity."""
    total = sum(s * c for s, c in zip(speeds, counts, strict=True))
    if total % 2:
        return False
    reachable = {0}
    for speed, count in zip(speeds, counts, strict=True):
        reachable = {r + speed * k for r in reachable for k in range(count + 1)}
    return total // 2 in reachable
