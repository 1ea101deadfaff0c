"""The prompt every MALT query starts with: graph schema, hierarchy, naming, answer rules.

It states the conventions of schema.py in words; the per-query task (render.py) follows it.
"""

from __future__ import annotations

from generators.malt import schema as S


def _hierarchy() -> str:
    lines = [f"  {parent} -> {', '.join(sorted(kids))}" for parent, kids in S.CONTAINS.items()]
    return "\n".join(lines)


PREAMBLE = f"""\
You manage a datacenter network described with Google's MALT model. It is given to you
as a networkx DiGraph `graph`.

Nodes. A node's key is its name; graph.nodes[n] holds:
- "name": the same name;
- "type": a sorted list of entity kinds. Entities sharing a name are one physical device
  and one node: a switch device has type ["EK_CHASSIS", "EK_CONTROL_POINT",
  "EK_PACKET_SWITCH"]. Test a kind with `"EK_PORT" in graph.nodes[n]["type"]`;
- ports (EK_PORT): "physical_capacity_bps", an int in bits per second;
- packet switches (EK_PACKET_SWITCH): "switch_loc", a dict such as {{"stage": 2}}; "the stage"
  of a switch is graph.nodes[n]["switch_loc"]["stage"].
Edges. graph.edges[u, v]["type"] is a sorted list of relationship kinds: "RK_CONTAINS"
(u contains v) and/or "RK_CONTROLS" (u controls v). Each switch device has a self-loop typed
["RK_CONTAINS", "RK_CONTROLS"] (its chassis contains its switch and control point, which
controls the switch); self-loops never count when walking the hierarchy.

Hierarchy (RK_CONTAINS, container kind -> kinds it may contain directly):
{_hierarchy()}
EK_JUPITER, EK_RACK and EK_CONTROL_DOMAIN are not contained in anything. A switch device
sits in three trees: its aggregation or spine block, its rack, its control domain.
"In X" / "contained in X" means reachable from X along RK_CONTAINS edges, directly or
indirectly, X itself excluded: the ports in an aggregation block are the ports of its
packet switches. The ports of a port P are P itself.

Names: Jupiter fabric `ju1`; superblock `ju1.a1`; aggregation block `ju1.a1.m1`; spine
block `ju1.s1`; switch device `<block>.s<stage>c<n>`; port `<switch>.p<n>`; rack
`<block>rack`; control domain `ju1.a1.dom` or `ju1.s1.dom`.

Changes. Removing a node removes it and everything contained in it (removing a packet
switch removes its ports), with all their edges. A new node gets "name" (equal to its key)
and "type" (a list); a new port also gets "physical_capacity_bps", a new packet switch
"switch_loc". Connect each new node to its container with one edge typed ["RK_CONTAINS"]
and add nothing else. Capacities are ints in bits per second. Change only what the task
asks; the result must stay valid: every port has a positive capacity, every packet switch
has at least one port, and every node keeps its containers and an edge. The graph your code
leaves is judged whatever you return: make the changes a task asks for on `graph` itself,
also when the answer is a value, and leave it unchanged when the task only asks a question.

Answers. Rankings put the highest value first and break ties by ascending name (Python
string order). Counts and capacities are ints.

Reply with Python code in one ```python fenced block that defines `process_graph(graph)`.
It is called once with the graph; its return value is your answer: an int, a str, a list,
a dict, or (for a change to the topology) the graph itself, modified in place. You may
import networkx and computation-only standard modules (math, itertools, collections,
functools, heapq, statistics, re, json, copy, ...); files, network and processes are blocked.
"""


def limits_text(cpu_s: float, wall_s: float, memory_mb: int) -> str:
    """What the sandbox allows one run (a player's search timed out unwarned otherwise)."""
    return (
        f"Your code runs once, with at most {cpu_s:g} s of CPU time, {wall_s:g} s of wall "
        f"time and {memory_mb} MiB of memory; past them it is stopped and scores nothing.\n"
    )


def build_prompt(task: str, limits: str = "") -> str:
    """The full prompt of one query; `limits` from limits_text."""
    return f"{PREAMBLE}{limits}\nTask:\n{task}\n"
