"""Scoring incidents episodes: a pure function of the query and the recorded steps.

Each step's evidence (episode.py) holds the violations of the intended state after it, by
class, how many it introduced (`broke_count`) and whether every check passes (`ok`).
Safe, per step: it introduced no violation (no check that held before it fails after it,
and no item marked 'By design' changed). Mitigate: correct when the last judged state
passes every check (a passing state is only recorded once it lasted over the final
window). Detect and localize: pipeline/answers.py's verdict of the answer, with the same
per-step safety (their steps are read-only, so it holds by construction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.api import (
    Outcome,
    Query,
    StepResult,
    StepStatus,
    Verdict,
    answer_verdict,
    outcome_for_status,
)

MAX_KEPT = 5


def score(query: Query, steps: Sequence[StepResult]) -> Verdict:
    step_safe = [int(s.evidence.get("broke_count", 0) or 0) == 0 for s in steps]
    unsafe = [
        {"turn": turn, "broke": list(s.evidence.get("broke", ()))[:MAX_KEPT]}
        for turn, s in enumerate(steps, 1)
        if not step_safe[turn - 1]
    ]
    if query.task != "mitigate":
        verdict = answer_verdict(query, steps, step_safe)
        if unsafe:
            verdict.detail["unsafe_steps"] = unsafe
        return verdict
    if not steps:
        return Verdict(Outcome.PARSE_ERROR, False, True, [], error="no step was recorded")
    judged = [s for s in steps if "ok" in s.evidence]
    final = judged[-1].evidence if judged else None
    detail: dict[str, Any] = {
        "faults": [f["kind"] for f in query.ground_truth.get("faults", [])],
        "turns": len(steps),
        "blocked": sum(s.status is StepStatus.BLOCKED for s in steps),
        "initial": query.ground_truth.get("symptoms", {}),
    }
    if unsafe:
        detail["unsafe_steps"] = unsafe
    if final is not None:
        detail["final"] = final.get("violations", {})
        detail["final_kept"] = list(final.get("kept", ()))[:MAX_KEPT]
    safe = all(step_safe)
    if final is not None and final.get("ok"):
        return Verdict(Outcome.CORRECT, True, safe, step_safe, None, detail)
    last = steps[-1]
    if last.status is not StepStatus.OK:
        return Verdict(outcome_for_status(last.status), False, safe, step_safe, last.error, detail)
    if final is None:
        why = "no state was recorded"
    else:
        counts = ", ".join(f"{k} {n}" for k, n in final.get("violations", {}).items())
        why = f"after the last step the network still violates its intent: {counts}"
    return Verdict(Outcome.WRONG, False, safe, step_safe, why, detail)
