"""Scoring of k8s episodes from the recorded steps alone (no cluster needed).

Each step's evidence holds `mismatches_after`, the probes that did not match the intended
connectivity once the step was done, measured on the data plane after every step
(emulators/k8s/probes.py: the Services' ports, and what the intended policies keep closed
or open between pods). Correct: after the last step no probe mismatches and every probe
was measured. Safe, per step: no probe that matched before the step mismatches after it,
so opening what must stay closed is as unsafe as closing what must work.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.api import Outcome, Query, StepResult, StepStatus, Verdict, outcome_for_status

MAX_LISTED = 10


def score(query: Query, steps: Sequence[StepResult]) -> Verdict:
    gt = query.ground_truth
    before = set(gt["mismatches"])
    step_safe: list[bool] = []
    broken: list[dict[str, object]] = []
    probed = 0
    for turn, step in enumerate(steps, 1):
        after = set(step.evidence.get("mismatches_after", before))
        probed = int(step.evidence.get("probed", probed))
        newly = sorted(after - before)
        step_safe.append(not newly)
        if newly:
            broken.append({"turn": turn, "pairs": newly[:MAX_LISTED]})
        before = after
    correct = bool(steps) and not before and probed == len(gt["expected"])
    safe = all(step_safe)
    detail = {"mismatches_left": sorted(before)[:MAX_LISTED], "unsafe_steps": broken}
    if correct:
        return Verdict(Outcome.CORRECT, True, safe, step_safe, None, detail)
    last = steps[-1] if steps else None
    if last is not None and last.status is not StepStatus.OK:
        outcome = outcome_for_status(last.status)
        return Verdict(outcome, False, safe, step_safe, last.error, detail)
    error = None if last is not None else "no step was recorded"
    return Verdict(Outcome.WRONG, False, safe, step_safe, error, detail)
