"""Per-topology indices and the analytic state the expected answers are computed on.

`TopoIndex` is built once per base topology (kinds, containment children and parents,
incident edges, nodes by kind, cached descendants). `View` is the base plus an overlay of
removals, additions and attribute changes: the separate evaluator (actions.py) mutates a
View instead of a graph, and `View.diff()` yields the canonical graphdiff of the result
without running any query code.

"Contained in X" means reachable from X over RK_CONTAINS edges, X itself excluded; a
device's self-loop never counts.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from emulators.pysandbox import graphdiff
from generators.malt import schema as S


def clone(value: Any) -> Any:
    """A deep copy of a JSON-like attribute value (much faster than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


class Redraw(Exception):  # control flow inside the generator, never escapes it
    """The drawn query is invalid or uninteresting on this topology; draw another."""


class TopoIndex:
    """Read-only indices of one base topology (built once, shared by all queries)."""

    def __init__(self, graph: nx.DiGraph) -> None:
        nodes, edges = graphdiff.snapshot(graph)
        self.attrs: dict[str, dict[str, Any]] = nodes
        self.edges: dict[tuple[str, str], dict[str, Any]] = edges
        self.kinds: dict[str, frozenset[str]] = {
            n: frozenset(a[S.A_TYPE]) for n, a in nodes.items()
        }
        children: dict[str, list[str]] = {n: [] for n in nodes}
        parents: dict[str, list[str]] = {n: [] for n in nodes}
        incident: dict[str, list[tuple[str, str]]] = {n: [] for n in nodes}
        for (u, v), attrs in edges.items():
            incident[u].append((u, v))
            if u != v:
                incident[v].append((u, v))
                if S.RK_CONTAINS in attrs[S.A_TYPE]:
                    children[u].append(v)
                    parents[v].append(u)
        self.children = {n: tuple(sorted(c)) for n, c in children.items()}
        self.parents = {n: tuple(sorted(p)) for n, p in parents.items()}
        self.incident = {n: tuple(e) for n, e in incident.items()}
        self.by_kind: dict[str, tuple[str, ...]] = {
            kind: tuple(sorted(n for n, k in self.kinds.items() if kind in k))
            for kind in S.NODE_KINDS
        }
        self._descendants: dict[str, tuple[str, ...]] = {}
        self._ancestors: dict[str, tuple[str, ...]] = {}

    def descendants(self, node: str) -> tuple[str, ...]:
        """Sorted names of the nodes contained in `node` in the base topology."""
        hit = self._descendants.get(node)
        if hit is None:
            hit = self._descendants[node] = tuple(sorted(_reach(node, self.children.__getitem__)))
        return hit

    def ancestors(self, node: str) -> tuple[str, ...]:
        """Sorted names of the nodes that contain `node` in the base topology."""
        hit = self._ancestors.get(node)
        if hit is None:
            hit = self._ancestors[node] = tuple(sorted(_reach(node, self.parents.__getitem__)))
        return hit

    def members(self, node: str, kind: str) -> tuple[str, ...]:
        """Base nodes of `kind` contained in `node`, sorted."""
        return tuple(n for n in self.descendants(node) if kind in self.kinds[n])

    def container(self, node: str, kind: str) -> str | None:
        """The unique base node of `kind` containing `node`, else None."""
        found = [a for a in self.ancestors(node) if kind in self.kinds[a]]
        return found[0] if len(found) == 1 else None


def _reach(start: str, step: Any) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for nxt in step(stack.pop()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    seen.discard(start)
    return seen


class View:
    """The base topology plus the changes made by the operations evaluated so far."""

    def __init__(self, index: TopoIndex) -> None:
        self.ix = index
        self.removed: set[str] = set()
        self.added: dict[str, dict[str, Any]] = {}  # new node -> attrs
        self.added_children: dict[str, list[str]] = {}  # container -> new RK_CONTAINS children
        self.changed: dict[str, dict[str, Any]] = {}  # base node -> attrs after
        self._structural = False

    def exists(self, node: str) -> bool:
        return node in self.added or (node in self.ix.attrs and node not in self.removed)

    def require(self, node: str) -> None:
        if not self.exists(node):
            raise Redraw(f"node {node!r} does not exist at this point")

    def attrs(self, node: str) -> dict[str, Any]:
        self.require(node)
        if node in self.added:
            return self.added[node]
        return self.changed.get(node) or self.ix.attrs[node]

    def kinds(self, node: str) -> frozenset[str]:
        self.require(node)
        if node in self.added:
            return frozenset(self.added[node][S.A_TYPE])
        return self.ix.kinds[node]

    def children(self, node: str) -> list[str]:
        kids = [c for c in self.ix.children.get(node, ()) if c not in self.removed]
        kids.extend(c for c in self.added_children.get(node, ()) if c in self.added)
        return kids

    def contained(self, node: str) -> list[str]:
        """Sorted names of the nodes contained in `node` now."""
        self.require(node)
        if not self._structural:
            return list(self.ix.descendants(node))
        return sorted(_reach(node, self.children))

    def members(self, node: str, kind: str) -> list[str]:
        if not self._structural:  # no node removed or added yet: the base's members
            self.require(node)
            return list(self.ix.members(node, kind))
        return [n for n in self.contained(node) if kind in self.kinds(n)]

    def containers(self, node: str) -> list[str]:
        """Sorted names of the nodes containing `node` now (additions only go under
        existing containers, so the base ancestors of a new node's parent apply)."""
        self.require(node)
        if node in self.added:
            parents = [p for p, kids in self.added_children.items() if node in kids]
            found = set(parents)
            for p in parents:
                found.update(self.containers(p))
            return sorted(found)
        return [a for a in self.ix.ancestors(node) if a not in self.removed]

    # -- mutations -------------------------------------------------------------------------

    def remove(self, node: str) -> None:
        """Remove `node` and everything it contains."""
        doomed = [node, *self.contained(node)]
        self._structural = True
        for name in doomed:
            if name in self.added:
                del self.added[name]
            else:
                self.removed.add(name)
                self.changed.pop(name, None)

    def add(self, node: str, attrs: dict[str, Any], container: str) -> None:
        if node in self.added or node in self.ix.attrs:
            raise Redraw(f"node {node!r} already exists (or existed) in the topology")
        self.require(container)
        self._structural = True
        self.added[node] = attrs
        self.added_children.setdefault(container, []).append(node)

    def set_attr(self, node: str, key: str, value: Any) -> None:
        self.require(node)
        if node in self.added:
            self.added[node][key] = value
            return
        after = self.changed.get(node)
        if after is None:
            after = self.changed[node] = clone(self.ix.attrs[node])
        after[key] = value

    # -- result ----------------------------------------------------------------------------

    def diff(self) -> dict[str, list]:
        """The canonical graphdiff from the base topology to this view."""
        ix = self.ix
        diff = graphdiff.empty_diff()
        diff["nodes_removed"] = sorted(self.removed)
        gone = {edge for name in self.removed for edge in ix.incident[name]}
        diff["edges_removed"] = [[u, v] for u, v in sorted(gone)]
        diff["nodes_added"] = [[n, clone(a)] for n, a in sorted(self.added.items())]
        diff["nodes_changed"] = [
            [n, clone(a)] for n, a in sorted(self.changed.items()) if a != ix.attrs[n]
        ]
        new_edges = [
            [parent, child, S.contains_edge()]
            for parent, kids in self.added_children.items()
            if self.exists(parent)
            for child in kids
            if child in self.added
        ]
        diff["edges_added"] = sorted(new_edges, key=lambda e: e[:2])
        return diff
