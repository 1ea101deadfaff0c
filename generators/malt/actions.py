"""Query specs of the MALT app and their analytic evaluator.

A query is a small JSON spec. Value operations return an answer; mutations change the
topology (the answer is then the modified graph); combinators sequence them:

    count      {"op": "count", "kind": K, "scope": X}        number of K contained in X
    capacity   {"op": "capacity", "scope": X}                 total port capacity (bps) in X
    stage      {"op": "stage", "switch": X}                   switch_loc["stage"] of X
    list       {"op": "list", "kind": K, "scope": X, "where": COND|None}
    rank       {"op": "rank", "kind": K, "scope": X, "metric": M, "top": k}
    table      {"op": "table", "kind": K, "scope": X, "metric": M}
    find       {"op": "find", "node": X, "kind": K}           the K containing X (text)
    remove     {"op": "remove", "node": X}                    X and everything it contains
    add_port   {"op": "add_port", "switch": X, "port": P|None, "capacity": C}
    add_switch {"op": "add_switch", "block": B, "switch": N, "stage": s, "ports": n,
                "capacity": C}
    set_capacity {"op": "set_capacity", "target": X, "capacity": C}   X a port or a switch
    set_stage  {"op": "set_stage", "switch": X, "stage": s}
    seq        {"op": "seq", "steps": [A, B]}                 answer of the last step
    drain, expand, upgrade, place, ... (levels 4, 5)          a capacity plan: plancheck.py
    if         {"op": "if", "cond": COND, "then": A, "else": B}
    for        {"op": "for", "kind": K, "scope": X, "body": A}            "$item" = loop node
    for_if     {"op": "for_if", "kind": K, "scope": X, "cond": COND, "then": A, "else": B}

Metrics M: ["count", K] | ["capacity"] | ["stage"]; COND: {"metric": M, "node": X,
"cmp": one of CMPS, "value": v}. A `port` of None names the new port `<switch>.p<n+1>`
(n = its ports before the addition). Loops visit members in ascending name order; a
value body makes the answer a table {member: value}. This evaluator works on a `View`,
never on query code: it is the independent half of the oracle check.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from generators.malt import schema as S
from generators.malt.index import Redraw, View
from generators.malt.operations import TEMPLATES

ITEM = "$item"
CMPS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}
VALUE_OPS = {
    "count": "number",
    "capacity": "number",
    "stage": "number",
    "list": "list",
    "rank": "ranking",
    "table": "table",
    "find": "text",
}
MUTATIONS = ("remove", "add_port", "add_switch", "set_capacity", "set_stage")
# Capacity plans: answered with the modified graph, judged by invariants (plancheck.py).
PLANS = frozenset(label for labels in TEMPLATES.values() for label in labels)
CATEGORY = {
    "count": "count",
    "capacity": "count",
    "stage": "count",
    "list": "list",
    "rank": "rank",
    "table": "table",
    "find": "find",
    "remove": "remove",
    "add_port": "add",
    "add_switch": "add",
    "set_capacity": "update",
    "set_stage": "update",
}


def answer_type(spec: dict[str, Any]) -> str:
    """The answer type of a spec: number, text, list, ranking, table, graph or plan."""
    op = spec["op"]
    if op in PLANS:
        return "plan"
    if op in VALUE_OPS:
        return VALUE_OPS[op]
    if op in MUTATIONS:
        return "graph"
    if op == "seq":
        return answer_type(spec["steps"][-1])
    if op == "if":
        return answer_type(spec["then"])
    body = spec["body"] if op == "for" else spec["then"]
    return "graph" if answer_type(body) == "graph" else "table"


def operation_label(spec: dict[str, Any]) -> str:
    """A short label for breakdowns, e.g. "remove>count" or "for_if(update|remove)"."""
    op = spec["op"]
    if op in PLANS:
        return op
    if op in CATEGORY:
        return CATEGORY[op]
    if op == "seq":
        return ">".join(operation_label(s) for s in spec["steps"])
    if op == "if":
        return f"if({operation_label(spec['then'])}|{operation_label(spec['else'])})"
    if op == "for":
        return f"for({operation_label(spec['body'])})"
    return f"for_if({operation_label(spec['then'])}|{operation_label(spec['else'])})"


@dataclass(frozen=True)
class Spec:
    """A drawn spec with what generating its query asks of it, answered once: the spec
    itself (the JSON the ground truth stores), its answer type and its operation label."""

    body: dict[str, Any]
    answer_type: str
    operation: str

    @classmethod
    def of(cls, body: dict[str, Any]) -> Spec:
        return cls(body, answer_type(body), operation_label(body))


def metric_value(view: View, metric: list[Any], node: str) -> int:
    """The value of a metric of one node."""
    if metric[0] == "count":
        return len(view.members(node, metric[1]))
    if metric[0] == "capacity":
        ports = [node] if S.EK_PORT in view.kinds(node) else view.members(node, S.EK_PORT)
        return sum(view.attrs(p)[S.A_CAPACITY] for p in ports)
    if metric[0] == "stage":
        loc = view.attrs(node).get(S.A_SWITCH_LOC)
        if not isinstance(loc, dict):
            raise Redraw(f"{node!r} has no switch_loc")
        return loc[S.A_STAGE]
    raise ValueError(f"unknown metric {metric!r}")


def holds(view: View, cond: dict[str, Any], env: dict[str, str]) -> bool:
    value = metric_value(view, cond["metric"], _node(cond["node"], env))
    return CMPS[cond["cmp"]](value, cond["value"])


def _node(ref: str, env: dict[str, str]) -> str:
    return env[ITEM] if ref == ITEM else ref


def next_port_name(view: View, switch: str) -> str:
    return f"{switch}.p{len(view.members(switch, S.EK_PORT)) + 1}"


def evaluate(spec: dict[str, Any], view: View, env: dict[str, str] | None = None) -> Any:
    """Run a spec on `view` (mutating it); return the value of a value operation, else None.

    Raises Redraw when the spec does not apply (missing node, name clash) or its answer
    would be uninteresting (a ranking whose kept places all tie, so names decide it; a
    filter every member passes; a one-sided loop condition).
    """
    env = env or {}
    op = spec["op"]
    handler = _HANDLERS.get(op)
    if handler is None:
        raise ValueError(f"unknown MALT query op {op!r}")
    return handler(spec, view, env)


def _count(spec: dict, view: View, env: dict) -> Any:
    return metric_value(view, ["count", spec["kind"]], _node(spec["scope"], env))


def _capacity(spec: dict, view: View, env: dict) -> Any:
    return metric_value(view, ["capacity"], _node(spec["scope"], env))


def _stage(spec: dict, view: View, env: dict) -> Any:
    return metric_value(view, ["stage"], _node(spec["switch"], env))


def _list(spec: dict, view: View, env: dict) -> Any:
    items = view.members(_node(spec["scope"], env), spec["kind"])
    where = spec.get("where")
    if where is None:
        return items
    kept = [n for n in items if holds(view, where, {**env, ITEM: n})]
    if len(kept) == len(items):
        raise Redraw("the filter keeps every member: it asks nothing")
    return kept


def _rank(spec: dict, view: View, env: dict) -> Any:
    items = view.members(_node(spec["scope"], env), spec["kind"])
    values = {n: metric_value(view, spec["metric"], n) for n in items}
    if len(set(values.values())) < 2:
        raise Redraw("every candidate ties on the metric: the ranking is decided by name")
    top = sorted(items, key=lambda n: (-values[n], n))[: spec["top"]]
    if len({values[n] for n in top}) < 2:
        # E.g. the first k switches of the highest stage: a filter, then names decide.
        raise Redraw("the kept places tie on the metric: the ranking is decided by name")
    return top


def _table(spec: dict, view: View, env: dict) -> Any:
    items = view.members(_node(spec["scope"], env), spec["kind"])
    return {n: metric_value(view, spec["metric"], n) for n in items}


def _find(spec: dict, view: View, env: dict) -> Any:
    found = [c for c in view.containers(_node(spec["node"], env)) if spec["kind"] in view.kinds(c)]
    if len(found) != 1:
        raise Redraw(f"{len(found)} containers of kind {spec['kind']}; expected exactly one")
    return found[0]


def _remove(spec: dict, view: View, env: dict) -> None:
    view.remove(_node(spec["node"], env))


def _add_port(spec: dict, view: View, env: dict) -> None:
    switch = _node(spec["switch"], env)
    if S.EK_PACKET_SWITCH not in view.kinds(switch):
        raise Redraw(f"{switch!r} is not a packet switch")
    port = spec["port"] or next_port_name(view, switch)
    view.add(port, S.port_attrs(port, spec["capacity"]), switch)


def _add_switch(spec: dict, view: View, env: dict) -> None:
    switch, block = spec["switch"], _node(spec["block"], env)
    view.add(switch, S.switch_attrs(switch, spec["stage"]), block)
    for p in range(1, spec["ports"] + 1):
        port = f"{switch}.p{p}"
        view.add(port, S.port_attrs(port, spec["capacity"]), switch)


def _set_capacity(spec: dict, view: View, env: dict) -> None:
    target = _node(spec["target"], env)
    ports = [target] if S.EK_PORT in view.kinds(target) else view.members(target, S.EK_PORT)
    for port in ports:
        view.set_attr(port, S.A_CAPACITY, spec["capacity"])


def _set_stage(spec: dict, view: View, env: dict) -> None:
    switch = _node(spec["switch"], env)
    loc = dict(view.attrs(switch).get(S.A_SWITCH_LOC) or {})
    loc[S.A_STAGE] = spec["stage"]
    view.set_attr(switch, S.A_SWITCH_LOC, loc)


def _seq(spec: dict, view: View, env: dict) -> Any:
    result = None
    for step in spec["steps"]:
        result = evaluate(step, view, env)
    return result


def _if(spec: dict, view: View, env: dict) -> Any:
    branch = spec["then"] if holds(view, spec["cond"], env) else spec["else"]
    return evaluate(branch, view, env)


def _for(spec: dict, view: View, env: dict) -> Any:
    items = view.members(_node(spec["scope"], env), spec["kind"])
    table = {item: evaluate(spec["body"], view, {**env, ITEM: item}) for item in items}
    return table if answer_type(spec["body"]) != "graph" else None


def _for_if(spec: dict, view: View, env: dict) -> Any:
    items = view.members(_node(spec["scope"], env), spec["kind"])
    table: dict[str, Any] = {}
    taken = set()
    for item in items:
        inner = {**env, ITEM: item}
        branch = "then" if holds(view, spec["cond"], inner) else "else"
        taken.add(branch)
        table[item] = evaluate(spec[branch], view, inner)
    if len(taken) < 2:
        raise Redraw("the loop condition takes the same branch for every member")
    return table if answer_type(spec["then"]) != "graph" else None


_HANDLERS: dict[str, Callable[[dict, View, dict], Any]] = {
    "count": _count,
    "capacity": _capacity,
    "stage": _stage,
    "list": _list,
    "rank": _rank,
    "table": _table,
    "find": _find,
    "remove": _remove,
    "add_port": _add_port,
    "add_switch": _add_switch,
    "set_capacity": _set_capacity,
    "set_stage": _set_stage,
    "seq": _seq,
    "if": _if,
    "for": _for,
    "for_if": _for_if,
}


def expected_record(spec: dict[str, Any], view: View) -> dict[str, Any]:
    """The expected answer record of a spec evaluated on a fresh `view` of the base."""
    value = evaluate(spec, view)
    kind = answer_type(spec)
    if kind == "graph":
        return {"type": "graph", "graph_class": "DiGraph", "diff": view.diff()}
    if kind in ("list", "ranking"):
        return {"type": "list", "value": list(value)}
    if kind == "table":
        return {"type": "table", "value": dict(value)}
    return {"type": "scalar", "value": value}
