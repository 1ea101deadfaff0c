"""What a MALT reply must look like, and worked examples for few-shot prompting.

`MaltReplyFormat.check` accepts exactly the replies an episode can run: a fenced Python
block (or a bare reply) defining `process_graph(graph)` that compiles.
"""

from __future__ import annotations

import re

NO_CODE = "the reply contains no Python code defining process_graph(graph)"
_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)(?:```|\Z)", re.S)
_DEFINES = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+process_graph[ \t]*\(", re.M)
_PYTHON_TAGS = ("", "python", "python3", "py")


def extract_code(reply: str) -> str | None:
    """The code of a reply: the last fenced Python block defining process_graph, else the
    whole reply when it has no fences and defines process_graph itself; None otherwise."""
    blocks = [m for m in _FENCE.finditer(reply) if m.group("lang").lower() in _PYTHON_TAGS]
    defining = [m.group("body") for m in blocks if _DEFINES.search(m.group("body"))]
    if defining:
        return defining[-1]
    if "```" not in reply and _DEFINES.search(reply):
        return reply
    return None


class MaltReplyFormat:
    instructions = (
        "one ```python fenced block that defines process_graph(graph) and returns the answer"
    )
    example = (
        "```python\n"
        "def process_graph(graph):\n"
        "    ports = [n for n, a in graph.nodes(data=True) if 'EK_PORT' in a['type']]\n"
        "    return len(ports)\n"
        "```"
    )

    def check(self, reply: str) -> str | None:
        code = extract_code(reply)
        if code is None:
            return NO_CODE
        try:
            compile(code, "<reply>", "exec")
        except SyntaxError as err:
            return f"the code does not compile: {err.msg} (line {err.lineno})"
        return None


_CONTAINED = '''def contained(graph, node):
    """Nodes reachable from `node` over RK_CONTAINS edges (self-loops skipped)."""
    seen, stack = set(), [node]
    while stack:
        current = stack.pop()
        for child, edge in graph.succ[current].items():
            if child != current and child not in seen and "RK_CONTAINS" in edge["type"]:
                seen.add(child)
                stack.append(child)
    return seen
'''

# Tasks in the style of the generated prompts, answered the way we would answer them.
FEW_SHOT: tuple[tuple[str, str], ...] = (
    (
        "Task:\nHow many ports are in aggregation block `ju1.a2.m1`?\nReturn an int.",
        "```python\n" + _CONTAINED + "\n\ndef process_graph(graph):\n"
        "    inside = contained(graph, 'ju1.a2.m1')\n"
        "    return sum(1 for n in inside if 'EK_PORT' in graph.nodes[n]['type'])\n"
        "```",
    ),
    (
        "Task:\nRemove packet switch `ju1.a1.m3.s2c4` together with everything it contains.\n"
        "Return the modified graph (the same DiGraph object, changed in place).",
        "```python\n" + _CONTAINED + "\n\ndef process_graph(graph):\n"
        "    doomed = contained(graph, 'ju1.a1.m3.s2c4') | {'ju1.a1.m3.s2c4'}\n"
        "    graph.remove_nodes_from(doomed)\n"
        "    return graph\n"
        "```",
    ),
)
