"""One fuzz run of an app: its doors first, then its live episodes with their replies too.

`fuzz_app(target, replies, door_turns, seed, env)` plays `door_turns` turns through each
agent door (pipeline/fuzz/doors.py) for the app's reply format, then `replies` mutated
replies and every reply the doors let through in the app's live environment
(pipeline/fuzz/harness.py). `figures(results)` is what `python -m pipeline.bench --only
fuzz` stores (generators/benches/fuzz.py, where the apps' targets are): replies tried per
app and door, statuses, and each finding with its reproducer. CI runs the same on a fixed
seeded budget (tests/test_fuzz.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.core import Environment
from pipeline.fuzz import doors, protocol_doors
from pipeline.fuzz.harness import Finding, Tally, Target, fuzz_target

DOORS = ("text", "json", "tools", "mcp", "a2a")


@dataclass
class AppRun:
    target: str
    tally: Tally
    doors: list[doors.DoorTally] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        """Every distinct finding, of the doors and of the episodes."""
        seen: dict[str, Finding] = {}
        for finding in [f for d in self.doors for f in d.findings] + self.tally.findings:
            seen.setdefault(finding.signature, finding)
        return list(seen.values())


def door_tally(target: Target, door: str, turns: int, seed: str) -> doors.DoorTally:
    """`turns` turns through the door `door` (text, json, tools, mcp, a2a)."""
    if door in ("text", "json", "tools"):
        return doors.llm_door(target, door, turns, seed)
    if door == "mcp":
        return protocol_doors.mcp_door(target, turns, seed)
    return protocol_doors.a2a_door(target, turns, seed)


def fuzz_app(
    target: Target,
    replies: int,
    door_turns: int,
    seed: str = "0",
    env: Environment | None = None,
    door_replies: int = 40,
    progress: Callable[[str], None] | None = None,
) -> AppRun:
    """See the module docstring; at most `door_replies` of each door's replies are played
    in the live episodes (the rest went through the app's parser only, in the door)."""
    run = AppRun(target.name, Tally(target.name))
    extra: list[str] = []
    for door in DOORS if door_turns else ():
        tally = door_tally(target, door, door_turns, seed)
        run.doors.append(tally)
        extra += tally.replies.get(target.name, [])[:door_replies]
        if progress is not None:
            progress(f"{target.name} {door}: {tally.tried} turns, {dict(tally.outcomes)}")
    run.tally = fuzz_target(target, replies, seed, env, extra)
    if progress is not None:
        progress(f"{target.name}: {run.tally.tried} replies, {dict(run.tally.statuses)}")
    return run


def describe(finding: Finding) -> dict[str, Any]:
    return {
        "target": finding.target,
        "where": finding.where,
        "kind": finding.kind,
        "message": finding.message,
        "reply": finding.reply[:500],
        "reply_chars": finding.length,
        "trace": finding.trace,
    }


def figures(runs: Sequence[AppRun], seconds: float) -> dict[str, Any]:
    """The bench record: per app and door, replies tried, statuses and findings."""
    out: dict[str, Any] = {"seconds": round(seconds, 1)}
    for run in runs:
        out[f"{run.target}_replies_tried"] = run.tally.tried
        out[f"{run.target}_statuses"] = dict(run.tally.statuses)
        out[f"{run.target}_seconds"] = round(run.tally.seconds, 1)
        for door in run.doors:
            out[f"{run.target}_{door.door}_turns"] = door.tried
            out[f"{run.target}_{door.door}_outcomes"] = dict(door.outcomes)
        out[f"{run.target}_crashes"] = len(run.findings)
    out["crashes"] = [describe(f) for run in runs for f in run.findings]
    out["crashes_found"] = len(out["crashes"])
    return out
