"""Validating a drawn query on a live lab: what makes it a fair, solvable query.

Kept from routing's FRR contract (generators/routing/frr/generator.py: validate) and
extended to the catalogue, on the lab restored to healthy:
  0. the healthy lab with the query's benign anomalies meets its intent in full, and each
     anomaly's evidence shows (session.py: start); a healthy detect query must also last
     over the final window, and is then valid;
  1. with several faults, each alone is observable (it violates a behavioural check: a
     flow, a probe, the protocol state, a path; not only configuration) after the final
     window, its evidence shows, and its own fix, sent through the agent's sandbox,
     brings the intent back in full;
  2. all together are observable after the final window (a null agent fails), and every
     fault's evidence shows (masked ones too: a localize answer must be able to name
     them; of a masked one, what it changed, at least one of its evidence: the symptoms
     the rest shows are what its masker hides), read through the read-only sandbox a
     diagnosis uses;
  3. levels 7-8, mitigate and localize: a ticket exists, and the query is composed (a
     detect query shows no ticket and asks no fix): a masking pair is proven (B
     alone shows nothing A alone does not, and after A's fix, with B still in, B's
     signature shows) or the ticket is a distant symptom (DISTANT hops from every cause);
  4. the oracle's fixes, maskers first, and a shielded fault before the one keeping traffic
     off it (an order trap), through the agent's sandbox: each runs cleanly,
     no step breaks a check that held before it, and the network ends meeting the intent
     over the final window;
  4b. each order trap drawn (faults/traps.py) is real: the shielded fault alone violates a
     check that held with every fault in (so fixing its steerer first breaks it), read
     from the single faults' states; a trap that is not rejects the draw.
  5. the oracle's episode (mitigate: its fixes; detect, localize: the evidence commands and
     the answer) fits in half of the turn and read budgets.
They run in the order 2, the ticket, 4, 1, 3, 4b, 5: a level 7-8 draw whose faults hold no
kind that masks another and whose ticket is near every cause cannot be composed, and is
rejected right after 2, before the oracle and the single faults (two final windows each),
the costly part of a draw; the masking pairs are then read from the states the oracle
left after each fault's fixes, against the single faults' signatures.
An InjectionFailed (the lab cannot hold the draw), an unhealthy start or an evidence
command the agent's sandbox stops (reading.EvidenceUnfit: output past the agent's cap or
its time limit, so the diagnosis would rest on output no agent can read) rejects the draw;
any other EnvironmentFailure is the environment's, and the same draw is validated again
(pipeline/querygen.py).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from emulators.netcmd.sandbox import CommandSandbox, Status
from generators.incidents import tickets
from generators.incidents.config import Tier
from generators.incidents.draw import Drawn
from generators.incidents.faults import kinds as catalogue
from generators.incidents.faults.kinds import Fault
from generators.incidents.faults.traps import shelters
from generators.incidents.labs import InjectionFailed, LabPool, LiveLab
from generators.incidents.prompt import shown, status
from generators.incidents.reading import EvidenceUnfit, matches
from generators.incidents.session import Session, State, Unhealthy, step_window
from generators.incidents.verdict import by_class
from pipeline.api import EnvironmentFailure

REPORTED = "Checks failing when this was reported:"
DISTANT = tickets.DISTANT


@dataclass
class Validated:
    faults: tuple[Fault, ...]  # in the oracle's fixing order
    oracle: list[dict[str, Any]]  # the oracle's replies
    symptoms: dict[str, int]  # violations of the faulty network, by class
    shown: str  # what the faulty network's checks show, as the tier's status words
    totals: dict[str, int]  # checks per class (flows per protocol, large pairs)
    ticket: tickets.Ticket | None
    masking: list[list[str]] = field(default_factory=list)  # [masker, masked] proven
    # order traps proven: {"steerer", "shielded", "breaks", "broken"} (the first checks
    # fixing the steerer first breaks, and how many); empty unless the tier draws traps
    traps: list[dict[str, Any]] = field(default_factory=list)
    oracle_bytes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def totals(session: Session) -> dict[str, int]:
    flows = session.lab.flows()
    out = {f"works:{p}:": sum(f.protocol == p for f in flows) for p in ("icmp", "tcp", "udp")}
    out["works:large:"] = len(session.checks.large)
    out["works:name:"] = len(session.checks.names)
    out["closed:"] = len(session.checks.closed)
    return out


def _fix(sandbox: CommandSandbox, machine: str, command: str) -> str | None:
    return _refusal(sandbox.run(machine, command), machine, command)


def _refusal(result: Any, machine: str, command: str) -> str | None:
    """Why an oracle command's result does not count (None: it ran cleanly)."""
    if result.status in (Status.TIMEOUT, Status.OUTPUT_LIMIT):
        raise EnvironmentFailure(f"oracle `{command}` on {machine} was stopped: {result.reason}")
    if result.status is not Status.OK:
        return f"oracle `{command}` on {machine}: {result.status}: {result.output.strip()[:200]}"
    return None


def _order(faults: tuple[Fault, ...]) -> tuple[Fault, ...]:
    """Maskers before the kinds they mask, a shielded fault before the one keeping traffic
    off it (an order trap: make before break), otherwise as drawn."""
    masks = {f.kind: set(catalogue.kind(f.kind).masks) for f in faults}
    out = list(faults)
    for f in faults:
        for g in faults:
            first = g.kind in masks[f.kind] or shelters(g, f)
            if first and out.index(g) < out.index(f):
                out.remove(f)
                out.insert(out.index(g), f)
    return tuple(out)


def validate(
    pool: LabPool, drawn: Drawn, tier: Tier, turns: int, read_bytes: int, rng: random.Random
) -> Validated | str:
    clock: dict[str, float] = {}
    started = time.perf_counter()
    lab = pool.get(drawn.spec)
    clock["lab_s"] = time.perf_counter() - started
    try:
        return _validate(lab, drawn, tier, turns, read_bytes, rng, clock)
    except InjectionFailed as err:
        return f"injection failed: {err}"
    except Unhealthy as err:
        return f"the lab with its benign anomalies does not meet its intent: {err}"
    except EvidenceUnfit as err:
        return f"evidence unfit: {err}"


def _validate(
    lab: LiveLab, drawn: Drawn, tier: Tier, turns: int, read_bytes: int,
    rng: random.Random, clock: dict[str, float],
) -> Validated | str:  # fmt: skip
    tick = time.perf_counter()
    session = Session(lab, drawn.benign, drawn.faults)
    session.start()
    clock["start_s"] = time.perf_counter() - tick
    every = totals(session)
    if drawn.healthy:
        end = session.final()
        if not end.ok:
            return f"the healthy network does not last: {sorted(end.violations)[:3]}"
        oracle = [{"answer": {"healthy": True}}]
        return Validated((), oracle, {}, "", every, None, seconds=clock)
    sandbox = lab.sandbox_for(False)
    tick = time.perf_counter()
    session.inject()
    together = session.final()
    if not together.behavioural():
        return f"the faults together violate no behavioural check: {_few(together)}"
    hidden = _masked(drawn.faults)
    for fault in drawn.faults:
        shows = [matches(lab, e) for e in fault.evidence]
        # a masked fault's symptoms are hidden by its masker (an MTU mismatch's ExStart
        # under an authentication mismatch on the same link: no neighbour at all); what
        # it changed still shows, and alone every piece of its evidence did (_singles)
        if not (any(shows) if fault.kind in hidden else all(shows)):
            return f"{fault.kind}: its evidence does not show with every fault in place"
    looks, looked_bytes = _evidence_replies(lab, drawn.faults)
    clock["together_s"] = time.perf_counter() - tick
    ticket = None
    composed = tier.composed and drawn.task != "detect"  # detect: no ticket, no fix asked
    if tier.ticket and drawn.task != "detect":
        causes = [f.cause.device for f in drawn.faults]
        ticket = tickets.choose(drawn.spec, together.violations, causes, rng)
        if ticket is None:
            return "no violation of the faulty network reads as a ticket"
    order = _order(drawn.faults)
    far = ticket.distance if ticket else 0
    near = far < DISTANT[drawn.spec.size]
    if composed and near and not _may_mask(order):
        # decided before the oracle and the single faults, the costly part of a draw
        return f"composition: no masking pair proven and the ticket is {far} hops from a cause"
    tick = time.perf_counter()
    replies, spent, fixed, end = _oracle(session, sandbox, order, together, tier, every)
    clock["oracle_s"] = time.perf_counter() - tick
    if isinstance(end, str):
        return end
    tick = time.perf_counter()
    signatures = {drawn.faults[0].kind: together.behavioural()}
    alone: dict[str, frozenset[str]] = {}
    if len(drawn.faults) > 1:
        singles = _singles(session, sandbox, drawn.faults, alone)
        if isinstance(singles, str):
            return singles
        signatures = singles
    clock["singles_s"] = time.perf_counter() - tick
    masking = _masking(order, fixed, signatures)
    if composed and not masking and near:
        why = _unproven(order, fixed, signatures)
        return (
            f"composition: no masking pair proven ({why}) and the ticket is {far} hops from a cause"
        )
    traps = _traps(order, together, alone)
    if isinstance(traps, str):
        return traps
    if drawn.task != "mitigate":
        answer: dict[str, Any] = {"healthy": False}
        if drawn.task == "localize":
            answer["causes"] = [f.cause.to_json() for f in order]
        replies, spent = [*looks, {"answer": answer}], looked_bytes
    if len(replies) > turns // 2:
        return f"the oracle needs {len(replies)} turns, over half of {turns}"
    if spent > read_bytes // 2:
        return f"the oracle reads {spent} bytes, over half of {read_bytes}"
    symptoms = by_class(together.violations)
    text = status(together.violations, every, tier.symptoms, REPORTED)
    return Validated(order, replies, symptoms, text, every, ticket, masking, traps, spent, clock)


def _few(state: State) -> str:
    return ", ".join(sorted(state.violations)[:4]) or "none"


def _evidence_replies(lab: LiveLab, faults: tuple[Fault, ...]) -> tuple[list[dict], int]:
    """The evidence commands as replies, and the bytes their steps show."""
    sandbox = lab.sandbox_for(True)
    replies, spent, seen = [], 0, set()
    for fault in faults:
        for e in fault.evidence:
            if (e.machine, e.command) in seen:
                continue
            seen.add((e.machine, e.command))
            result = sandbox.run(e.machine, e.command)
            replies.append({"machine": e.machine, "command": e.command})
            spent += len(shown(e.machine, e.command, result.output).encode())
    return replies, spent


def _singles(
    session: Session, sandbox: CommandSandbox, faults: tuple[Fault, ...],
    alone_seen: dict[str, frozenset[str]] | None = None,
) -> dict[str, frozenset[str]] | str:  # fmt: skip
    """Each fault alone, on the healthy lab: observable, its evidence shows, its own fix
    restores the intent in full; its signature (the behavioural checks it breaks), and
    into `alone_seen` every violation it alone shows (for `_traps`)."""
    signatures = {}
    for fault in faults:
        session.inject([fault])
        alone = session.final()
        if not alone.behavioural():
            return f"{fault.kind} alone violates no behavioural check: {_few(alone)}"
        if not all(matches(session.lab, e) for e in fault.evidence):
            return f"{fault.kind} alone: its evidence does not show it"
        signatures[fault.kind] = alone.behavioural()
        if alone_seen is not None:
            alone_seen[fault.kind] = alone.violations
        for machine, command in fault.fix:
            why = _fix(sandbox, machine, command)
            if why:
                return why
        after = session.final()
        if not after.ok:
            return f"{fault.kind}: its own fix leaves {_few(after)}"
    return signatures


def _masked(faults: tuple[Fault, ...]) -> frozenset[str]:
    """Kinds of `faults` that another of them masks on a shared element."""
    return frozenset(
        g.kind
        for f in faults
        for g in faults
        if g.kind in catalogue.kind(f.kind).masks and f.elements & g.elements
    )


def _may_mask(order: tuple[Fault, ...]) -> bool:
    """Whether a fault of `order` is of a kind that masks a later one's."""
    return any(
        later.kind in catalogue.kind(f.kind).masks
        for i, f in enumerate(order)
        for later in order[i + 1 :]
    )


def _masking(
    order: tuple[Fault, ...], fixed: list[frozenset[str]], signatures: Mapping[str, frozenset[str]]
) -> list[list[str]]:
    """[masker, masked] pairs proven: the masked kind alone shows nothing the masker alone
    does not, and once the masker was fixed (the violations `fixed[i]` after the oracle
    fixed order[i], the masked still in), some of its signature shows."""
    masking = []
    for i, fault in enumerate(order[: len(fixed)]):
        for later in order[i + 1 :]:
            mine, theirs = signatures.get(fault.kind, frozenset()), signatures.get(later.kind)
            if (
                later.kind in catalogue.kind(fault.kind).masks
                and theirs
                and theirs <= mine
                and theirs & fixed[i]
            ):
                masking.append([fault.kind, later.kind])
    return masking


def _traps(
    order: tuple[Fault, ...], together: State, alone: Mapping[str, frozenset[str]]
) -> list[dict[str, Any]] | str:
    """The order traps of `order`, proven, or why one is not. Fixing the steerer first
    leaves the shielded fault on its element without its shield: what `_singles` read with
    it alone (the other faults of the query in can break more there, rarely repair it):
    the trap is real when A alone violates a check that held with every fault in. Read
    from states validation already reads, so a trap costs no lab time; the live proof
    (trapproof.py) plays the wrong order itself and compares."""
    traps = []
    for steerer in order:
        for shielded in order:
            if not shelters(steerer, shielded):
                continue
            breaks = sorted(alone.get(shielded.kind, frozenset()) - together.violations)
            if not breaks:
                return (
                    f"order trap: fixing {steerer.kind} before {shielded.kind} breaks no "
                    "check that held"
                )
            traps.append(
                {"steerer": steerer.kind, "shielded": shielded.kind, "breaks": breaks[:8],
                 "broken": len(breaks)}
            )  # fmt: skip
    return traps


def _unproven(
    order: tuple[Fault, ...], fixed: list[frozenset[str]], signatures: Mapping[str, frozenset[str]]
) -> str:
    """Why the first candidate pair of `order` was not proven to mask (for the rejection)."""
    for i, fault in enumerate(order):
        for later in order[i + 1 :]:
            if later.kind not in catalogue.kind(fault.kind).masks:
                continue
            mine, theirs = (
                signatures.get(fault.kind, frozenset()),
                signatures.get(later.kind, frozenset()),
            )
            if not theirs <= mine:
                extra = sorted(theirs - mine)[:2]
                return f"{later.kind} alone shows {extra} that {fault.kind} does not"
            if i >= len(fixed):
                return f"the network met its intent before {later.kind} could show"
            return f"after {fault.kind}'s fix, {later.kind} shows none of {sorted(theirs)[:2]}"
    return "no kind masks another"


def _oracle(
    session: Session, sandbox: CommandSandbox, order: tuple[Fault, ...], together: State,
    tier: Tier, every: dict[str, int],
) -> tuple[list[dict], int, list[frozenset[str]], State | str]:  # fmt: skip
    """The oracle's fixes in `order`, judged as an episode judges steps; with the
    violations left after each fault's fixes (for `_masking`)."""
    before, replies, spent, fixed = together, [], 0, []
    for fault in order:
        for machine, command in fault.fix:
            result = sandbox.run(machine, command)
            why = _refusal(result, machine, command)
            if why:
                return replies, spent, fixed, why
            replies.append({"machine": machine, "command": command})
            after = session.after_change(step_window(result.argv), before)
            text = shown(machine, command, result.output) + "\n\n"
            spent += len((text + status(after.violations, every, tier.symptoms)).encode())
            broke = after.violations - before.violations
            if broke:
                return replies, spent, fixed, f"oracle `{command}` broke {sorted(broke)[:3]}"
            before = after
            if after.ok:
                return replies, spent, fixed, after
        fixed.append(before.violations)
    if not before.ok:
        before = session.final()  # what the last fix set off may take a while to show
    if not before.ok:
        return replies, spent, fixed, f"after every fix: {_few(before)}"
    return replies, spent, fixed, before
