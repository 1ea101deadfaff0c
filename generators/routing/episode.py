"""The play of a routing query, shared by levels 1-3 (kernel routing) and 4-5 (FRR).

An episode turns each reply into one sandboxed command (generators/lab/step.py) and keeps
the intended state as last probed: a step that may change the network is followed by a
new probe, and the step's evidence holds the state before and after it (ICMP rows as
`before` / `after`, the other protocols' under `traffic`, and where the protocol state is
judged too its gaps after the step under `intent`; generators/routing/scoring.py scores
them). Subclasses say how the state is probed after a change and how it is shown.
"""

from __future__ import annotations

import time
from typing import Any

from emulators.netcmd.sandbox import CommandSandbox
from generators.lab.diagnostics import diagnose
from generators.lab.reply import REPLY_FORMAT
from generators.lab.step import CommandStep, play_command
from generators.routing.checks import Connectivity
from pipeline.api import Query, StepResult, StepStatus


class ProbedEpisode:
    """One routing query being played; see the module docstring."""

    heading = "Reachability now"
    remind_after_parse_error = False  # repeat the reply format after an unparsed reply

    def __init__(
        self, query: Query, sandbox: CommandSandbox, first: Connectivity, max_turns: int
    ) -> None:
        self.query = query
        self.max_turns = max_turns
        self._sandbox = sandbox
        self._now = first
        self._turn = 0

    # -- what subclasses define ------------------------------------------------------
    def _probe_after(self, played: CommandStep) -> Connectivity | None:
        """The state after a command that ran, or None when it cannot have changed."""
        raise NotImplementedError

    def _render(self) -> str:
        return self._now.render()

    # -- the episode -----------------------------------------------------------------
    def observe(self) -> str:
        return (
            f"{self.query.prompt}\n\n{self.heading} (turn 1 of {self.max_turns}):\n{self._render()}"
        )

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        """A read-only look (generators/lab/diagnostics.py): no step, no turn."""
        return diagnose(self._sandbox, name, arguments)

    def step(self, reply: str) -> StepResult:
        self._turn += 1
        last = self._turn >= self.max_turns
        before = self._now
        started = time.perf_counter()
        played = play_command(self._sandbox, reply)
        if played.result is None:
            output = f"{played.shown}\n\n{self._status_text(self.remind_after_parse_error)}"
            evidence = self._evidence(before, parsed=False)
            return StepResult("", StepStatus.PARSE_ERROR, output, evidence, last, played.error)
        probe_started = time.perf_counter()
        now = self._probe_after(played)
        probe_s = 0.0
        if now is not None:
            self._now, probe_s = now, time.perf_counter() - probe_started
        evidence = self._evidence(
            before,
            **played.facts,
            reason=played.result.reason,
            cmd_s=round(played.result.exec_s, 4),
            probe_s=round(probe_s, 4),
        )
        return StepResult(
            action=played.action,
            status=played.status,
            output=f"{played.shown}\n\n{self._status_text()}",
            evidence=evidence,
            done=self._now.repaired or last,
            error=played.error if played.status is not StepStatus.OK else None,
            exec_s=time.perf_counter() - started,
        )

    def _evidence(self, before: Connectivity, **facts: Any) -> dict[str, Any]:
        after = self._now.evidence()
        traffic = {
            p: {"before": rows, "after": after[p]}
            for p, rows in before.evidence().items()
            if p != "icmp"
        }
        gaps = self._now.gaps
        return {
            **facts,
            "devices": list(before.icmp.devices),
            "before": before.icmp.rows(),
            "after": self._now.icmp.rows(),
            **({"traffic": traffic} if traffic else {}),
            **({"intent": [g.to_json() for g in gaps]} if gaps is not None else {}),
        }

    def _status_text(self, remind: bool = True) -> str:
        if self._now.repaired:
            return f"{self._render()}\nEverything checked works: the network is repaired."
        left = self.max_turns - self._turn
        return (
            f"{self.heading} (turn {self._turn + 1} of {self.max_turns}, {left} left):\n"
            f"{self._render()}" + (f"\n{REPLY_FORMAT}" if remind else "")
        )
