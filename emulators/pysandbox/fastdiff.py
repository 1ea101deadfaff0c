"""`graphdiff.compute_diff`, exactly, for a forked child: untouched attributes are skipped.

A graph answer's diff walks every node and edge; normalising each attribute dict is most
of a run's cost on a 5.5k-node topology. The zygote fingerprints the base's raw
attributes in chunks of nodes (and edges); the child re-fingerprints the same chunks
of the answer, and every entry of an identical chunk is known to be unchanged, so
only the rest takes compute_diff's own path. tests/test_pysandbox.py checks that
`graph_diff` and `compute_diff` agree, including on equal-but-retyped values.
"""

from __future__ import annotations

import marshal
import re
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import networkx as nx

from emulators.pysandbox import graphdiff

_CHUNK = 128  # entries per fingerprint: one marshal call (and one audit event) each

# A marshal binary float ('g' + 8 little-endian bytes) whose exponent bits are all set.
_NON_FINITE = re.compile(rb"g[\x00-\xff]{6}[\xf0-\xff][\x7f\xff]")


def _raw_bytes(values: Any) -> bytes | None:
    """Exact-type bytes of plain data, or None if it holds anything else.

    marshal never calls user code, refuses every subclass and custom type, and version 2
    writes no back-references, so equal bytes mean equal values of identical types.
    """
    try:
        return marshal.dumps(values, 2)
    except ValueError:
        return None


def _fingerprint(values: list[Any]) -> bytes | None:
    # A chunk holding NaN never matches: compute_diff compares NaN by object identity.
    data = _raw_bytes(values)
    return None if data is None or _NON_FINITE.search(data) else data


def _chunks(keys: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(keys), _CHUNK):
        yield keys[start : start + _CHUNK]


def _unchanged(
    chunks: list[tuple[Sequence[Hashable], bytes | None]], lookup: Callable[[Any], Any]
) -> set[Any]:
    clean: set[Any] = set()
    for keys, blob in chunks:
        if blob is not None and _raw_bytes([lookup(key) for key in keys]) == blob:
            clean.update(keys)
    return clean


def _edge_lookup(graph: nx.Graph) -> Callable[[tuple[str, str]], Any]:
    # networkx's own adjacency mapping: the public views cost a Python call per step.
    adjacency = graph._adj
    return lambda edge: adjacency.get(edge[0], {}).get(edge[1])


class BaseIndex:
    """The base graph as a child needs it: the canonical snapshot plus chunk fingerprints.

    Only entries keyed by plain strings take the fast path; others are always compared.
    """

    def __init__(self, graph: nx.DiGraph) -> None:
        self.snapshot = graphdiff.snapshot(graph)
        nodes = [n for n in graph.nodes if type(n) is str]
        edges = [(u, v) for u, v in graph.edges if type(u) is str and type(v) is str]
        node_lookup, edge_lookup = graph._node.get, _edge_lookup(graph)
        self.node_chunks = [
            (keys, _fingerprint([node_lookup(key) for key in keys])) for keys in _chunks(nodes)
        ]
        self.edge_chunks = [
            (keys, _fingerprint([edge_lookup(key) for key in keys])) for keys in _chunks(edges)
        ]
        # None when the base holds NaN (compute_diff compares NaN by identity) or more.
        whole = _whole(graph)
        finite = all(b is not None and not _NON_FINITE.search(b) for b in whole)
        self.whole = whole if finite else None


def _whole(graph: nx.Graph) -> tuple[bytes | None, bytes | None]:
    """Exact-type bytes of all node attributes and of the whole adjacency (None: not plain
    data). marshal reads a dict's items without taking references, so in a forked child
    this writes to none of the pages it shares with the zygote: no copy-on-write faults,
    unlike any walk in Python (which touches every reference count)."""
    return _raw_bytes(graph._node), _raw_bytes(graph._adj)  # type: ignore[arg-type]


def is_unchanged(base: BaseIndex, graph: nx.Graph) -> bool:
    """True only when `graph` holds exactly the base's nodes, edges and attributes (same
    types, same order), so `graph_diff(base, graph)` is empty; False may be either."""
    if base.whole is None:
        return False
    try:
        return _whole(graph) == base.whole
    except AttributeError:  # not a networkx graph inside any more
        return False


def graph_diff(base: BaseIndex, graph: nx.Graph) -> dict[str, list]:
    """Exactly `graphdiff.compute_diff(base.snapshot, graph)`, skipping unchanged entries."""
    return graphdiff.compute_diff(
        base.snapshot,
        graph,
        unchanged_nodes=_unchanged(base.node_chunks, graph._node.get),
        unchanged_edges=_unchanged(base.edge_chunks, _edge_lookup(graph)),
    )
