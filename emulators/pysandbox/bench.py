"""Per-run cost of the sandbox on a ~5.5k-node containment tree (`python -m pipeline.bench`).

Figures are seconds unless named otherwise. "overhead" is the wall time of `run()` minus
the agent code's own `exec_s`: fork, confinement, serialising the answer (a graph diff
for graph answers), and the round trip through the zygote.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import networkx as nx

from emulators.pysandbox.sandbox import GraphSandbox

TARGET_OVERHEAD_S = 0.020
REPLIES = {
    "return_1": "def process_graph(graph):\n    return 1\n",
    "graph_remove_node": (
        "def process_graph(graph):\n    graph.remove_node('dc.a0.s0.c0.p0')\n    return graph\n"
    ),
    "scalar_scan": (
        "def process_graph(graph):\n"
        "    return sum(d.get('capacity_bps', 0) for _, d in graph.nodes(data=True))\n"
    ),
}


def containment_tree(
    blocks: int = 4, switches: int = 10, chassis: int = 4, ports: int = 33
) -> nx.DiGraph:
    """A MALT-shaped tree (5,485 nodes by default): domain > blocks > switches > chassis > ports."""
    graph = nx.DiGraph()
    graph.add_node("dc", type="EK_CONTROL_DOMAIN", name="dc")

    def add(parent: str, name: str, kind: str, **attrs: Any) -> None:
        graph.add_node(name, type=kind, name=name, **attrs)
        graph.add_edge(parent, name, type="RK_CONTAINS")

    for a in range(blocks):
        block = f"dc.a{a}"
        add("dc", block, "EK_AGG_BLOCK", tags=["agg"], meta={"owner": "net", "rev": a})
        for s in range(switches):
            switch = f"{block}.s{s}"
            add(block, switch, "EK_PACKET_SWITCH", tags=["tor"], meta={"vendor": "x", "slots": 4})
            for c in range(chassis):
                box = f"{switch}.c{c}"
                add(switch, box, "EK_CHASSIS", meta={"slot": c})
                for p in range(ports):
                    meta = {"speed": "400G", "index": p}
                    add(box, f"{box}.p{p}", "EK_PORT", capacity_bps=400 * 10**9, meta=meta)
    return graph


def _quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))]


def run_all(runs: int = 200, warmup: int = 10) -> dict[str, Any]:
    graph = containment_tree()
    figures: dict[str, Any] = {"graph_nodes": graph.number_of_nodes()}
    started = time.perf_counter()
    with GraphSandbox(graph) as box:
        figures["zygote_start_s"] = round(time.perf_counter() - started, 4)
        figures["isolation"] = box.isolation
        for name, code in REPLIES.items():
            for _ in range(warmup):
                box.run(code)
            walls, overheads = [], []
            for _ in range(runs):
                started = time.perf_counter()
                result = box.run(code)
                wall = time.perf_counter() - started
                if result.status.value != "ok":
                    raise RuntimeError(f"benchmark reply {name} failed: {result.error}")
                walls.append(wall)
                overheads.append(wall - result.exec_s)
            median, p90 = _quantiles(walls)
            figures[f"run_{name}_median_s"] = round(median, 5)
            figures[f"run_{name}_p90_s"] = round(p90, 5)
            figures[f"overhead_{name}_median_s"] = round(_quantiles(overheads)[0], 5)
    figures["target_overhead_s"] = TARGET_OVERHEAD_S
    return figures


if __name__ == "__main__":
    print(json.dumps(run_all(), indent=2))
