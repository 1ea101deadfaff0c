"""Run trusted oracle code in-process on a base graph, then restore the graph exactly.

Only the generator's own oracle programs run here (to validate them against the analytic
answers); agent code always runs in emulators/pysandbox. The graph is never copied: the
changes the program made are read off as a canonical graphdiff against a snapshot taken
once, and undone by applying the reverse diff.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from emulators.pysandbox import graphdiff
from generators.malt.index import clone


class _FromSources:
    """The edges leaving `sources` (whose whole adjacency equals the base's), as a container."""

    def __init__(self, sources: set[str]) -> None:
        self.sources = sources

    def __contains__(self, edge: object) -> bool:
        return edge[0] in self.sources  # type: ignore[index]


class InProcessRunner:
    """Snapshot of one base graph; runs programs on it and puts it back."""

    def __init__(self, graph: nx.DiGraph, prelude: str | None = None) -> None:
        self.graph = graph
        self._prelude = (prelude, compile(prelude, "<malt-oracle>", "exec")) if prelude else None
        self.nodes, self.edges = graphdiff.snapshot(graph)
        self.succ = {u: {v: self.edges[(u, v)] for v in nbrs} for u, nbrs in graph._succ.items()}

    def diff(self) -> dict[str, list]:
        """The canonical diff from the snapshot to the graph now: `graphdiff.compute_diff`,
        told which entries C-level dict comparisons already found equal to the base."""
        g_node, nodes, succ = self.graph._node, self.nodes, self.succ
        same_nodes = {n for n, attrs in g_node.items() if attrs == nodes.get(n)}
        same_sources = {u for u, nbrs in self.graph._succ.items() if nbrs == succ.get(u)}
        return graphdiff.compute_diff(
            (nodes, self.edges),
            self.graph,
            unchanged_nodes=same_nodes,
            unchanged_edges=_FromSources(same_sources),
        )

    def _undo(self, diff: dict[str, list]) -> None:
        """Apply the reverse of `diff` (a diff from the snapshot to the graph now)."""
        nodes, edges = self.nodes, self.edges
        reverse = {
            "nodes_added": [[n, clone(nodes[n])] for n in diff["nodes_removed"]],
            "nodes_removed": [n for n, _ in diff["nodes_added"]],
            "nodes_changed": [[n, clone(nodes[n])] for n, _ in diff["nodes_changed"]],
            "edges_added": [[u, v, clone(edges[(u, v)])] for u, v in diff["edges_removed"]],
            "edges_removed": [[u, v] for u, v, _ in diff["edges_added"]],
            "edges_changed": [[u, v, clone(edges[(u, v)])] for u, v, _ in diff["edges_changed"]],
        }
        graphdiff.apply_diff(self.graph, reverse)

    def is_base(self) -> bool:
        """Whether the graph equals the snapshot (one C-level comparison per dict)."""
        return self.graph._node == self.nodes and self.graph._succ == self.succ

    def restore(self, diff: dict[str, list]) -> None:
        """Undo `diff` (as returned by `diff()`), leaving the graph equal to the snapshot."""
        self._undo(diff)
        if not self.is_base():
            raise RuntimeError("the base graph could not be restored after an oracle run")

    def _shows(self, diff: dict[str, list]) -> bool:
        """Whether every entry of `diff` holds in the graph now (entries only, not the rest)."""
        g_node, g_succ = self.graph._node, self.graph._succ
        for key in ("nodes_added", "nodes_changed"):
            if any(g_node.get(n) != attrs for n, attrs in diff[key]):
                return False
        if any(n in g_node for n in diff["nodes_removed"]):
            return False
        for key in ("edges_added", "edges_changed"):
            if any((g_succ.get(u) or {}).get(v) != attrs for u, v, attrs in diff[key]):
                return False
        if any(v in (g_succ.get(u) or ()) for u, v in diff["edges_removed"]):
            return False
        # Undoing an added node drops all its edges, so an extra edge at a new node would
        # vanish unseen: require that new nodes have exactly the expected edges.
        new_edges = {(u, v) for u, v, _ in diff["edges_added"]}
        g_pred = self.graph._pred
        for name, _ in diff["nodes_added"]:
            if any((name, v) not in new_edges for v in g_succ[name]):
                return False
            if any((u, name) not in new_edges for u in g_pred[name]):
                return False
        return True

    def settle(self, expected: dict[str, list] | None = None) -> dict[str, list]:
        """Restore the base graph and return the diff the program made.

        With `expected` (the analytic diff), the full scan is avoided when it can be
        proven unnecessary: if every entry of `expected` holds now, undoing `expected`
        touches exactly those entries, so the graph is back to the base iff nothing else
        changed, i.e. iff the program's diff is `expected`. Otherwise the extra changes
        are found by a full scan and merged in (they concern other entries).
        """
        if expected is None or not self._shows(expected):
            diff = self.diff()
            if not graphdiff.is_empty(diff):
                self.restore(diff)
            return diff
        if graphdiff.is_empty(expected) and self.is_base():
            return expected
        try:
            self._undo(expected)
        except ValueError:  # raised before any change: an extra change blocks the undo
            diff = self.diff()
            self.restore(diff)
            return diff
        if self.is_base():
            return expected
        extra = self.diff()
        self.restore(extra)
        merged = {key: expected[key] + extra[key] for key in graphdiff.DIFF_KEYS}
        for key in graphdiff.DIFF_KEYS:
            merged[key].sort(key=lambda item: item if isinstance(item, str) else item[:2])
        return merged

    def run(
        self, code: str, entry: str = "process_graph", expected: dict[str, list] | None = None
    ) -> dict[str, Any]:
        """Exec a trusted program, call `entry(graph)`, restore the graph; return the answer
        record in the sandbox's format. `expected`: the diff the program should make."""
        namespace: dict[str, Any] = {"__name__": "malt_oracle"}
        # Every oracle program starts with the same helper prelude: compile it once.
        if self._prelude is not None and code.startswith(self._prelude[0]):
            exec(self._prelude[1], namespace)  # trusted: our own oracle
            code = "\n" * self._prelude[0].count("\n") + code[len(self._prelude[0]) :]
        exec(compile(code, "<malt-oracle>", "exec"), namespace)  # trusted: our own oracle
        try:
            value = namespace[entry](self.graph)
        finally:
            diff = self.settle(expected)
        return to_record(value, self.graph, diff)


def to_record(value: Any, graph: nx.DiGraph, diff: dict[str, list]) -> dict[str, Any]:
    """The answer record of a returned value (same shapes as the sandbox's records, with
    `state` on a value record whose program changed the graph)."""
    if isinstance(value, nx.Graph):
        if value is not graph:
            raise ValueError("oracle programs must return the graph they were given")
        return {"type": "graph", "graph_class": type(value).__name__, "diff": diff}
    if isinstance(value, list | tuple):
        record = {"type": "list", "value": list(value)}
    elif isinstance(value, dict):
        record = {"type": "table", "value": {str(k): v for k, v in value.items()}}
    else:
        record = {"type": "scalar", "value": value}
    if not graphdiff.is_empty(diff):
        record["state"] = diff
    return record
