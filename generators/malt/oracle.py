"""The oracle's Python program for a query spec (actions.py): a fixed helper prelude plus
a `process_graph(graph)` whose body is generated operation by operation from the spec.

Oracle programs are ground truth: only the oracle agent sees them, and the generator
checks each one, exec'd in-process, against the analytic answer before a query is kept.
"""

from __future__ import annotations

from typing import Any

from generators.malt.actions import ITEM, MUTATIONS, VALUE_OPS, answer_type

ORACLE_PRELUDE = '''\
CONTAINS = "RK_CONTAINS"


def contained(graph, node):
    """Every node reachable from `node` over RK_CONTAINS edges, `node` excluded."""
    seen, stack = set(), [node]
    while stack:
        current = stack.pop()
        edges = graph.succ[current]
        for child in edges:
            if child != current and child not in seen and CONTAINS in edges[child]["type"]:
                seen.add(child)
                stack.append(child)
    seen.discard(node)
    return seen


def containers(graph, node):
    """Every node from which `node` is reachable over RK_CONTAINS edges."""
    seen, stack = set(), [node]
    while stack:
        current = stack.pop()
        edges = graph.pred[current]
        for parent in edges:
            if parent != current and parent not in seen and CONTAINS in edges[parent]["type"]:
                seen.add(parent)
                stack.append(parent)
    seen.discard(node)
    return seen


def members(graph, node, kind):
    return sorted(n for n in contained(graph, node) if kind in graph.nodes[n]["type"])


def ports_of(graph, node):
    if "EK_PORT" in graph.nodes[node]["type"]:
        return [node]
    return members(graph, node, "EK_PORT")


def capacity(graph, node):
    return sum(graph.nodes[p]["physical_capacity_bps"] for p in ports_of(graph, node))


def stage(graph, node):
    return graph.nodes[node]["switch_loc"]["stage"]


def container_of(graph, node, kind):
    return sorted(c for c in containers(graph, node) if kind in graph.nodes[c]["type"])[0]


def remove_with_contents(graph, node):
    graph.remove_nodes_from([node, *contained(graph, node)])


def add_port(graph, switch, port, bps):
    graph.add_node(port, name=port, type=["EK_PORT"], physical_capacity_bps=bps)
    graph.add_edge(switch, port, type=["RK_CONTAINS"])
'''


def program(spec: dict[str, Any]) -> str:
    """The oracle's Python program defining process_graph(graph)."""
    lines = _code(spec, 1)
    tail = "graph" if answer_type(spec) == "graph" else "result"
    body = "\n".join(lines)
    return f"{ORACLE_PRELUDE}\n\ndef process_graph(graph):\n{body}\n    return {tail}\n"


def _lit(ref: str) -> str:
    return "item" if ref == ITEM else repr(ref)


def metric_expr(metric: list[Any], node_expr: str) -> str:
    if metric[0] == "count":
        return f"len(members(graph, {node_expr}, {metric[1]!r}))"
    if metric[0] == "capacity":
        return f"capacity(graph, {node_expr})"
    return f"stage(graph, {node_expr})"


def cond_expr(cond: dict[str, Any], node_expr: str | None = None) -> str:
    node = node_expr or _lit(cond["node"])
    return f"{metric_expr(cond['metric'], node)} {cond['cmp']} {cond['value']!r}"


def value_expr(spec: dict[str, Any]) -> str:
    op = spec["op"]
    if op == "count":
        return metric_expr(["count", spec["kind"]], _lit(spec["scope"]))
    if op == "capacity":
        return metric_expr(["capacity"], _lit(spec["scope"]))
    if op == "stage":
        return metric_expr(["stage"], _lit(spec["switch"]))
    if op == "find":
        return f"container_of(graph, {_lit(spec['node'])}, {spec['kind']!r})"
    items = f"members(graph, {_lit(spec['scope'])}, {spec['kind']!r})"
    if op == "list":
        if not spec.get("where"):
            return items
        return f"[n for n in {items} if {cond_expr(spec['where'], 'n')}]"
    if op == "rank":
        key = metric_expr(spec["metric"], "n")
        return f"sorted({items}, key=lambda n: (-{key}, n))[: {spec['top']}]"
    if op == "table":
        return f"{{n: {metric_expr(spec['metric'], 'n')} for n in {items}}}"
    raise ValueError(f"op {op!r} is not a value operation")


def _mutation(spec: dict[str, Any]) -> list[str]:
    op = spec["op"]
    if op == "remove":
        return [f"remove_with_contents(graph, {_lit(spec['node'])})"]
    if op == "add_port":
        switch = _lit(spec["switch"])
        name = (
            repr(spec["port"])
            if spec["port"]
            else f"f\"{{{switch}}}.p{{len(members(graph, {switch}, 'EK_PORT')) + 1}}\""
        )
        return [f"add_port(graph, {switch}, {name}, {spec['capacity']!r})"]
    if op == "add_switch":
        sw, block = spec["switch"], _lit(spec["block"])
        return [
            f"graph.add_node({sw!r}, name={sw!r}, type=['EK_PACKET_SWITCH'], "
            f"switch_loc={{'stage': {spec['stage']!r}}})",
            f"graph.add_edge({block}, {sw!r}, type=['RK_CONTAINS'])",
            f"for i in range(1, {spec['ports']} + 1):",
            f"    add_port(graph, {sw!r}, f'{sw}.p{{i}}', {spec['capacity']!r})",
        ]
    if op == "set_capacity":
        return [
            f"for port in ports_of(graph, {_lit(spec['target'])}):",
            f"    graph.nodes[port]['physical_capacity_bps'] = {spec['capacity']!r}",
        ]
    if op == "set_stage":
        node = _lit(spec["switch"])
        return [
            f"graph.nodes[{node}]['switch_loc'] = "
            f"{{**graph.nodes[{node}].get('switch_loc', {{}}), 'stage': {spec['stage']!r}}}"
        ]
    raise ValueError(f"op {op!r} is not a mutation")


def _branch(spec: dict[str, Any], target: str) -> list[str]:
    """Statements for one operation; a value operation is stored into `target`."""
    if spec["op"] in VALUE_OPS:
        return [f"{target} = {value_expr(spec)}"]
    return _mutation(spec)


def _code(spec: dict[str, Any], depth: int) -> list[str]:
    pad = "    " * depth
    op = spec["op"]
    if op in VALUE_OPS or op in MUTATIONS:
        return [pad + line for line in _branch(spec, "result")]
    if op == "seq":
        return [line for step in spec["steps"] for line in _code(step, depth)]
    if op == "if":
        out = [f"{pad}if {cond_expr(spec['cond'])}:"]
        out += [f"{pad}    {line}" for line in _branch(spec["then"], "result")]
        out.append(f"{pad}else:")
        out += [f"{pad}    {line}" for line in _branch(spec["else"], "result")]
        return out
    table = answer_type(spec) == "table"
    out = [f"{pad}result = {{}}"] if table else []
    out.append(f"{pad}for item in members(graph, {_lit(spec['scope'])}, {spec['kind']!r}):")
    if op == "for":
        out += [f"{pad}    {line}" for line in _branch(spec["body"], "result[item]")]
        return out
    out.append(f"{pad}    if {cond_expr(spec['cond'], 'item')}:")
    out += [f"{pad}        {line}" for line in _branch(spec["then"], "result[item]")]
    out.append(f"{pad}    else:")
    out += [f"{pad}        {line}" for line in _branch(spec["else"], "result[item]")]
    return out
