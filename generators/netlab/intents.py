"""Path and ECMP intents of a NetSpec, from its own costs (what OSPF and BGP must compute).

Single-area OSPF labs: shortest paths by link cost (Dijkstra keeping every equal-cost
first hop, as OSPF's SPF does). Leaf-spine: every leaf reaches another leaf's rack over
every spine (eBGP multipath). Multi-area, multi-AS and campus labs get no derived intents
here: their best paths depend on area and BGP rules the fault catalogue states per query.
`first_hops` is public so that a caller can state an intent for any pair.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from generators.netlab.spec import EcmpIntent, NetSpec, PathIntent

MAX_PATHS = 6  # path intents kept per lab: the longest unique shortest paths
MAX_ECMP = 6  # ECMP intents kept per lab


def _graph(spec: NetSpec) -> dict[str, list[tuple[str, int, int, str]]]:
    """router -> [(peer, cost, link id, my interface)] over the OSPF links in use."""
    graph: dict[str, list[tuple[str, int, int, str]]] = {r.name: [] for r in spec.routers}
    for x in spec.links:
        if x.area is None or x.role == "spare":
            continue
        graph[x.a].append((x.b, x.cost, x.id, x.a_intf))
        graph[x.b].append((x.a, x.cost, x.id, x.b_intf))
    return graph


Table = dict[str, tuple[int, frozenset[tuple[int, str]]]]


def first_hops(spec: NetSpec, source: str, graph: dict | None = None) -> Table:
    """router -> (its distance from `source`, the set of (link id, source interface) of
    every equal-cost first hop), over the OSPF links (costs as in the spec)."""
    graph = graph if graph is not None else _graph(spec)
    best: dict[str, tuple[int, frozenset[tuple[int, str]]]] = {source: (0, frozenset())}
    heap = [(0, source)]
    done: set[str] = set()
    while heap:
        dist, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        for peer, cost, link, intf in graph[node]:
            hops = frozenset({(link, intf)}) if node == source else best[node][1]
            d = dist + cost
            if peer not in best or d < best[peer][0]:
                best[peer] = (d, hops)
                heapq.heappush(heap, (d, peer))
            elif d == best[peer][0] and peer not in done:
                best[peer] = (d, best[peer][1] | hops)
    return best


def _unique_path(
    spec: NetSpec, tables: dict[str, Table], source: str, target: str
) -> tuple[list[str], list[int]] | None:
    """The routers and links of the only shortest path, or None when there are several."""
    routers, links = [source], []
    node = source
    while node != target:
        hops = tables[node][target][1]
        if len(hops) != 1:
            return None
        ((link, _),) = hops
        x = spec.link(link)
        node = x.b if x.a == node else x.a
        routers.append(node)
        links.append(link)
    return routers, links


def derive(spec: NetSpec) -> tuple[tuple[PathIntent, ...], tuple[EcmpIntent, ...]]:
    from generators.netlab.spec import EcmpIntent, PathIntent

    lans = {lan.routers[0].router: lan for lan in spec.lans if lan.kind == "hosts" and lan.hosts}
    if spec.family == "leafspine":
        leaves = sorted(lans, key=lambda r: spec.router(r).index)
        ecmp = []
        for src, dst in zip(leaves, leaves[1:] + leaves[:1], strict=True):
            via = tuple(x.end(src)[0] for x in spec.links_of(src))
            ecmp.append(EcmpIntent(src, lans[dst].subnet, via))
        return (), tuple(ecmp[:MAX_ECMP])
    if spec.bgp or {a.id for a in spec.areas} != {"0.0.0.0"} or not spec.ospf:
        return (), ()
    paths, ecmp = [], []
    ordered = sorted(lans, key=lambda r: spec.router(r).index)
    graph = _graph(spec)
    tables = {r.name: first_hops(spec, r.name, graph) for r in spec.routers}
    for src in ordered:
        table = tables[src]
        for dst in ordered:
            if dst == src or dst not in table:
                continue
            hops = table[dst][1]
            if len(hops) > spec.ecmp_width:  # FRR installs `maximum-paths` of them: which?
                continue
            if len(hops) > 1:
                via = tuple(sorted(intf for _, intf in hops))
                ecmp.append(EcmpIntent(src, lans[dst].subnet, via))
            else:
                path = _unique_path(spec, tables, src, dst)
                if path is not None and len(path[1]) >= 2:
                    paths.append((src, dst, path))
    paths.sort(key=lambda p: (-len(p[2][1]), spec.router(p[0]).index, spec.router(p[1]).index))
    chosen, seen = [], set()
    for src, dst, (routers, links) in paths:
        if (dst, src) in seen:  # one direction per pair: the reverse is its own intent
            continue
        seen.add((src, dst))
        chosen.append(
            PathIntent(lans[src].hosts[0], lans[dst].hosts[0], tuple(routers), tuple(links))
        )
    return tuple(chosen[:MAX_PATHS]), tuple(ecmp[:MAX_ECMP])
