"""The live proof of a fault kind on a running IncidentLab: observable, evidenced, fixable.

`Prover(lab)` records the healthy lab (probes.observe, and a fingerprint of every
device's kernel configuration: links, addresses, rules, routes the protocols do not own,
permanent neighbours, iptables, forwarding; and every service's configuration). Then
`prove(fault)`, one fault after another on the same lab:
  1. inject it (trusted: argv in the device's namespace, svcctl edits, vtysh lines);
  2. wait until some probe class differs from the healthy lab (the fault is observable);
  3. run its evidence through the agent's sandbox in read-only mode: each command must
     be allowed and its output must match the pattern;
  4. run the oracle's fix through the agent's sandbox (read-write), each command OK;
  5. wait until every probe class is as healthy again, then the fingerprint and the
     services' configurations must equal the healthy ones (a verified return).
A step that fails ends the proof with its reason; `recover()` then brings the lab back
(services restarted from their healthy configurations, the kernel from the fingerprint's
differences is not guessed: a lab that cannot be recovered is reported, not reused).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from emulators.netcmd.sandbox import CommandSandbox, Status
from emulators.netcmd.servicegate import ServiceGate
from generators.incidents.faults.kinds import Fault
from generators.incidents.lab import IncidentLab
from generators.incidents.probes import Observation, observe

OBSERVE_S = 20.0  # how long an injected fault may take to show
RESTORE_S = 30.0  # how long the lab may take to be healthy again after the fix
POLL_S = 0.3
FINGERPRINT_TRIES = 5
SETTLE_S = 4.5  # keepalived's master-down interval at advert_int 1, with its skew
FINGERPRINT = (
    "ip -o link show 2>/dev/null "
    "| sed -E 's/ state [A-Z]+ / /; s/NO-CARRIER,|,LOWER_UP|,M-DOWN//g'; "
    "ip -o -4 addr show; ip -4 rule show; "
    "ip -4 route show table all | grep -Ev 'proto (ospf|bgp)|^[[:space:]]' | sed 's/ linkdown//'; "
    "ip neigh show nud permanent; iptables-save | grep -v '^#' | sed -E 's/\\[[0-9]+:[0-9]+\\]//'; "
    "cat /proc/sys/net/ipv4/ip_forward; echo @@end"
)


@dataclass
class Proof:
    kind: str
    summary: str
    observed: list[str] = field(default_factory=list)  # what differed after the injection
    evidence: list[str] = field(default_factory=list)  # per command: "ok" or why not
    fixes: list[str] = field(default_factory=list)  # per fix command: its status
    error: str | None = None  # the first step that failed
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict:
        return {"kind": self.kind, "ok": self.ok, "error": self.error,
                "observed": self.observed[:5], "evidence": self.evidence, "fixes": self.fixes,
                "timings": {k: round(v, 2) for k, v in self.timings.items()}}  # fmt: skip


def wait_for(check: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)


class Prover:
    """See the module docstring."""

    def __init__(self, lab: IncidentLab, *, timeout_s: float = 8.0) -> None:
        self.lab = lab
        machines = lab.spec.devices
        vty = {r: str(g.root(r)) for r, g in lab.daemons.items()}
        self.rw = ServiceGate(
            CommandSandbox(lab.emu, machines, vty_dirs=vty, timeout_s=timeout_s), lab.services
        )
        self.ro = ServiceGate(
            CommandSandbox(lab.emu, machines, vty_dirs=vty, timeout_s=timeout_s, read_only=True),
            lab.services,
        )
        self.healthy = observe(lab)
        self.fingerprint = self._fingerprint()
        self.last: Observation = self.healthy

    def _fingerprint(self) -> dict[str, str]:
        """Every device's configuration text (carrier flags left out: they are state, not
        configuration; `ip link` says on stderr, for every veth, that it cannot name the
        namespace of its peer: not read). A reading cut short (no end mark) is read
        again; iptables tables holding nothing (an empty filter table
        appears with the first rule added and stays after the last is deleted) are left
        out."""
        devices = [d.name for d in self.lab.emu.lab.devices]
        out: dict[str, str] = {}
        for _ in range(FINGERPRINT_TRIES):
            todo = [d for d in devices if d not in out]
            if not todo:
                break
            for device, (_, text) in self.lab.emu._shell(dict.fromkeys(todo, FINGERPRINT)).items():
                if text.rstrip().endswith("@@end"):
                    out[device] = _without_empty_tables(text)
        return out

    def differences(self) -> list[str]:
        self.last = observe(self.lab)
        return self.last.differences(self.healthy)

    def inject(self, fault: Fault) -> None:
        for step in fault.inject:
            if step.how == "argv":
                result = self.lab.emu.run(step.device, step.lines, timeout_s=10)
                if result.exit_code != 0:
                    raise RuntimeError(f"injection {step.lines} on {step.device}: {result.output}")
            elif step.how == "service":
                self.lab.services.set_trusted(step.device, step.lines)
            else:
                self.lab.vtysh(step.device, ["configure terminal", *step.lines])

    def prove(self, fault: Fault) -> Proof:
        proof = Proof(fault.kind, fault.summary)
        started = time.perf_counter()
        self.inject(fault)
        proof.timings["inject_s"] = time.perf_counter() - started
        if not wait_for(lambda: bool(self.differences()), OBSERVE_S):
            proof.error = "not observable: every probe class is as in the healthy lab"
            return proof
        # What shows first may pass (a restarted daemon's VIP is nowhere for a moment):
        # the evidence is read once two observations in a row agree.
        # VRRP elects a new master only after its master-down interval (3 adverts + skew):
        # where VRRP runs or a daemon restarted, what shows is read after it.
        if self.lab.gateways or any(i.how == "service" for i in fault.inject):
            time.sleep(max(0.0, SETTLE_S - (time.perf_counter() - started)))
            self.differences()
        seen = [self.last.differences(self.healthy)]
        wait_for(lambda: seen.append(self.differences()) or seen[-1] == seen[-2], OBSERVE_S)
        proof.observed = seen[-1]
        if not proof.observed:
            proof.error = "not observable: the lab went back to healthy by itself"
            return proof
        proof.timings["observed_s"] = time.perf_counter() - started
        for ev in fault.evidence:
            result = self.ro.run(ev.machine, ev.command)
            found = re.search(ev.pattern, result.output)
            ok = result.status in (Status.OK, Status.FAILED) and found is not None
            proof.evidence.append("ok" if ok else f"{result.status}: {result.output[-300:]!r}")
            if not ok and proof.error is None:
                proof.error = f"evidence {ev.command!r} on {ev.machine} did not show the fault"
        for machine, command in fault.fix:
            result = self.rw.run(machine, command)
            proof.fixes.append(str(result.status))
            if result.status is not Status.OK and proof.error is None:
                proof.error = f"fix {command!r} on {machine}: {result.output[-300:]}"
        started = time.perf_counter()
        healthy = wait_for(lambda: not self.differences(), RESTORE_S)
        proof.timings["restored_s"] = time.perf_counter() - started
        if not healthy and proof.error is None:
            proof.error = f"not healthy after the fix: {self.last.differences(self.healthy)[:3]}"
        drift = self.drift()
        if drift and proof.error is None:
            proof.error = f"state differs from the healthy lab after the fix: {drift[:3]}"
        return proof

    def prove_benign(self, fault: Fault) -> Proof:
        """A benign anomaly: injected, it changes no probe; its evidence shows it through
        the read-only sandbox; then it is taken out again (trusted: it has no fix)."""
        proof = Proof(fault.kind, fault.summary)
        self.inject(fault)
        differences = [self.differences(), self.differences()]
        proof.observed = differences[0] or differences[1]
        if proof.observed:
            proof.error = f"a benign anomaly changed what the probes see: {proof.observed[:3]}"
        for ev in fault.evidence:
            result = self.ro.run(ev.machine, ev.command)
            ok = result.status is Status.OK and re.search(ev.pattern, result.output) is not None
            proof.evidence.append("ok" if ok else f"{result.status}: {result.output[-300:]!r}")
            if not ok and proof.error is None:
                proof.error = f"evidence {ev.command!r} on {ev.machine} did not show it"
        for step in reversed(fault.inject):
            argv = _undo(step.lines)
            self.lab.emu.run(step.device, argv, timeout_s=10)
        drift = self.drift()
        if drift and proof.error is None:
            proof.error = f"state differs from the healthy lab after taking it out: {drift[:3]}"
        return proof

    def drift(self) -> list[str]:
        """What differs from the healthy lab's configuration (kernel and services)."""
        now = self._fingerprint()
        out = []
        for device, text in now.items():
            want = self.fingerprint.get(device, "")
            if text != want:
                extra = sorted(set(text.splitlines()) ^ set(want.splitlines()))
                out.append(f"{device}: {extra[:2]}")
        services = self.lab.services
        for key, daemon in services.daemons.items() if services else ():
            if daemon.config.canonical() != self.lab.healthy[key].canonical():
                out.append(f"{key[0]} {key[1]} configuration")
        return out

    def recover(self) -> bool:
        """After a failed proof: services back to healthy; True when nothing drifts."""
        self.lab.restore_services()
        wait_for(lambda: not self.differences(), RESTORE_S)
        return not self.drift()


def _without_empty_tables(text: str) -> str:
    out, table = [], []
    for line in text.splitlines():
        if line.startswith("*"):
            table = [line]
        elif table:
            table.append(line)
            if line == "COMMIT":
                rules = [x for x in table if x.startswith("-A") or (x.startswith(":") and
                         x.split()[1:2] != ["ACCEPT"])]  # fmt: skip
                if rules or table[0] == "*nat":
                    out += table
                table = []
        else:
            out.append(line)
    return "\n".join(out)


def _undo(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The argv that takes out what a benign injection added (`ip route add`, `iptables
    -A`): the same words with the verb turned."""
    words = list(argv)
    if words[:3] == ["ip", "route", "add"]:
        words[2] = "del"
    elif words[:2] == ["iptables", "-A"]:
        words[1] = "-D"
    else:
        raise ValueError(f"no undo known for {argv}")
    return tuple(words)
