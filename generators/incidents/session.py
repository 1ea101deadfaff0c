"""One query on one live lab: its intended state, its faults, and reading where it stands.

`Session(lab, benign, faults)` is shared by generation (validate.py) and play
(episode.py), so both judge alike. `start()` applies the benign anomalies to the healthy
lab, lets it settle and reads it: that reading is the query's golden state (verdict.py),
from which the large-packet pairs are chosen; then it reads again with every check in
place and requires the healthy network with its anomalies to meet the intent in full (a
lab that does not, or an anomaly that is not seen, is an invalid draw); the checks hold
the security policy's closed probes where the lab carries it (faults/security.py).
`inject()` applies the faults. `after_change()` is what follows a step that may have
changed something: the routing state settles (STEP_WINDOW_S quiet), and when every check
then passes, or a violation appeared that the state before the step lacked, it settles again over
FINAL_WINDOW_S (longer than the OSPF dead and BGP hold intervals) and is read again, so a
state counts as repaired, or as broken by the step, only if it lasts; `final()` waits the
long window first (the state after an injection, or the end of an episode).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from generators.incidents.checks import Checks
from generators.incidents.faults import security
from generators.incidents.faults.kinds import Fault
from generators.incidents.labs import LiveLab
from generators.incidents.reading import large_pairs, read
from generators.incidents.verdict import Golden, Intent, Observed, judge
from generators.netlab.frrconf import DEAD

STEP_WINDOW_S = 1.0
FINAL_WINDOW_S = DEAD + 0.5
# After a service daemon restarts (svcctl): longer than VRRP's master-down interval (3
# adverts of 1 s and a skew), in which no VIP moves yet; a restarted keepalived hands its
# groups to the backups and back, so a read one quiet second after it can fall in between.
SERVICE_WINDOW_S = FINAL_WINDOW_S


def step_window(argv: Sequence[str]) -> float:
    """The quiet window a step that ran `argv` waits for (play and validation alike)."""
    return SERVICE_WINDOW_S if tuple(argv[:1]) == ("svcctl",) else STEP_WINDOW_S


# Violations no agent-visible behaviour shows: a fault whose only violations are these
# (an extra route that carries nothing, a rule no packet meets) is not observable.
STRUCTURAL = ("intent:kernel:", "intent:rule:", "intent:filter:", "intent:link:",
              "intent:service:")  # fmt: skip


class Unhealthy(Exception):
    """The healthy lab with the query's benign anomalies does not meet its intent."""


@dataclass(frozen=True)
class State:
    observed: Observed
    violations: frozenset[str]

    @property
    def ok(self) -> bool:
        return not self.violations

    def behavioural(self) -> frozenset[str]:
        return frozenset(v for v in self.violations if not v.startswith(STRUCTURAL))


class Session:
    def __init__(self, lab: LiveLab, benign: Sequence[Fault], faults: Sequence[Fault]) -> None:
        self.lab = lab
        self.benign = tuple(benign)
        self.faults = tuple(faults)
        self.intent: Intent | None = None
        self.checks = Checks()

    def start(self) -> State:
        """The healthy state with the benign anomalies (see the module docstring)."""
        for anomaly in self.benign:
            for injection in anomaly.inject:
                self.lab.apply(injection)
        self.lab.settle(FINAL_WINDOW_S if self.benign else STEP_WINDOW_S)
        golden_read = read(self.lab, Checks())
        routers = [r.name for r in self.lab.spec.routers]
        self.intent = Intent(
            self.lab.spec,
            Golden.of(golden_read, routers),
            tuple(str(i) for i in range(len(self.benign))),
        )
        probes = large_pairs(self.intent, golden_read) + security.probes(self.lab.spec)
        probes += [p for f in (*self.benign, *self.faults) for p in f.probes]
        evidence = {str(i): b.evidence for i, b in enumerate(self.benign)}
        self.checks = Checks.of(probes, evidence, self.lab.dns())
        state = self.read()
        if not state.ok:
            shown = ", ".join(sorted(state.violations)[:5])
            raise Unhealthy(f"{len(state.violations)} violations: {shown}")
        return state

    def read(self) -> State:
        assert self.intent is not None, "start() first"
        seen = read(self.lab, self.checks)
        return State(seen, judge(self.intent, seen))

    def inject(self, faults: Sequence[Fault] | None = None) -> None:
        for fault in self.faults if faults is None else faults:
            for injection in fault.inject:
                self.lab.apply(injection)

    def after_change(self, window_s: float = STEP_WINDOW_S, before: State | None = None) -> State:
        """The state after a step; when it shows a violation `before` lacked, read again
        a final window later: a step breaks only what stays broken (a BGP session coming
        up, a daemon restarting, a loaded machine can fail probes for a moment)."""
        self.lab.settle(window_s)
        now = self.read()
        if now.ok or (before is not None and now.violations - before.violations):
            return self.final()
        return now

    def final(self) -> State:
        self.lab.settle(FINAL_WINDOW_S)
        return self.read()
