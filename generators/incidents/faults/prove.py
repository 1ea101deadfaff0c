"""Live proof of fault kinds on a NetLab: inject, observe, evidence, fix, verified return.

`ProofLab(spec)` is a NetLab converged to its intended state, with the agent's command
sandbox (emulators/netcmd: the checks and jails every agent command passes) and a reading
of the healthy lab: each router's FRR running-config, each router's FIB (OSPF routes with
their next hops; BGP routes by prefix, since among equal paths BGP keeps the oldest, which
a reconvergence may change) and each device's kernel state less the routes FRR owns.
`prove(fault)` plays one drawn fault:

  1. inject, trusted: vtysh configuration lines through the router's own socket, or an
     argv in the device's namespace;
  2. observe: poll the symptoms (symptoms.py: flows, adjacencies, sessions, routes, path
     and ECMP intents) until they stay the same for QUIET_S, and no sooner than SETTLE_S
     after the injection (past the dead and hold intervals, so that a flap a `clear`
     causes is not taken for the fault, and a neighbour's dead timer has run out);
  3. evidence: each command through the agent's sandbox, read-only, its output matching
     its pattern (retried for EVIDENCE_S while the state settles);
  4. fix: the oracle's replies through the sandbox, each must run cleanly (no `%` error);
  5. return: the readings equal the healthy ones and no symptom is left, and still so
     HOLD_S later (past the dead interval: a flapping adjacency would show).

A benign anomaly is injected, must show no symptom through the same observation, its
evidence must match, and the lab is then restarted (it has no fix). Whenever a lab does not
come back (a fix that fails, a benign anomaly), `restart()` stops FRR, restores every
kernel to its snapshot, starts FRR on the healthy configuration and converges, so the next
kind starts from the intended state; a lab that does not come back even then is an
EnvironmentFailure.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from emulators.netcmd.sandbox import CommandSandbox, Status
from generators.incidents.faults.agentcheck import read_only
from generators.incidents.faults.frr import DEAD
from generators.incidents.faults.kinds import Fault, kind
from generators.incidents.faults.symptoms import Symptoms, observe_symptoms
from generators.netlab.live import NetLab, host_flows
from generators.netlab.spec import NetSpec
from pipeline.api import EnvironmentFailure

SETTLE_S = DEAD + 1.0
QUIET_S = 1.5
OBSERVE_MAX_S = 15.0
EVIDENCE_S = 8.0
RETURN_S = 40.0
HOLD_S = DEAD + 0.5
POLL_S = 0.3
FRR_PROTOCOLS = ("ospf", "bgp")


class InjectionFailed(EnvironmentFailure):
    """A trusted injection was refused: the kind's lines do not fit this lab."""


@dataclass
class Proof:
    """What one fault did on one lab (the bench's row, the tests' subject)."""

    kind: str
    lab: str
    benign: bool
    fault: dict[str, Any]
    observable: bool = False
    symptoms: dict[str, Any] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    fix: list[dict[str, Any]] = field(default_factory=list)
    restored: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    restarted: bool = False

    @property
    def evidence_ok(self) -> bool:
        return bool(self.evidence) and all(e["matched"] for e in self.evidence)

    @property
    def fix_ok(self) -> bool:
        return all(f["ok"] for f in self.fix)

    @property
    def ok(self) -> bool:
        """The kind's contract held: observable (a benign anomaly: not), fair, fixed."""
        if self.error is not None or not self.evidence_ok or not self.restored:
            return False
        return not self.observable if self.benign else self.observable and self.fix_ok

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "ok": self.ok}


def _errors(output: str) -> list[str]:
    """vtysh's refusals: it prints them as lines starting with `%`."""
    return [line for line in output.splitlines() if line.startswith("%")]


class ProofLab:
    """See the module docstring."""

    def __init__(self, spec: NetSpec, *, hold_s: float = HOLD_S) -> None:
        self.spec = spec
        self.hold_s = hold_s
        self.lab = NetLab(spec)
        self.flows = host_flows(spec)
        self.routers = [r.name for r in spec.routers]
        self.healthy: dict[str, Any] = {}
        self.timings: dict[str, float] = {}

    def __enter__(self) -> Self:
        started = time.perf_counter()
        self.lab.__enter__()
        try:
            self.lab.converge()
            lab = self.lab
            self.sandbox = CommandSandbox(
                lab.emu,
                [*self.routers, *(h.name for h in self.spec.hosts)],
                switches=[s.name for s in self.spec.switches],
                vty_dirs={r: str(lab.daemons[r].root(r)) for r in self.routers},
            )
            self.healthy = self.read()
        except BaseException:
            self.lab.close()
            raise
        self.timings["up_s"] = round(time.perf_counter() - started, 2)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.lab.close()

    # -- readings ----------------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        """Running-configs, FIBs and kernel state (less FRR's routes), per device."""
        configs: dict[str, str] = {}
        for group in {id(g): g for g in self.lab.daemons.values()}.values():
            configs.update(group.vtysh_all(group.routers, ["show running-config"]))
        outs = self.lab.emu._shell({r: "ip -j -4 route show" for r in self.routers})
        fibs = {r: _fib(out) for r, (_, out) in outs.items()}
        devices = list(self.spec.devices)
        kernel = {d: _without_frr(s) for d, s in self.lab.emu._dump(devices, {}).items()}
        return {"config": configs, "fib": fibs, "kernel": kernel}

    def differences(self, now: dict[str, Any]) -> list[str]:
        out = []
        for what, per in now.items():
            out += [f"{what} of {d}" for d in sorted(per) if per[d] != self.healthy[what].get(d)]
        return out

    def symptoms(self) -> Symptoms:
        return observe_symptoms(self.lab, self.flows)

    # -- one fault ---------------------------------------------------------------------
    def inject(self, fault: Fault) -> None:
        for inj in fault.inject:
            if inj.how == "vtysh":
                out = self.lab.vtysh(inj.device, ["configure terminal", *inj.lines])
                if _errors(out):
                    raise InjectionFailed(f"{fault.kind} on {inj.device}: {_errors(out)[:2]}")
            elif inj.how == "argv":
                done = self.lab.emu.run(inj.device, list(inj.lines), timeout_s=10.0)
                if done.exit_code != 0:
                    raise InjectionFailed(
                        f"{fault.kind}: {' '.join(inj.lines)} on {inj.device} exited "
                        f"{done.exit_code}: {done.output.strip()[:200]}"
                    )
            else:
                raise InjectionFailed(f"{fault.kind}: {inj.how} injections need the app")

    def observe(self) -> Symptoms:
        """The symptoms once they have settled (see the module docstring)."""
        started = time.monotonic()
        last, since = Symptoms(), started
        while time.monotonic() - started < OBSERVE_MAX_S:
            now = self.symptoms()
            if now.signature() != last.signature():
                last, since = now, time.monotonic()
            elif time.monotonic() - started >= SETTLE_S and time.monotonic() - since >= QUIET_S:
                return now
            time.sleep(POLL_S)
        return last

    def evidence(self, fault: Fault) -> list[dict[str, Any]]:
        deadline = time.monotonic() + EVIDENCE_S
        while True:
            rows = []
            for ev in fault.evidence:
                if not read_only(ev.command):
                    rows.append({"command": ev.command, "matched": False, "why": "not read-only"})
                    continue
                done = self.sandbox.run(ev.machine, ev.command)
                matched = done.status == Status.OK and re.search(ev.pattern, done.output)
                row = {"machine": ev.machine, "command": ev.command, "matched": bool(matched)}
                if not matched:
                    row["output"] = done.output[-600:]
                rows.append(row)
            if all(r["matched"] for r in rows) or time.monotonic() > deadline:
                return rows
            time.sleep(0.5)

    def fix(self, fault: Fault) -> list[dict[str, Any]]:
        rows = []
        for machine, command in fault.fix:
            done = self.sandbox.run(machine, command)
            ok = done.status == Status.OK and not _errors(done.output)
            row = {"machine": machine, "command": command, "ok": ok, "status": str(done.status)}
            if not ok:
                row["output"] = done.output[-400:]
            rows.append(row)
        return rows

    def await_healthy(self, timeout_s: float = RETURN_S) -> list[str]:
        """Wait for the healthy readings and no symptom; what still differs (empty: back)."""
        deadline = time.monotonic() + timeout_s
        while True:
            wrong = self.differences(self.read())
            if not wrong:
                left = self.symptoms()
                wrong = [f"symptom {c}" for c in left.classes()]
            if not wrong or time.monotonic() > deadline:
                return wrong
            time.sleep(POLL_S)

    def prove(self, fault: Fault) -> Proof:
        proof = Proof(fault.kind, self.spec.name, fault.benign, fault.to_json())
        clock = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            proof.seconds[name] = round(now - clock, 2)
            clock = now

        try:
            self.inject(fault)
            seen = self.observe()
            proof.observable, proof.symptoms = seen.any, seen.to_json()
            lap("observe_s")
            proof.evidence = self.evidence(fault)
            lap("evidence_s")
            if not fault.benign:
                proof.fix = self.fix(fault)
                wrong = self.await_healthy()
                lap("return_s")
                if not wrong and self.hold_s:
                    time.sleep(self.hold_s)
                    wrong = self.await_healthy(timeout_s=0)
                    lap("hold_s")
                proof.restored = not wrong
                if wrong:
                    proof.symptoms["left"] = wrong[:6]
        except InjectionFailed as err:
            proof.error = str(err)
        if fault.benign or not proof.restored:
            self.restart()
            proof.restarted = True
            proof.restored = fault.benign and proof.error is None
            lap("restart_s")
        proof.seconds["total_s"] = round(sum(proof.seconds.values()), 2)
        return proof

    def prove_pair(self, outer: Fault, inner: Fault) -> dict[str, Any]:
        """A masking pair (masking.py): both injected; the outer fixed, the network must
        still be broken and show the inner's evidence; the inner fixed, the lab back."""
        row: dict[str, Any] = {"outer": outer.kind, "inner": inner.kind, "lab": self.spec.name}
        started = time.perf_counter()
        try:
            self.inject(outer)
            self.inject(inner)
            row["both"] = self.observe().to_json()
            row["outer_fix"] = self.fix(outer)
            left = self.observe()
            row["after_outer"], row["still_broken"] = left.to_json(), left.any
            row["inner_evidence"] = self.evidence(inner)
            row["inner_fix"] = self.fix(inner)
            wrong = self.await_healthy()
            row["restored"], row["left"] = not wrong, wrong[:6]
        except InjectionFailed as err:
            row["error"], row["restored"] = str(err), False
        if not row["restored"]:
            self.restart()
        ok = row.get("still_broken") and all(e["matched"] for e in row.get("inner_evidence", []))
        row["ok"] = bool(ok and row["restored"])
        row["seconds"] = round(time.perf_counter() - started, 2)
        return row

    def restart(self) -> None:
        """FRR stopped, every kernel back to its snapshot, FRR started on the healthy
        configuration and converged; EnvironmentFailure if the readings differ after."""
        for group in {id(g): g for g in self.lab.daemons.values()}.values():
            group.stop()
        flush = "ip -4 route flush proto ospf; ip -4 route flush proto bgp; ip nexthop flush"
        self.lab.emu._shell({r: f"{flush} 2>/dev/null; true" for r in self.routers})
        self.lab.emu.reset()
        self.lab.daemons.clear()
        self.lab._start()  # NetLab's own start: the same configuration files, fresh folders
        self.lab.converge()
        wrong = self.await_healthy()
        if wrong:
            raise EnvironmentFailure(f"{self.spec.name} did not come back: {wrong[:5]}")


def _fib(out: str) -> frozenset[tuple]:
    try:
        routes = json.loads(out or "[]")
    except json.JSONDecodeError as err:
        raise EnvironmentFailure(f"reading a FIB: {err}: {out[:200]}") from err
    fib = set()
    for r in routes:
        protocol = r.get("protocol")
        if protocol not in FRR_PROTOCOLS:
            continue
        hops: tuple = ()
        if protocol == "ospf":
            nexthops = r.get("nexthops") or [r]
            hops = tuple(sorted((h.get("gateway", ""), h.get("dev", "")) for h in nexthops))
        fib.add((r.get("dst"), protocol, hops))
    return frozenset(fib)


def _without_frr(state: dict[str, Any]) -> dict[str, Any]:
    out = dict(state)
    out["route"] = [r for r in state["route"] if json.loads(r).get("protocol") not in FRR_PROTOCOLS]
    return out


def kinds_of(proofs: list[Proof]) -> dict[str, bool]:
    """kind -> whether every proof of it held (for reports)."""
    out: dict[str, bool] = {}
    for p in proofs:
        out[p.kind] = out.get(p.kind, True) and p.ok
    return {k: out[k] for k in sorted(out, key=lambda k: (kind(k).family, k))}
