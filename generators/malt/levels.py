"""Seeded drawing of query specs (actions.py) for the three difficulty levels.

L1: one operation. L2: a change followed by a question about (or a second change near)
what changed, e.g. remove>count. L3: control flow over two or more operations: if/else,
a for-loop, a for-loop with if/else. Operands are drawn from the base topology with the
caller's RNG, always from sorted sequences, so a draw depends only on the RNG state.
A draw that turns out not to apply raises Redraw and the generator draws again.
"""

from __future__ import annotations

import random
import re
from typing import Any

from generators.malt import schema as S
from generators.malt.actions import ITEM, metric_value
from generators.malt.index import Redraw, TopoIndex, View
from pipeline.api import query_key

PLAN_LEVELS = (4, 5, 6, 7, 8)  # capacity plans (plandraw.py); levels 1-3 are drawn here
COUPLED_LEVELS = (6, 7, 8)  # of which those with coupled constraints (coupled*.py)


def spec_key(topology_id: str, spec: dict[str, Any]) -> str:
    """A query's key: its spec on its topology (the prompt is rendered from the spec)."""
    return query_key(topology_id, spec)


GBPS = 1_000_000_000
CAPACITIES = tuple(g * GBPS for g in (1, 10, 25, 40, 100, 200, 400))
STAGES = (1, 2, 3)

PS, PORT, AGG, SPINE = S.EK_PACKET_SWITCH, S.EK_PORT, S.EK_AGG_BLOCK, S.EK_SPINEBLOCK
SB, RACK, CD = S.EK_SUPERBLOCK, S.EK_RACK, S.EK_CONTROL_DOMAIN

SWITCH_METRICS: list[list[Any]] = [["count", PORT], ["capacity"], ["stage"]]
BLOCK_METRICS: list[list[Any]] = [["count", PS], ["count", PORT], ["capacity"]]
COUNT_KINDS = {
    SB: [AGG, PS, PORT],
    AGG: [PS, PORT],
    SPINE: [PS, PORT],
    RACK: [S.EK_CHASSIS, PORT],
    CD: [S.EK_CONTROL_POINT],
    PS: [PORT],
}
CAPACITY_SCOPES = (SB, AGG, SPINE, RACK, PS)
LIST_KINDS = {SB: [AGG, PS], AGG: [PS], SPINE: [PS], RACK: [S.EK_CHASSIS], PS: [PORT]}
# (member kind, metrics) ranked or tabulated within a scope kind.
GROUPS = {
    SB: [(AGG, BLOCK_METRICS), (PS, SWITCH_METRICS)],
    AGG: [(PS, SWITCH_METRICS)],
    SPINE: [(PS, SWITCH_METRICS)],
    RACK: [(PS, SWITCH_METRICS[:2])],
}
FIND_KINDS = {PS: [AGG, SPINE, RACK, CD, SB], PORT: [PS, AGG, SPINE, RACK, SB], AGG: [SB]}
_PRIMARY = (PS, PORT, AGG, SPINE, SB, RACK, CD, S.EK_JUPITER)
_SWITCH_NAME = re.compile(r"\.s(\d+)c(\d+)$")


def _pick(rng: random.Random, seq: Any) -> Any:
    if not seq:
        raise Redraw("nothing to choose from")
    return seq[rng.randrange(len(seq))]


class Drawer:
    """Draws specs on one base topology."""

    def __init__(self, index: TopoIndex) -> None:
        self.ix = index
        self.switches = index.by_kind[PS]
        self.blocks = tuple(sorted(index.by_kind[AGG] + index.by_kind[SPINE]))
        self.base = View(index)  # never mutated: base metric values for thresholds
        self._base_values: dict[tuple[Any, ...], list[Any]] = {}
        caps = sorted(
            {a[S.A_CAPACITY] for n, a in index.attrs.items() if S.EK_PORT in index.kinds[n]}
        )
        self.cap_step = caps[0] if caps else GBPS

    def draw(self, level: int, rng: random.Random) -> dict[str, Any]:
        if level == 1:
            return self.level1(rng)
        if level == 2:
            return self.level2(rng)
        if level == 3:
            return self.level3(rng)
        raise ValueError(f"MALT levels are 1, 2 and 3, got {level!r}")

    # -- helpers ---------------------------------------------------------------------------

    def kind(self, node: str) -> str:
        kinds = self.ix.kinds.get(node, frozenset({PS}))  # only new switches are unknown
        return next(k for k in _PRIMARY if k in kinds)

    def near(self, switch: str) -> list[str]:
        """The switch and the existing nodes that contain it (block, superblock, rack)."""
        out = [switch]
        for kind in (AGG, SPINE, SB, RACK):
            found = self.ix.container(switch, kind)
            if found:
                out.append(found)
        return out

    def capacity(self, rng: random.Random, avoid: int | None = None) -> int:
        return _pick(rng, [c for c in CAPACITIES if c != avoid])

    def ports(self, switch: str) -> tuple[str, ...]:
        return self.ix.members(switch, PORT)

    # -- value operations ------------------------------------------------------------------

    def base_values(self, scope: str, member: str, metric: list[Any]) -> list[Any]:
        """Sorted distinct base values of a metric over the members of a scope (the base
        never changes, so each is computed once)."""
        key = (scope, member, tuple(metric))
        hit = self._base_values.get(key)
        if hit is None:
            members = self.ix.members(scope, member)
            hit = self._base_values[key] = sorted(
                {metric_value(self.base, metric, n) for n in members}
            )
        return hit

    def value_op(
        self, rng: random.Random, scope: str, numeric: bool = False, ranked_now: bool = False
    ) -> dict[str, Any]:
        """A value operation on `scope`; `ranked_now`: a ranking must not tie on the base."""
        kind = self.kind(scope)
        ops = []
        if kind in COUNT_KINDS:
            ops.append("count")
        if kind in CAPACITY_SCOPES:
            ops.append("capacity")
        if not numeric:
            ops += ["list"] * (kind in LIST_KINDS) + ["rank", "table"] * (kind in GROUPS)
        op = _pick(rng, ops)
        if op == "count":
            return {"op": "count", "kind": _pick(rng, COUNT_KINDS[kind]), "scope": scope}
        if op == "capacity":
            return {"op": "capacity", "scope": scope}
        if op == "list":
            member = _pick(rng, LIST_KINDS[kind])
            return {
                "op": "list",
                "kind": member,
                "scope": scope,
                "where": self.where(rng, scope, member),
            }
        pairs = [(member, metric) for member, metrics in GROUPS[kind] for metric in metrics]
        if op == "rank" and ranked_now:
            # Rank only by a metric the members differ on: otherwise names decide everything.
            pairs = [p for p in pairs if len(self.base_values(scope, *p)) > 1]
        member, metric = _pick(rng, pairs)
        if op == "table":
            return {"op": "table", "kind": member, "scope": scope, "metric": metric}
        n = len(self.ix.members(scope, member)) if scope in self.ix.attrs else 0
        top = rng.randint(2, max(2, min(5, n)))
        return {"op": "rank", "kind": member, "scope": scope, "metric": metric, "top": top}

    def where(self, rng: random.Random, scope: str, member: str) -> dict[str, Any] | None:
        """A filter on list members half of the time (switches and ports only), on a metric
        the members differ on and with a value some but not all of them pass; none when the
        members do not differ (on Google's example every port is 1 Gbps)."""
        if member not in (PS, PORT) or scope not in self.ix.attrs or rng.random() < 0.5:
            return None
        metrics = [
            m
            for m in (SWITCH_METRICS if member == PS else [["capacity"]])
            if len(self.base_values(scope, member, m)) > 1
        ]
        if not metrics:
            return None
        metric = _pick(rng, metrics)
        values = self.base_values(scope, member, metric)
        cmp = "==" if metric == ["stage"] else _pick(rng, ["==", ">=", "<="])
        # >= the lowest value or <= the highest would keep every member.
        usable = {"==": values, ">=": values[1:], "<=": values[:-1]}[cmp]
        return {"metric": metric, "node": ITEM, "cmp": cmp, "value": _pick(rng, usable)}

    def find(self, rng: random.Random) -> dict[str, Any]:
        kind = _pick(rng, sorted(FIND_KINDS))
        node = _pick(rng, self.ix.by_kind[kind])
        return {"op": "find", "node": node, "kind": _pick(rng, FIND_KINDS[kind])}

    # -- mutations -------------------------------------------------------------------------

    def mutation(self, rng: random.Random, switch: str, op: str | None = None) -> dict[str, Any]:
        op = op or _pick(
            rng, ["remove", "remove_port", "add_port", "add_switch", "set_capacity", "set_stage"]
        )
        if op == "remove":
            return {"op": "remove", "node": switch}
        if op == "remove_port":
            return {"op": "remove", "node": _pick(rng, self.ports(switch))}
        if op == "add_port":
            port = f"{switch}.p{len(self.ports(switch)) + 1}"
            return {
                "op": "add_port",
                "switch": switch,
                "port": port,
                "capacity": self.capacity(rng),
            }
        if op == "add_switch":
            block = self.ix.container(switch, AGG) or self.ix.container(switch, SPINE)
            if block is None:
                raise Redraw(f"{switch!r} is in no block")
            stage = metric_value(self.base, ["stage"], switch)
            used = [
                int(m.group(2))
                for n in self.ix.members(block, PS)
                if (m := _SWITCH_NAME.search(n)) and int(m.group(1)) == stage
            ]
            name = f"{block}.s{stage}c{max(used, default=0) + 1}"
            return {
                "op": "add_switch",
                "block": block,
                "switch": name,
                "stage": stage,
                "ports": rng.randint(2, 8),
                "capacity": self.capacity(rng),
            }
        if op == "set_capacity":
            ports = self.ports(switch)
            target = _pick(rng, ports) if rng.random() < 0.4 else switch
            current = self.ix.attrs[_pick(rng, ports)][S.A_CAPACITY] if ports else None
            return {"op": "set_capacity", "target": target, "capacity": self.capacity(rng, current)}
        if op == "set_stage":
            current = metric_value(self.base, ["stage"], switch)
            return {
                "op": "set_stage",
                "switch": switch,
                "stage": _pick(rng, [s for s in STAGES if s != current]),
            }
        raise ValueError(f"unknown mutation {op!r}")

    def item_mutation(self, rng: random.Random, op: str) -> dict[str, Any]:
        """A mutation of the loop member (a packet switch or a port)."""
        if op == "remove":
            return {"op": "remove", "node": ITEM}
        if op == "add_port":
            return {"op": "add_port", "switch": ITEM, "port": None, "capacity": self.capacity(rng)}
        if op == "set_capacity":
            return {"op": "set_capacity", "target": ITEM, "capacity": self.capacity(rng)}
        if op == "set_stage":
            return {"op": "set_stage", "switch": ITEM, "stage": _pick(rng, STAGES)}
        raise ValueError(f"unknown loop mutation {op!r}")

    # -- levels ----------------------------------------------------------------------------

    def level1(self, rng: random.Random) -> dict[str, Any]:
        family = rng.choices(["value", "find", "mutation"], weights=[6, 1, 5])[0]
        if family == "find":
            return self.find(rng)
        if family == "mutation":
            return self.mutation(rng, _pick(rng, self.switches))
        scope_kind = _pick(rng, sorted(set(COUNT_KINDS) | set(GROUPS)))
        return self.value_op(rng, _pick(rng, self.ix.by_kind[scope_kind]), ranked_now=True)

    def level2(self, rng: random.Random) -> dict[str, Any]:
        switch = _pick(rng, self.switches)
        first = self.mutation(rng, switch)
        near = self.near(switch)
        if first["op"] == "remove" and first["node"] == switch:
            near = near[1:]
        elif first["op"] == "add_switch":
            near = [first["switch"], *near[1:]]
        if rng.random() < 0.7:
            second = self.value_op(rng, _pick(rng, near))
        else:
            block = self.ix.container(switch, AGG) or self.ix.container(switch, SPINE)
            siblings = self.ix.members(block, PS) if block else (switch,)
            second = self.mutation(rng, _pick(rng, siblings))
        return {"op": "seq", "steps": [first, second]}

    def level3(self, rng: random.Random) -> dict[str, Any]:
        shape = _pick(rng, ["if", "for", "for_if"])
        if shape == "if":
            return self.if_else(rng)
        if shape == "for":
            return self.for_loop(rng)
        return self.for_if(rng)

    def threshold(self, rng: random.Random, value: int, metric: list[Any]) -> tuple[str, int]:
        """A comparison with `value` that holds or fails with equal probability."""
        step = self.cap_step if metric == ["capacity"] else 1
        cmp = _pick(rng, sorted(CMP_OFFSETS))
        want = rng.random() < 0.5
        offset = CMP_OFFSETS[cmp][want] * step * rng.randint(1, 3)
        return cmp, max(0, value + offset)

    def if_else(self, rng: random.Random) -> dict[str, Any]:
        switch = _pick(rng, self.switches)
        near = self.near(switch)
        subject = _pick(rng, near[:2])
        metric = _pick(rng, SWITCH_METRICS if subject == switch else BLOCK_METRICS)
        cmp, value = self.threshold(rng, metric_value(self.base, metric, subject), metric)
        cond = {"metric": metric, "node": subject, "cmp": cmp, "value": value}
        if rng.random() < 0.65:
            ops = ["remove", "remove_port", "add_port", "add_switch", "set_capacity", "set_stage"]
            first = _pick(rng, ops)
            then = self.mutation(rng, switch, first)
            other = self.mutation(rng, switch, _pick(rng, [o for o in ops if o != first]))
        else:
            then = self.value_op(rng, _pick(rng, near), numeric=True)
            other = self.value_op(rng, _pick(rng, near), numeric=True)
        if then == other:
            raise Redraw("both branches do the same")
        return {"op": "if", "cond": cond, "then": then, "else": other}

    def for_loop(self, rng: random.Random) -> dict[str, Any]:
        if rng.random() < 0.25:
            scope = _pick(rng, self.ix.by_kind[SB])
            metric = _pick(rng, BLOCK_METRICS)
            if metric[0] == "capacity":
                body = {"op": "capacity", "scope": ITEM}
            else:
                body = {"op": "count", "kind": metric[1], "scope": ITEM}
            return {"op": "for", "kind": AGG, "scope": scope, "body": body}
        scope = _pick(rng, self.blocks + self.ix.by_kind[RACK])
        if rng.random() < 0.6:
            body = self.item_mutation(rng, _pick(rng, ["add_port", "set_capacity", "set_stage"]))
        else:
            body = _pick(
                rng,
                [
                    {"op": "count", "kind": PORT, "scope": ITEM},
                    {"op": "capacity", "scope": ITEM},
                    {"op": "stage", "switch": ITEM},
                    {"op": "find", "node": ITEM, "kind": _pick(rng, [RACK, CD])},
                ],
            )
        return {"op": "for", "kind": PS, "scope": scope, "body": body}

    def for_if(self, rng: random.Random) -> dict[str, Any]:
        if rng.random() < 0.2:
            kind, scope, metrics = PORT, _pick(rng, self.switches), [["capacity"]]
            ops = ["set_capacity", "remove"]
        else:
            kind, scope = PS, _pick(rng, self.blocks + self.ix.by_kind[RACK])
            metrics, ops = SWITCH_METRICS, ["remove", "add_port", "set_capacity", "set_stage"]
        splits = []
        for metric in metrics:
            values = self.base_values(scope, kind, metric)
            if len(values) > 1:
                splits.append((metric, values))
        metric, values = _pick(rng, splits)
        i = rng.randrange(len(values) - 1)
        low, high = values[i], values[i + 1]
        choices = [(">", low), (">=", high), ("<", high), ("<=", low), ("==", low), ("!=", low)]
        cmp, value = _pick(rng, choices)
        cond = {"metric": metric, "node": ITEM, "cmp": cmp, "value": value}
        first = _pick(rng, ops)
        then = self.item_mutation(rng, first)
        other = self.item_mutation(rng, _pick(rng, [o for o in ops if o != first] or ops))
        if then == other:
            raise Redraw("both branches do the same")
        return {
            "op": "for_if",
            "kind": kind,
            "scope": scope,
            "cond": cond,
            "then": then,
            "else": other,
        }


# For each comparison: (offset when it should fail, offset when it should hold), in steps.
CMP_OFFSETS = {">": (1, -1), ">=": (1, 0), "<": (-1, 1), "<=": (-1, 0), "==": (1, 0), "!=": (0, 1)}
