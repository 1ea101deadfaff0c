"""Safety checker of MALT graphs: schema, hierarchy, isolation and capacity rules.

A graph is safe when `check_graph` returns no violations:
- every node's `type` is a non-empty list of known entity kinds, every edge's `type` a
  non-empty list of known relationship kinds;
- every RK_CONTAINS edge goes from a kind to a kind it may contain (schema.CONTAINS), every
  RK_CONTROLS edge from a control point to a packet switch;
- every kind of a node outside ROOT_KINDS has a container of an allowed kind (another
  node: a device's self-loop does not count);
- no node is isolated (self-loops do not count);
- every port has a positive `physical_capacity_bps`; every packet switch contains a port.

`SafetyChecker` checks base+diff. Every rule above is local: a node's verdict depends only
on its attributes, its incident edges and its neighbours' attributes, an edge's verdict on
its attributes and its endpoints' attributes. When the base is safe, a violation after a
diff must therefore involve a node whose attributes, edges or neighbours' attributes the
diff changed (`touched_nodes`), so checking those nodes and their incident edges finds
exactly the violations a full check finds (tests compare the two on random diffs).
"""

from __future__ import annotations

import math
from typing import Any

import networkx as nx

from emulators.pysandbox import graphdiff
from generators.malt import schema as S

_KNOWN_NODE = frozenset(S.NODE_KINDS)
_KNOWN_EDGE = frozenset(S.EDGE_KINDS)


def _parse_kinds(value: Any, known: frozenset[str], cache: dict) -> frozenset[str] | str:
    """The kinds in a `type` value, or a reason it is invalid (cached per distinct value
    made of strings; anything else in a `type` is a violation, never a cache key)."""
    if not isinstance(value, list):
        return f"type must be a list of kinds, got {value!r:.60}"
    if not all(type(k) is str for k in value):
        bad = [k for k in value if type(k) is not str]
        return f"type holds values that are not kind names {bad!r:.80}; expected strings"
    key = tuple(value)
    hit = cache.get(key)
    if hit is not None:
        return hit
    if not value:
        result: frozenset[str] | str = "type is an empty list; expected at least one kind"
    elif not all(k in known for k in value):
        bad = [k for k in value if k not in known]
        result = f"type holds unknown kinds {bad!r:.80}; expected some of {sorted(known)}"
    else:
        result = frozenset(value)
    cache[key] = result
    return result


def _cached_kinds(value: Any, known: frozenset[str], cache: dict) -> frozenset[str] | str:
    """`_parse_kinds` with the cache looked up first (the hot path: most values repeat)."""
    if type(value) is list:
        try:
            hit = cache.get(tuple(value))
        except TypeError:  # a list or dict inside: not kinds, and not hashable
            hit = None
        if hit is not None:
            return hit
    return _parse_kinds(value, known, cache)


def _edge_rule(ku: frozenset[str], kv: frozenset[str], etype: frozenset[str]) -> list[str]:
    """Violations of one edge given its endpoint kinds (as templates with {u}, {v})."""
    out = []
    if S.RK_CONTAINS in etype and not any(S.CONTAINS.get(pk, frozenset()) & kv for pk in ku):
        allowed = "; ".join(f"{p} -> {sorted(S.CONTAINS[p])}" for p in sorted(ku & set(S.CONTAINS)))
        out.append(
            f"RK_CONTAINS from {'/'.join(sorted(ku))} to {'/'.join(sorted(kv))} breaks the "
            f"hierarchy; allowed: {allowed or 'nothing'}"
        )
    if S.RK_CONTROLS in etype and not (S.EK_CONTROL_POINT in ku and S.EK_PACKET_SWITCH in kv):
        out.append(
            "RK_CONTROLS must go from an EK_CONTROL_POINT to an EK_PACKET_SWITCH, got "
            f"{'/'.join(sorted(ku))} -> {'/'.join(sorted(kv))}"
        )
    return out


def _node_rule(kinds: frozenset[str]) -> tuple[tuple[tuple[str, frozenset[str]], ...], bool, bool]:
    """(kinds needing a container with their allowed containers, is a port, is a switch)."""
    need = tuple((k, S.CONTAINERS[k]) for k in sorted(kinds - S.ROOT_KINDS))
    return need, S.EK_PORT in kinds, S.EK_PACKET_SWITCH in kinds


def _check(graph: nx.DiGraph, nodes: Any, edges: Any | None) -> list[str]:
    """Violations of `nodes` and `edges` (None: all edges). `edges` must include every edge
    incident to `nodes`, since container and port rules are gathered from edges.

    One flat pass over edges, then one over nodes, with caches per distinct `type` value:
    this runs on every scored graph answer and must stay near 15 ms on 5.5k nodes.
    """
    node_data, succ = graph._node, graph._succ
    parsed: dict = {}
    edge_parsed: dict = {}
    rule_cache: dict = {}
    node_rules: dict = {}
    kinds_of: dict[Any, frozenset[str] | str] = {}
    type_key, contains_key, port = S.A_TYPE, S.RK_CONTAINS, S.EK_PORT
    for node, attrs in node_data.items() if edges is None else ():
        kinds_of[node] = _cached_kinds(attrs.get(type_key), _KNOWN_NODE, parsed)

    def kinds(node: Any) -> frozenset[str] | str:
        hit = kinds_of.get(node)
        if hit is None:
            hit = kinds_of[node] = _cached_kinds(node_data[node].get(type_key), _KNOWN_NODE, parsed)
        return hit

    out: list[str] = []
    container_kinds: dict[Any, set[str]] = {}  # node -> kinds of the other nodes containing it
    has_port: set[Any] = set()
    linked: set[Any] = set()  # nodes with an edge to or from another node
    pairs = (
        ((u, v, a) for u, nbrs in succ.items() for v, a in nbrs.items())
        if edges is None
        else ((u, v, succ[u][v]) for u, v in edges)
    )
    for u, v, eattrs in pairs:
        etype = _cached_kinds(eattrs.get(type_key), _KNOWN_EDGE, edge_parsed)
        if u != v:
            linked.add(u)
            linked.add(v)
        if isinstance(etype, str):
            out.append(f"edge {u!r}->{v!r}: {etype}")
            continue
        ku = kinds_of.get(u) or kinds(u)
        kv = kinds_of.get(v) or kinds(v)
        if isinstance(ku, str) or isinstance(kv, str):
            continue  # reported with the node
        key = (ku, kv, etype)
        msgs = rule_cache.get(key)
        if msgs is None:
            msgs = rule_cache[key] = _edge_rule(ku, kv, etype)
        if msgs:
            out.extend(f"edge {u!r}->{v!r}: {m}" for m in msgs)
        if u != v and contains_key in etype:
            have = container_kinds.get(v)
            if have is None:
                container_kinds[v] = set(ku)
            else:
                have |= ku
            if port in kv:
                has_port.add(u)
    empty: set[str] = set()
    for node in nodes:
        nk = kinds_of.get(node) or kinds(node)
        if isinstance(nk, str):
            out.append(f"node {node!r}: {nk}")
            continue
        rule = node_rules.get(nk)
        if rule is None:
            rule = node_rules[nk] = _node_rule(nk)
        need, is_port, is_switch = rule
        if node not in linked:
            out.append(f"node {node!r} ({'/'.join(sorted(nk))}) is isolated")
        if need:
            have = container_kinds.get(node, empty)
            for kind, allowed in need:
                if not allowed & have:
                    out.append(
                        f"node {node!r}: its {kind} has no container; expected an RK_CONTAINS "
                        f"edge from one of {sorted(allowed)}"
                    )
        if is_port:
            cap = node_data[node].get(S.A_CAPACITY)
            ok = isinstance(cap, int | float) and not isinstance(cap, bool)
            if not (ok and math.isfinite(cap) and cap > 0):
                out.append(f"port {node!r} has {S.A_CAPACITY}={cap!r}; expected a positive number")
        if is_switch and node not in has_port:
            out.append(f"packet switch {node!r} contains no port; expected at least one")
    return sorted(out)


def check_graph(graph: nx.DiGraph) -> list[str]:
    """Every safety violation of `graph` (sorted; empty = safe)."""
    return _check(graph, graph._node, None)


def check_nodes(graph: nx.DiGraph, nodes: set[Any]) -> list[str]:
    """The violations involving `nodes` (which must be in `graph`) or their incident edges."""
    edges: set[tuple[Any, Any]] = set()
    for node in nodes:
        edges.update((node, v) for v in graph._succ[node])
        edges.update((u, node) for u in graph._pred[node])
    return _check(graph, nodes, edges)


def touched_nodes(base: nx.DiGraph, diff: dict[str, list]) -> set[Any]:
    """Nodes of base+diff whose verdict may differ from the base (see the module docstring).

    Call on the base *before* applying the diff; `post_neighbours` adds what is known only after.
    """
    touched: set[Any] = {name for name, _ in diff["nodes_added"]}
    touched.update(name for name, _ in diff["nodes_changed"])
    for key in ("edges_added", "edges_removed", "edges_changed"):
        for u, v, *_ in diff[key]:
            touched.add(u)
            touched.add(v)
    for name in diff["nodes_removed"]:
        touched.update(base._pred[name])
        touched.update(base._succ[name])
    for name, _ in diff["nodes_changed"]:
        if name in base._node:
            touched.update(base._pred[name])
            touched.update(base._succ[name])
    return touched


class SafetyChecker:
    """Checks base+diff graphs of one base topology, which is checked in full once."""

    def __init__(self, graph: nx.DiGraph) -> None:
        self.graph = graph
        self.base_violations = check_graph(graph)
        self.base_size = graph.number_of_nodes() + graph.number_of_edges()

    @property
    def base_safe(self) -> bool:
        return not self.base_violations

    def check_diff(self, diff: dict[str, list], *, validated: bool = False) -> list[str]:
        """Violations of base+diff. The diff is applied to the base graph and reverted
        before returning. Raises ValueError if the diff is malformed or does not apply
        (`validated`: the caller has checked both already)."""
        graph = self.graph
        if not validated:
            graphdiff.validate_diff(diff)
            graphdiff.check_applicable(graph, diff)
        touched = touched_nodes(graph, diff)
        inverse = graphdiff.apply_diff(graph, diff)
        try:
            if not self.base_safe:
                return check_graph(graph)
            for name, _ in diff["nodes_changed"]:
                touched.update(graph._pred[name])
                touched.update(graph._succ[name])
            return check_nodes(graph, {n for n in touched if n in graph._node})
        finally:
            graphdiff.apply_diff(graph, inverse)
