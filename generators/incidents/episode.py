"""Playing an incidents query: the environment's labs, the episode, its steps' evidence.

An episode runs on its lab restored to healthy (labs.py), with the query's benign
anomalies applied and its golden state read (session.py), then its faults injected and the
final window waited out: the first observation is the prompt and, for mitigate, the
checks failing (listed at level 6, counted at 7-8). Each reply is one command through the
agent's sandbox (generators/lab/step.py); detect and localize episodes get the read-only
sandbox, which refuses anything that may change the network as a `blocked` step. After a
command that may have changed something (it ran, and emulators/netcmd/readonly.py does
not find it only reads), the lab settles and is read again (`after_change`: a repaired
state, or one with a violation the step's start lacked, counts only once it lasted over
the final window, so a step breaks only what stays broken; a service daemon restarted by
svcctl settles over the final window first); until a read comes a final
window after the last change, later steps read again too (what a change sets off may
take a dead interval or a VRRP takeover to show), and so does the last turn.

Each step's evidence: the command's facts, the violations after it by class, the ones it
introduced (`broke`: unsafe when any), whether every check passes (`ok`), and up to
KEPT of the violations themselves; scoring.py judges from that alone. A mitigate episode
ends when every check passes; detect and localize end with the answer (pipeline/play.py
reads it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from emulators.netcmd import readonly
from generators.incidents.config import TIERS, IncidentsConfig
from generators.incidents.faults.kinds import Fault
from generators.incidents.labs import InjectionFailed, LabPool
from generators.incidents.prompt import status
from generators.incidents.session import (
    FINAL_WINDOW_S,
    Session,
    State,
    Unhealthy,
    step_window,
)
from generators.incidents.specs import spec_of
from generators.incidents.validate import totals
from generators.incidents.verdict import by_class
from generators.lab.diagnostics import diagnose
from generators.lab.reply import REPLY_FORMAT
from generators.lab.step import CommandStep, play_command
from pipeline.api import EnvironmentFailure, Query, StepResult, StepStatus

KEPT = 50  # violations kept in a step's evidence (all are counted)


class IncidentEpisode:
    """One query being played; see the module docstring."""

    def __init__(self, query: Query, session: Session, first: State, cfg: IncidentsConfig):
        self.query = query
        self.session = session
        self.tier = TIERS[query.level]
        self.max_turns = cfg.turns(query.level)
        self.read_budget = cfg.read_bytes(query.level)
        self.sandbox = session.lab.sandbox_for(query.read_only)
        self.totals = totals(session)
        self.state = first
        self.turn = 0
        self.settled = True  # the state was read a final window after the last change
        self.changed_at = time.monotonic()

    def observe(self) -> str:
        """The prompt (which shows what the checks read when the query was made) and the
        turn; a mitigate episode's status follows every step."""
        return f"{self.query.prompt}\n\nTurn 1 of {self.max_turns}."

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        """A read-only look (generators/lab/diagnostics.py): no step, no turn."""
        return diagnose(self.session.lab.sandbox_for(True), name, arguments)

    def _status(self) -> str:
        return status(self.state.violations, self.totals, self.tier.symptoms)

    def step(self, reply: str) -> StepResult:
        self.turn += 1
        last = self.turn >= self.max_turns
        before = self.state
        started = time.perf_counter()
        played = play_command(self.sandbox, reply)
        if played.result is None:
            text = f"{played.shown}\n\n{self._after(remind=True)}"
            evidence = self._evidence(before, parsed=False)
            return StepResult("", StepStatus.PARSE_ERROR, text, evidence, last, played.error)
        probe_s = 0.0
        tick = time.perf_counter()
        if self._may_change(played):
            assert played.result is not None
            self.state = self.session.after_change(step_window(played.result.argv), before)
            # after_change waited the final window when the state passed or broke more
            self.settled = self.state.ok or bool(self.state.violations - before.violations)
            self.changed_at = time.monotonic()
        elif not self.settled or (last and not self.state.ok):
            # A state read soon after a change may still move (an adjacency waiting for
            # its dead timer, a VRRP backup taking over): read again until one read comes
            # a final window after the change, and always before the last turn is judged.
            self.state = (
                self.session.after_change(before=before) if not last else self.session.final()
            )
            self.settled = time.monotonic() - self.changed_at >= FINAL_WINDOW_S or last
        probe_s = time.perf_counter() - tick
        evidence = self._evidence(
            before, **played.facts, reason=played.result.reason,
            cmd_s=round(played.result.exec_s, 4), probe_s=round(probe_s, 4),
        )  # fmt: skip
        done = (self.query.task == "mitigate" and self.state.ok) or last
        return StepResult(
            action=played.action,
            status=played.status,
            output=f"{played.shown}\n\n{self._after()}",
            evidence=evidence,
            done=done,
            error=played.error if played.status is not StepStatus.OK else None,
            exec_s=time.perf_counter() - started,
        )

    @staticmethod
    def _may_change(played: CommandStep) -> bool:
        if not played.changed_network or played.status is StepStatus.BLOCKED:
            return False
        assert played.result is not None
        return readonly.write_refusal(played.result.argv) is not None

    def _after(self, remind: bool = False) -> str:
        left = self.max_turns - self.turn
        head = f"Turn {self.turn + 1} of {self.max_turns} ({left} left)."
        if self.query.task == "mitigate":
            if self.state.ok:
                return f"{self._status()} The network is repaired."
            head += "\n" + self._status()
        return head + (f"\n{REPLY_FORMAT}" if remind else "")

    def _evidence(self, before: State, **facts: Any) -> dict[str, Any]:
        after = self.state.violations
        broke = sorted(after - before.violations)
        return {
            **facts,
            "ok": self.state.ok,
            "violations": by_class(after),
            "count": len(after),
            "broke": broke[:KEPT],
            "broke_count": len(broke),
            "kept": sorted(after)[:KEPT],
        }


class IncidentsEnvironment:
    """The app's Environment: one pool of live labs for one cell."""

    def __init__(self, cfg: IncidentsConfig) -> None:
        self.cfg = cfg
        self.pool = LabPool(cfg, cfg.max_live_labs)

    def __enter__(self) -> IncidentsEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.close()

    @contextmanager
    def episode(self, query: Query) -> Iterator[IncidentEpisode]:
        truth = query.ground_truth
        spec = spec_of(truth["lab"])
        benign = [Fault.from_json(f) for f in truth["benign"]]
        faults = [Fault.from_json(f) for f in truth["faults"]]
        with self.pool.use(spec) as lab:
            session = Session(lab, benign, faults)
            try:
                session.start()
                session.inject()
            except (Unhealthy, InjectionFailed) as err:
                raise EnvironmentFailure(
                    f"{query.query_id}: {type(err).__name__}: {err}; the query was valid "
                    "when generated, so this lab behaves differently"
                ) from err
            first = session.final()
            if faults and first.ok:
                raise EnvironmentFailure(
                    f"{query.query_id}: the injected faults violate no check; they did when "
                    "the query was generated, so this lab behaves differently"
                )
            yield IncidentEpisode(query, session, first, self.cfg)
