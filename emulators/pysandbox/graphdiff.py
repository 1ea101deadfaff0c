"""Canonical differences between MALT graphs, keyed by node name.

A graph-typed answer is stored and scored as its difference from the base topology:
two graphs derived from the same base are equal (same node set, edge set and
attributes) exactly when their canonical diffs are equal, so scoring never needs
an isomorphism search and a result row stays small.

Diff format (all lists sorted, so `canonical_json(diff)` is a fingerprint):
    {"nodes_added":   [[name, attrs], ...],
     "nodes_removed": [name, ...],
     "nodes_changed": [[name, attrs_after], ...],
     "edges_added":   [[u, v, attrs], ...],
     "edges_removed": [[u, v], ...],
     "edges_changed": [[u, v, attrs_after], ...]}
"""

from __future__ import annotations

import math
from collections.abc import Container
from typing import Any

import networkx as nx

DIFF_KEYS = (
    "nodes_added",
    "nodes_removed",
    "nodes_changed",
    "edges_added",
    "edges_removed",
    "edges_changed",
)

Snapshot = tuple[dict[str, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]


def _norm(value: Any) -> Any:
    """JSON-stable attribute values: integral floats become ints, tuples become lists."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)
        return value
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _norm(v) for k, v in value.items()}
    return str(value)


def normalized(attrs: dict[str, Any]) -> dict[str, Any]:
    """An attribute dict as a diff holds it (string keys, JSON-stable values)."""
    return {str(k): _norm(v) for k, v in attrs.items()}


def snapshot(graph: nx.DiGraph) -> Snapshot:
    """Copies of the node and edge attributes, taken once per base topology."""
    nodes = {n: normalized(a) for n, a in graph.nodes(data=True)}
    edges = {(u, v): normalized(a) for u, v, a in graph.edges(data=True)}
    return nodes, edges


def empty_diff() -> dict[str, list]:
    return {key: [] for key in DIFF_KEYS}


def compute_diff(
    base: Snapshot,
    graph: nx.DiGraph,
    *,
    unchanged_nodes: Container[str] = frozenset(),
    unchanged_edges: Container[tuple[str, str]] = frozenset(),
) -> dict[str, list]:
    """The canonical diff that turns `base` into `graph`.

    `unchanged_nodes` / `unchanged_edges` name plain-string entries already known to equal
    the base (the sandbox proves that cheaply by fingerprints); they are not compared again.
    """
    base_nodes, base_edges = base
    diff = empty_diff()
    for node, attrs in graph.nodes(data=True):
        if type(node) is str and node in unchanged_nodes:
            continue
        name = str(node)
        before = base_nodes.get(name)
        after = normalized(attrs)
        if before is None:
            diff["nodes_added"].append([name, after])
        elif before != after:
            diff["nodes_changed"].append([name, after])
    diff["nodes_removed"] = [n for n in base_nodes if not graph.has_node(n)]
    seen: set[tuple[str, str]] = set()
    for u, v, attrs in graph.edges(data=True):
        key = (str(u), str(v))
        seen.add(key)
        if type(u) is str and type(v) is str and key in unchanged_edges:
            continue
        before = base_edges.get(key)
        after = normalized(attrs)
        if before is None:
            diff["edges_added"].append([key[0], key[1], after])
        elif before != after:
            diff["edges_changed"].append([key[0], key[1], after])
    diff["edges_removed"] = [[u, v] for (u, v) in base_edges if (u, v) not in seen]
    for key in DIFF_KEYS:
        diff[key].sort(key=lambda item: item if isinstance(item, str) else item[:2])
    return diff


def is_empty(diff: dict[str, list]) -> bool:
    return not any(diff.get(key) for key in DIFF_KEYS)


def validate_diff(diff: Any) -> dict[str, list]:
    """Check the shape of an untrusted diff (e.g. from a sandbox) and return it.

    Raises ValueError naming the first malformed part.
    """
    if not isinstance(diff, dict) or set(diff) != set(DIFF_KEYS):
        raise ValueError(f"graph diff must have exactly the keys {list(DIFF_KEYS)}")
    shapes = {
        "nodes_added": (2, dict),
        "nodes_changed": (2, dict),
        "edges_added": (3, dict),
        "edges_changed": (3, dict),
        "edges_removed": (2, None),
    }
    for key in DIFF_KEYS:
        items = diff[key]
        if not isinstance(items, list):
            raise ValueError(f"graph diff '{key}' must be a list")
        seen: set[Any] = set()
        for item in items:
            if key == "nodes_removed":
                if not isinstance(item, str):
                    raise ValueError(f"graph diff '{key}' holds a non-string node {item!r}")
                name: Any = item
            else:
                width, tail = shapes[key]
                ok = isinstance(item, list) and len(item) == width
                ok = ok and all(isinstance(x, str) for x in item[: width - (1 if tail else 0)])
                ok = ok and (tail is None or isinstance(item[-1], tail))
                if not ok:
                    raise ValueError(f"graph diff '{key}' holds a malformed entry {item!r:.80}")
                name = item[0] if key.startswith("nodes") else (item[0], item[1])
            # A repeated entry would make apply_diff's inverse restore the wrong attributes.
            if name in seen:
                raise ValueError(f"graph diff '{key}' names {name!r:.80} more than once")
            seen.add(name)
    return diff


def check_applicable(graph: nx.DiGraph, diff: dict[str, list]) -> None:
    """Raise ValueError unless `diff` could have been computed against `graph`."""
    for name, _ in diff["nodes_added"]:
        if graph.has_node(name):
            raise ValueError(f"graph diff adds node {name!r}, which the base already has")
    for name in diff["nodes_removed"]:
        if not graph.has_node(name):
            raise ValueError(f"graph diff removes node {name!r}, which the base lacks")
    for name, _ in diff["nodes_changed"]:
        if not graph.has_node(name):
            raise ValueError(f"graph diff changes node {name!r}, which the base lacks")
    removed = set(diff["nodes_removed"])
    added = {name for name, _ in diff["nodes_added"]}
    # compute_diff never names an entry twice; a diff that does has no single meaning.
    for name, _ in diff["nodes_changed"]:
        if name in removed:
            raise ValueError(f"graph diff both removes and changes node {name!r}")
    gone = {(u, v) for u, v in diff["edges_removed"]}
    for u, v, _ in diff["edges_changed"]:
        if (u, v) in gone:
            raise ValueError(f"graph diff both removes and changes edge {u!r}->{v!r}")
    for u, v, *_ in diff["edges_added"]:
        if graph.has_edge(u, v):
            raise ValueError(f"graph diff adds edge {u!r}->{v!r}, which the base already has")
        for end in (u, v):
            # networkx would silently create a missing endpoint, which the inverse never removes
            if end not in added and (end in removed or not graph.has_node(end)):
                raise ValueError(f"graph diff adds edge {u!r}->{v!r}, but node {end!r} is absent")
    for key in ("edges_removed", "edges_changed"):
        for u, v, *_ in diff[key]:
            if not graph.has_edge(u, v):
                raise ValueError(f"graph diff '{key}' names edge {u!r}->{v!r}, not in the base")


def apply_diff(graph: nx.DiGraph, diff: dict[str, list]) -> dict[str, list]:
    """Apply `diff` to `graph` in place; return the inverse diff that undoes it.

    `graph` must be the base the diff was computed against (see `check_applicable`).
    """
    check_applicable(graph, diff)
    inverse = empty_diff()
    for u, v in diff["edges_removed"]:
        if graph.has_edge(u, v):
            inverse["edges_added"].append([u, v, dict(graph.edges[u, v])])
            graph.remove_edge(u, v)
    for name in diff["nodes_removed"]:
        if graph.has_node(name):
            inverse["nodes_added"].append([name, dict(graph.nodes[name])])
            # A self-loop is both an in- and an out-edge: record it once.
            out_edges = [e for e in graph.out_edges(name, data=True) if e[1] != name]
            for u, v, attrs in list(graph.in_edges(name, data=True)) + out_edges:
                inverse["edges_added"].append([u, v, dict(attrs)])
            graph.remove_node(name)
    for name, attrs in diff["nodes_added"]:
        # update() rather than **attrs: an attribute named like an add_node parameter
        # ("node_for_adding") would raise halfway and leave the base graph half-changed.
        graph.add_node(name)
        graph.nodes[name].update(attrs)
        inverse["nodes_removed"].append(name)
    for name, attrs in diff["nodes_changed"]:
        if graph.has_node(name):
            inverse["nodes_changed"].append([name, dict(graph.nodes[name])])
            graph.nodes[name].clear()
            graph.nodes[name].update(attrs)
    for u, v, attrs in diff["edges_added"]:
        if not graph.has_edge(u, v):
            inverse["edges_removed"].append([u, v])
        graph.add_edge(u, v)
        graph.edges[u, v].update(attrs)
    for u, v, attrs in diff["edges_changed"]:
        if graph.has_edge(u, v):
            inverse["edges_changed"].append([u, v, dict(graph.edges[u, v])])
            graph.edges[u, v].clear()
            graph.edges[u, v].update(attrs)
    return inverse
