"""What a MALT reply must look like, and worked examples for few-shot prompting.

`MaltReplyFormat.check` accepts exactly the replies an episode can run: a fenced Python
block (or a bare reply) defining `process_graph(graph)` that compiles. Reading a reply is
linear in its length (pipeline.untrusted.fenced_blocks), and `check` answers with a reason
for any source the compiler refuses, also one nested past its recursion or memory limits
or holding text no encoder takes (a lone surrogate, a NUL byte).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from pipeline.api import Action, fenced_blocks

NO_CODE = "the reply contains no Python code defining process_graph(graph)"
_DEFINES = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+process_graph[ \t]*\(", re.M)
_PYTHON_TAGS = ("", "python", "python3", "py")


def extract_code(reply: str) -> str | None:
    """The code of a reply: the last fenced Python block defining process_graph, else the
    whole reply when it has no fences and defines process_graph itself; None otherwise."""
    blocks = [body for lang, body in fenced_blocks(reply) if lang.lower() in _PYTHON_TAGS]
    defining = [body for body in blocks if _DEFINES.search(body)]
    if defining:
        return defining[-1]
    if "```" not in reply and _DEFINES.search(reply):
        return reply
    return None


ACTION = Action(
    name="submit_code",
    description=(
        "Submit Python source that defines process_graph(graph): it runs once on the "
        "topology graph and its return value is the answer."
    ),
    parameters={
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Python defining process_graph(graph)"}
        },
        "required": ["code"],
        "additionalProperties": False,
    },
)


RUN_CODE = Action(
    name="run_code",
    description=(
        "Try Python that defines process_graph(graph) on a copy of the topology, within the "
        "same limits, and see what it prints and returns. Nothing is submitted and the copy "
        "is thrown away; submit your answer with submit_code."
    ),
    parameters=ACTION.parameters,
)
MAX_SHOWN = 4096  # characters of a diagnostic run's output shown to the agent


class MaltReplyFormat:
    action = ACTION
    diagnostics = (RUN_CODE,)
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
            with warnings.catch_warnings():  # a model's odd code is a reason, not log noise
                warnings.simplefilter("ignore")
                compile(code, "<reply>", "exec")
        except SyntaxError as err:
            return f"the code does not compile: {err.msg} (line {err.lineno})"
        except (ValueError, RecursionError, MemoryError) as err:  # NUL bytes; nesting
            return f"the code does not compile: {type(err).__name__}: {str(err)[:200]}"
        return None

    def render(self, arguments: dict[str, Any]) -> str:
        code = arguments.get("code")
        return f"```python\n{code if isinstance(code, str) else ''}\n```"


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
