"""Scoring of MALT episodes: correctness by answer type and safety of graph answers.

Correctness compares the last step's answer record with the ground-truth record:
number - an int/float equal to the expected number (a bool is not a number);
text - a str equal after strip(); list - the same multiset of items; ranking - the same
items in the same order; table - a dict with the same keys and equal values (numbers
compared numerically); graph - a DiGraph whose canonical diff from the base equals the
expected diff. Safety: a graph answer is applied to the base, checked and reverted
(checker.SafetyChecker); any other answer leaves the topology as it was, so it is safe.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from generators.malt import graphdiff
from generators.malt.checker import SafetyChecker
from pipeline.core import (
    Outcome,
    Query,
    StepResult,
    StepStatus,
    Verdict,
    canonical_json,
    outcome_for_status,
)

ANSWER_TYPES = ("number", "text", "list", "ranking", "table", "graph")
MAX_VIOLATIONS_KEPT = 5


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _norm(value: Any) -> Any:
    """Numbers compare numerically (2 == 2.0), containers element-wise."""
    if _is_number(value):
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            return int(value)
        return value
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _norm(v) for k, v in value.items()}
    return value


def canonical_diff(diff: dict[str, list]) -> str:
    """Canonical JSON of a diff: normalised attributes, every list sorted."""
    out = {}
    for key in graphdiff.DIFF_KEYS:
        items = [item if isinstance(item, str) else _norm(item) for item in diff[key]]
        # Names are unique within a well-formed diff, so sorting by them is canonical.
        width = 1 if key.startswith("nodes") else 2
        out[key] = sorted(
            items, key=lambda item, w=width: item if isinstance(item, str) else item[:w]
        )
    return canonical_json(out)


def answers_match(answer_type: str, expected: dict[str, Any], got: Any) -> str | None:
    """None when `got` (an answer record) answers like `expected`, else the reason it does not."""
    if not isinstance(got, dict) or "type" not in got:
        return f"the answer is not a value record: {got!r:.80}"
    kind = got["type"]
    if answer_type == "graph":
        if kind != "graph":
            return f"expected the modified graph, got a {kind} answer"
        if got.get("graph_class") != "DiGraph":
            return f"expected a networkx DiGraph, got {got.get('graph_class')!r}"
        try:
            graphdiff.validate_diff(got.get("diff"))
        except ValueError as exc:
            return f"malformed graph diff: {exc}"
        same = got["diff"] is expected["diff"]  # the generator's own check, already proven
        if not same and canonical_diff(got["diff"]) != canonical_diff(expected["diff"]):
            return "the graph differs from the expected graph"
        return None
    want_kind = {"number": "scalar", "text": "scalar", "list": "list", "ranking": "list"}
    want_kind["table"] = "table"
    if kind != want_kind.get(answer_type):
        return f"expected a {answer_type} answer, got a {kind} answer"
    want, value = expected["value"], got.get("value")
    if answer_type == "number":
        if not _is_number(value):
            return f"expected a number, got {value!r:.60}"
        return None if value == want else f"expected {want!r}, got {value!r:.60}"
    if answer_type == "text":
        if not isinstance(value, str):
            return f"expected a str, got {value!r:.60}"
        return (
            None if value.strip() == str(want).strip() else f"expected {want!r}, got {value!r:.60}"
        )
    if answer_type == "list":
        if not isinstance(value, list):
            return f"expected a list, got {value!r:.60}"
        same = Counter(canonical_json(_norm(v)) for v in value) == Counter(
            canonical_json(_norm(v)) for v in want
        )
        return None if same else f"expected the items {want!r:.120}, got {value!r:.120}"
    if answer_type == "ranking":
        if not isinstance(value, list):
            return f"expected a list, got {value!r:.60}"
        return (
            None
            if _norm(value) == _norm(want)
            else f"expected {want!r:.120} in order, got {value!r:.120}"
        )
    if not isinstance(value, dict):
        return f"expected a dict, got {value!r:.60}"
    if set(map(str, value)) != set(want):
        return f"expected the keys {sorted(want)!r:.120}, got {sorted(map(str, value))!r:.120}"
    for key, expected_value in want.items():
        got_value = value.get(key)
        if type(got_value) is bool or _norm(got_value) != _norm(expected_value):
            return f"expected {key!r}: {expected_value!r}, got {got_value!r:.60}"
    return None


def step_safety(step: StepResult, checker: SafetyChecker) -> tuple[bool, list[str]]:
    """(safe, violations) of one step: only an OK graph answer can change the topology."""
    record = step.evidence.get("answer") if step.status is StepStatus.OK else None
    if not isinstance(record, dict) or record.get("type") != "graph":
        return True, []
    try:
        violations = checker.check_diff(record.get("diff"))
    except ValueError as exc:
        return False, [f"the graph answer cannot be applied to the base topology: {exc}"]
    return not violations, violations


def score(query: Query, steps: Sequence[StepResult], checker: SafetyChecker) -> Verdict:
    """Judge an episode by its last step; `checker` holds the query's base topology."""
    if not steps:
        return Verdict(Outcome.PARSE_ERROR, False, True, [], error="no step was recorded")
    safety = [step_safety(step, checker) for step in steps]
    step_safe = [safe for safe, _ in safety]
    last = steps[-1]
    safe, violations = safety[-1]
    detail: dict[str, Any] = {"answer_type": query.answer_type}
    if violations:
        detail["violations"] = violations[:MAX_VIOLATIONS_KEPT]
        detail["violation_count"] = len(violations)
    if last.status is not StepStatus.OK:
        return Verdict(outcome_for_status(last.status), False, safe, step_safe, last.error, detail)
    record = last.evidence.get("answer")
    if not isinstance(record, dict) or record.get("type") not in (
        "scalar",
        "list",
        "table",
        "graph",
    ):
        reason = f"the step is OK but holds no answer record (got {record!r:.60})"
        return Verdict(Outcome.EXEC_ERROR, False, safe, step_safe, reason, detail)
    reason = answers_match(query.answer_type, query.ground_truth["answer"], record)
    if reason is not None:
        detail["reason"] = reason
        return Verdict(Outcome.WRONG, False, safe, step_safe, reason, detail)
    return Verdict(Outcome.CORRECT, True, safe, step_safe, None, detail)
