"""Render a query spec (actions.py) as the agent's natural-language task.

The oracle program (oracle.py) and the analytic answer (actions.py) are derived from the
same spec, so the three cannot describe different tasks. The prompt preamble (schema,
hierarchy, naming, answer format, tie-breaking, units) lives in prompt.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generators.malt import schema as S
from generators.malt.actions import ITEM, MUTATIONS, VALUE_OPS, answer_type

KindsOf = Callable[[str], frozenset[str] | None]

# Which kind names a node in prose when it has several (a device is "packet switch X").
_PRIMARY = (
    S.EK_PACKET_SWITCH,
    S.EK_PORT,
    S.EK_AGG_BLOCK,
    S.EK_SPINEBLOCK,
    S.EK_SUPERBLOCK,
    S.EK_RACK,
    S.EK_CONTROL_DOMAIN,
    S.EK_JUPITER,
    S.EK_CHASSIS,
    S.EK_CONTROL_POINT,
)
_CMP_WORDS = {
    ">": "is greater than",
    ">=": "is at least",
    "<": "is less than",
    "<=": "is at most",
    "==": "equals",
    "!=": "does not equal",
}
ITEM_LETTER = "X"


def _added_kinds(spec: Any, out: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """Kinds of the nodes a spec adds, so prose can name them before they exist."""
    if isinstance(spec, dict):
        if spec.get("op") == "add_switch":
            out[spec["switch"]] = frozenset({S.EK_PACKET_SWITCH})
        if spec.get("op") == "add_port" and spec.get("port"):
            out[spec["port"]] = frozenset({S.EK_PORT})
        for value in spec.values():
            _added_kinds(value, out)
    elif isinstance(spec, list):
        for value in spec:
            _added_kinds(value, out)
    return out


class Renderer:
    """Renders specs for one topology (`kinds_of` names the kind of a base node)."""

    def __init__(self, kinds_of: KindsOf) -> None:
        self.kinds_of = kinds_of
        self.extra: dict[str, frozenset[str]] = {}
        self.item_word = ITEM_LETTER  # how the loop member is named in prose

    # -- prose -----------------------------------------------------------------------------

    def ref(self, node: str) -> str:
        if node == ITEM:
            return self.item_word
        kinds = self.extra.get(node) or self.kinds_of(node) or frozenset()
        kind = next((k for k in _PRIMARY if k in kinds), None)
        return f"{S.kind_name(kind)} `{node}`" if kind else f"node `{node}`"

    def metric(self, metric: list[Any], node: str) -> str:
        if metric[0] == "count":
            return f"the number of {S.kind_name(metric[1], plural=True)} in {self.ref(node)}"
        if metric[0] == "capacity":
            return f"the total physical capacity (bps) of the ports in {self.ref(node)}"
        return f"the stage of {self.ref(node)}"

    def metric_noun(self, metric: list[Any]) -> str:
        if metric[0] == "count":
            return f"number of {S.kind_name(metric[1], plural=True)} it contains"
        if metric[0] == "capacity":
            return "total physical capacity (bps) of its ports"
        return "stage"

    def cond(self, cond: dict[str, Any]) -> str:
        return (
            f"{self.metric(cond['metric'], cond['node'])} {_CMP_WORDS[cond['cmp']]} {cond['value']}"
        )

    def clause(self, spec: dict[str, Any]) -> str:
        """One imperative clause describing a non-loop operation."""
        op = spec["op"]
        if op == "count":
            return f"count the {S.kind_name(spec['kind'], True)} in {self.ref(spec['scope'])}"
        if op == "capacity":
            return f"compute {self.metric(['capacity'], spec['scope'])}"
        if op == "stage":
            return f"look up the stage of {self.ref(spec['switch'])}"
        if op == "list":
            text = f"list the {S.kind_name(spec['kind'], True)} in {self.ref(spec['scope'])}"
            if spec.get("where"):
                self.item_word = "it"
                text += f" for which {self.cond(spec['where'])}"
                self.item_word = ITEM_LETTER
            return text
        if op == "rank":
            return (
                f"rank the {S.kind_name(spec['kind'], True)} in {self.ref(spec['scope'])} by the "
                f"{self.metric_noun(spec['metric'])}, highest first (ties: ascending name), "
                f"and keep the first {spec['top']}"
            )
        if op == "table":
            return (
                f"for each {S.kind_name(spec['kind'])} in {self.ref(spec['scope'])}, compute the "
                f"{self.metric_noun(spec['metric'])}"
            )
        if op == "find":
            return f"find the {S.kind_name(spec['kind'])} that contains {self.ref(spec['node'])}"
        if op == "remove":
            node = spec["node"]
            if node != ITEM and S.EK_PORT in (self.extra.get(node) or self.kinds_of(node) or ()):
                return f"remove {self.ref(node)}"
            return f"remove {self.ref(node)} together with everything it contains"
        if op == "add_port":
            if spec["port"]:
                name = f"named `{spec['port']}`"
            else:
                owner = ITEM_LETTER if spec["switch"] == ITEM else f"`{spec['switch']}`"
                name = (
                    f"named `<name of {owner}>.p<n+1>`, where n is the number of ports "
                    f"{self.ref(spec['switch'])} has before the addition,"
                )
            return (
                f"add a new port {name} with physical_capacity_bps {spec['capacity']} to "
                f"{self.ref(spec['switch'])}"
            )
        if op == "add_switch":
            sw, n = spec["switch"], spec["ports"]
            return (
                f"add a new packet switch `{sw}` to {self.ref(spec['block'])}: a node of type "
                f'["EK_PACKET_SWITCH"] with switch_loc {{"stage": {spec["stage"]}}}, contained in '
                f"{self.ref(spec['block'])}, with {n} new ports `{sw}.p1` ... `{sw}.p{n}`, each "
                f"with physical_capacity_bps {spec['capacity']}"
            )
        if op == "set_capacity":
            target = spec["target"]
            kinds = self.extra.get(target) or self.kinds_of(target) or frozenset()
            if target != ITEM and S.EK_PORT in kinds:
                return f"set the physical_capacity_bps of {self.ref(target)} to {spec['capacity']}"
            return (
                f"set the physical_capacity_bps of every port of {self.ref(target)} "
                f"to {spec['capacity']}"
            )
        if op == "set_stage":
            return f"set the stage of {self.ref(spec['switch'])} to {spec['stage']}"
        raise ValueError(f"no clause for op {op!r}")

    def returns(self, spec: dict[str, Any]) -> str:
        if spec["op"] == "seq":
            return self.returns(spec["steps"][-1])
        if spec["op"] == "if":
            return self.returns(spec["then"])
        kind = answer_type(spec)
        if kind == "number":
            return "Return that number (an int)."
        if kind == "text":
            return "Return that node's name (a str)."
        if kind == "list":
            return "Return a list of their names (order does not matter)."
        if kind == "ranking":
            return "Return the list of their names in rank order."
        if kind == "graph":
            return "Return the modified graph (the same DiGraph object, changed in place)."
        if spec["op"] == "table":
            kind, value = spec["kind"], "that number (an int)"
        else:
            body = spec["body"] if spec["op"] == "for" else spec["then"]
            kind = spec["kind"]
            value = "the name found (a str)" if body["op"] == "find" else "that number (an int)"
        return f"Return a dict mapping the name of each such {S.kind_name(kind)} to {value}."

    def task(self, spec: dict[str, Any]) -> str:
        """The task paragraph of the prompt (without the preamble)."""
        self.extra = _added_kinds(spec, {})
        op = spec["op"]
        if op in VALUE_OPS or op in MUTATIONS:
            body = _sentence(self.clause(spec))
        elif op == "seq":
            steps = [f"{i}. {_sentence(self.clause(s))}" for i, s in enumerate(spec["steps"], 1)]
            body = (
                "Do these steps in order, each on the graph as the previous step left it:\n"
                + "\n".join(steps)
                + "\nThe answer is the result of the last step."
            )
        elif op == "if":
            body = (
                f"If {self.cond(spec['cond'])}, {self.clause(spec['then'])}. "
                f"Otherwise, {self.clause(spec['else'])}."
            )
        else:
            head = (
                f"For each {S.kind_name(spec['kind'])} {ITEM_LETTER} in {self.ref(spec['scope'])} "
                f"(taken in ascending name order, as listed before the loop starts)"
            )
            if op == "for":
                body = f"{head}: {self.clause(spec['body'])}."
            else:
                body = (
                    f"{head}: if {self.cond(spec['cond'])}, {self.clause(spec['then'])}; "
                    f"otherwise, {self.clause(spec['else'])}."
                )
            if answer_type(spec) == "table":
                body += f" Record the result for each {ITEM_LETTER}."
        return f"{body}\n{self.returns(spec)}"


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."
