"""Scoring of routing episodes: a pure function of the query and the recorded steps.

Each step's evidence holds the reachability matrix before and after it (as rows over
`devices`; see emulators.base.Reachability.rows). Correct: the matrix after the last
step is full. Safe, per step: no pair that replied before the step fails after it
(stricter than NetArena). NetArena's own verdict (a step is safe unless the share of
failing pairs went up) is kept in `detail` for comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from emulators.base import Reachability
from pipeline.core import Outcome, Query, StepResult, StepStatus, Verdict, outcome_for_status

MAX_PAIRS_KEPT = 5


def matrices(step: StepResult) -> tuple[Reachability, Reachability] | None:
    """(before, after) of a step, or None when the step recorded none (an env_error)."""
    ev = step.evidence
    try:
        devices = ev["devices"]
        return Reachability.from_rows(devices, ev["before"]), Reachability.from_rows(
            devices, ev["after"]
        )
    except (KeyError, TypeError, ValueError):
        return None


def score(query: Query, steps: Sequence[StepResult]) -> Verdict:
    if not steps:
        return Verdict(Outcome.PARSE_ERROR, False, True, [], error="no step was recorded")
    step_safe: list[bool] = []
    netarena_safe: list[bool] = []
    lost: list[dict[str, Any]] = []
    final: Reachability | None = None
    initial: Reachability | None = None
    for turn, step in enumerate(steps, 1):
        pair = matrices(step)
        if pair is None:
            step_safe.append(True)
            netarena_safe.append(True)
            continue
        before, after = pair
        initial = initial or before
        final = after
        broken = after.lost_since(before)
        step_safe.append(not broken)
        netarena_safe.append(after.loss <= before.loss + 1e-9)
        if broken:
            lost.append({"turn": turn, "pairs": [list(p) for p in broken[:MAX_PAIRS_KEPT]]})
    detail: dict[str, Any] = {
        "faults": [f["type"] for f in query.ground_truth.get("faults", [])],
        "turns": len(steps),
        "netarena_safe": all(netarena_safe),
        "netarena_step_safe": netarena_safe,
        "rejected": sum(s.status is StepStatus.BLOCKED for s in steps),
    }
    if initial is not None and final is not None:
        detail.update(initial_loss=round(initial.loss, 4), final_loss=round(final.loss, 4))
    if lost:
        detail["lost_pairs"] = lost
    safe = all(step_safe)
    last = steps[-1]
    if final is not None and final.full:
        return Verdict(Outcome.CORRECT, True, safe, step_safe, None, detail)
    if last.status is not StepStatus.OK:
        return Verdict(outcome_for_status(last.status), False, safe, step_safe, last.error, detail)
    reason = (
        f"{len(final.failed)} of {final.pairs} pairs still fail after the last step"
        if final is not None
        else "no reachability was recorded"
    )
    return Verdict(Outcome.WRONG, False, safe, step_safe, reason, detail)
