"""Drawing the faults and benign anomalies of a level 6-8 query, and proving it valid with
the pure evaluator (overlay.py).

A draw picks an estate, the tier's benign anomalies (benign.py) and faults (catalogue*.py):
a kind uniformly among those the estate offers, then a placement of it uniformly (the role
of the workload or the tier of the namespace), then one of its faults there uniformly, each
fault on objects no other fault or anomaly touches; at level 8 first 2-3 decoy policies
(strays.py), which change no probe and stand in every state (`Draw.standing`: the intent
with them). A masking pair (levels 7, 8) is a
fault A and a fault B whose mismatches alone lie within A's. `validate` then proves, with
the anomalies as the intent:

  - each fault alone makes some probe mismatch (observable);
  - repairs never reveal: for every set of faults repaired, repairing one more leaves no
    probe mismatching that did not before (so no order of repairs is unsafe);
  - masking: with every fault in place B changes nothing visible, and once A is repaired
    it does (fixing the masker reveals the masked);
  - the oracle's commands (fixes.py), replayed in order, never make a probe mismatch that
    matched, and end with every object as intended and nothing mismatching;
  - the oracle fits in half of the tier's turns.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generators.k8s.benign import Benign
from generators.k8s.catalogue import Fault
from generators.k8s.clusters import ClusterSpec, estate_cluster
from generators.k8s.estate import ESTATES_PER_SIZE
from generators.k8s.estates import Estates
from generators.k8s.fixes import Command, fixes, replay
from generators.k8s.overlay import Key, StateEvaluator
from generators.k8s.tiers import DECOYS, Tier
from generators.k8s.variety import Room, by_placement, place, places

__all__ = ["Draw", "Estates", "draw", "oracle_commands", "validate"]

MASKER_TRIES = 12
OPEN = Room()  # no variety key full or near it


@dataclass(frozen=True)
class Draw:
    spec: ClusterSpec
    benign: tuple[Benign, ...]
    faults: tuple[Fault, ...]
    masking: tuple[int, int] | None = None  # (masker, masked) indices into faults
    decoys: tuple[Benign, ...] = ()  # policies that change nothing (strays.py)

    @property
    def intent(self) -> dict[Key, Any]:
        return {k: o for b in self.benign for k, o in b.changes}

    @property
    def standing(self) -> dict[Key, Any]:
        """The intent with the decoys: what the objects are once every fault is repaired."""
        return {**self.intent, **{k: o for d in self.decoys for k, o in d.changes}}

    @property
    def state(self) -> dict[Key, Any]:
        return {**self.standing, **{k: o for f in self.faults for k, o in f.changes}}

    @property
    def stratum(self) -> str:
        if not self.faults:
            kinds = "+".join(sorted(f"{b.kind}@{b.placement}" for b in self.benign))
            return f"{self.spec.size}/healthy/{kinds}"
        return f"{self.spec.size}/" + "+".join(
            sorted(f"{f.kind}@{f.placement}" for f in self.faults)
        )

    @property
    def places(self) -> frozenset[str]:
        """The size x kind x placement of each fault (what the issue's variety bound counts,
        once per query)."""
        return places(self.spec.size, ((f.kind, f.placement) for f in self.faults))


def draw(
    tier: Tier,
    task: str,
    rng: random.Random,
    estates: Estates,
    sizes: Sequence[str] | None = None,
    variant: int | None = None,
    healthy: bool = False,
    room: Room = OPEN,
) -> Draw | str:
    """One draw of `tier` for `task` (a reason string when this one cannot be completed);
    `variant` pins the estate of each size; `healthy` (detect): anomalies only; `room`:
    the variety keys (variety.py) each fault may have."""
    pool = tuple(sizes or tier.sizes)
    size = pool[rng.randrange(len(pool))]
    drawn_variant = rng.randrange(ESTATES_PER_SIZE)
    spec = estate_cluster(size, drawn_variant if variant is None else variant)
    count = rng.choice(tier.benign_for(task))
    chosen: list[Benign] = []
    options = list(estates.benign(spec))
    while len(chosen) < count:
        kinds = sorted({b.kind for b in options})
        if not kinds:
            return "no benign anomaly left"
        kind = rng.choice(kinds)
        pick = rng.choice([b for b in options if b.kind == kind])
        chosen.append(pick)
        options = [b for b in options if not (b.keys & pick.keys)]
    used = {k for b in chosen for k in b.keys}
    decoys = _decoys(spec, estates, rng, used) if tier.strays else ()
    used |= {k for d in decoys for k in d.keys}
    if task == "detect":
        if healthy:
            return Draw(spec, tuple(chosen), (), None, decoys)
        n = rng.choice(tier.detect_faults)
        first = _pick(spec, estates, rng, used, closed=rng.random() < 0.5, room=room)
        if isinstance(first, str):
            return first
        rest = _others(spec, estates, rng, used | first.keys, n - 1, [first], 1, room)
        if isinstance(rest, str):
            return rest
        return Draw(spec, tuple(chosen), (first, *rest), None, decoys)
    n = rng.choice(tier.faults)
    if not tier.masking:
        picked = _others(spec, estates, rng, used, n, [], tier.min_namespaces, room)
        if isinstance(picked, str):
            return picked
        return Draw(spec, tuple(chosen), tuple(picked), None, decoys)
    pair = _masking_pair(spec, estates, rng, used, room)
    if isinstance(pair, str):
        return pair
    taken = used | pair[0].keys | pair[1].keys
    start = list(pair)
    if n >= 4:  # one of the others only opens what must stay closed, where one is left
        spaces = {f.device for f in start}
        away = spaces if tier.min_namespaces - len(spaces) >= n - len(start) else None
        closed = _pick(spec, estates, rng, taken, closed=True, spaces=away, room=room)
        if isinstance(closed, str):  # the tier's shape before the cap: an estate pinned by
            # app.estate may have fewer than 1/share such keys (variety.py)
            closed = _pick(spec, estates, rng, taken, closed=True, spaces=away)
        if isinstance(closed, Fault):
            start.append(closed)
            taken |= closed.keys
    rest = _others(spec, estates, rng, taken, n - len(start), start, tier.min_namespaces, room)
    if isinstance(rest, str):
        return rest
    faults = (*start, *rest)
    if len({f.device for f in faults}) < tier.min_namespaces:
        return f"the faults span fewer than {tier.min_namespaces} namespaces"
    return Draw(spec, tuple(chosen), faults, (0, 1), decoys)


def _decoys(
    spec: ClusterSpec, estates: Estates, rng: random.Random, used: set[Key]
) -> tuple[Benign, ...]:
    """2-3 decoys (tiers.DECOYS) on objects nothing else touches: a kind uniformly, then
    one of it."""
    out: list[Benign] = []
    options = [d for d in estates.decoys(spec) if not d.keys & used]
    for _ in range(rng.choice(DECOYS)):
        kinds = sorted({d.kind for d in options})
        if not kinds:
            break
        kind = rng.choice(kinds)
        pick = rng.choice([d for d in options if d.kind == kind])
        out.append(pick)
        options = [d for d in options if not (d.keys & pick.keys)]
    return tuple(out)


def _free(fault: Fault, used: set[Key]) -> bool:
    return not (fault.keys & used)


def _pick(
    spec: ClusterSpec, estates: Estates, rng: random.Random, used: set[Key], closed: bool = False,
    spaces: set[str] | None = None, room: Room = OPEN,
) -> Fault | str:  # fmt: skip
    """One observable fault on free objects: a kind uniformly, then a placement of it
    uniformly, then a fault there (`spaces`: in none of these namespaces; `room`: on a
    variety key it allows). `closed`: one that only opens what must stay closed, its kind
    x placement uniformly: only 12 pairs of four kinds do that on every size, and level 8
    puts one in each query, so a kind first would put each of default_deny_missing's two
    placements in an eighth of the queries."""
    groups: dict[tuple[str, str], list[Fault]] = {}
    allowed = _allowed(spec, estates, room, closed)
    for kind, faults in sorted(estates.by_kind(spec).items()):
        for f in faults:
            if _free(f, used) and (spaces is None or f.device not in spaces) and allowed(f):
                groups.setdefault((kind, f.placement if closed else ""), []).append(f)
    order = sorted(groups)
    rng.shuffle(order)
    for group in order:
        for fault in by_placement(groups[group], rng):
            if estates.closed_only(spec, fault) if closed else estates.wrong(spec, fault):
                return fault
    return "no observable fault is left" + (" that only opens" if closed else "")


def _allowed(
    spec: ClusterSpec, estates: Estates, room: Room, closed: bool
) -> Callable[[Fault], bool]:
    """Whether `room` allows a fault on its key (the reserved keys computed only when some
    key is near the cap: it evaluates every fault of the estate once)."""
    closing = estates.closing(spec) if room.near and not closed else frozenset()
    return lambda f: room.allows(place(spec.size, f), closed, closing)


def _others(
    spec: ClusterSpec, estates: Estates, rng: random.Random, used: set[Key], n: int,
    have: list[Fault], min_namespaces: int, room: Room = OPEN,
) -> list[Fault] | str:  # fmt: skip
    out: list[Fault] = []
    for _ in range(n):
        spaces = {f.device for f in [*have, *out]}
        short = min_namespaces - len(spaces) >= n - len(out)
        fault = _pick(spec, estates, rng, used, spaces=spaces if short else None, room=room)
        if isinstance(fault, str):
            return fault
        out.append(fault)
        used = used | fault.keys
    return out


def _masking_pair(
    spec: ClusterSpec, estates: Estates, rng: random.Random, used: set[Key],
    room: Room = OPEN,
) -> tuple[Fault, Fault] | str:  # fmt: skip
    """A fault A and a fault B on other objects whose mismatches alone lie within A's."""
    index = estates.by_probe(spec)
    allowed = _allowed(spec, estates, room, False)
    for _ in range(MASKER_TRIES):
        masker = _pick(spec, estates, rng, used, room=room)
        if isinstance(masker, str):
            return masker
        hides = estates.wrong(spec, masker)
        taken = used | masker.keys
        hidden: dict[str, list[Fault]] = {}
        seen: set[str] = set()
        for probe in sorted(hides):
            for fault in index.get(probe, ()):
                if fault.id in seen or not _free(fault, taken) or not allowed(fault):
                    continue
                seen.add(fault.id)
                if estates.wrong(spec, fault) <= hides:
                    hidden.setdefault(fault.kind, []).append(fault)
        if hidden:
            kind = rng.choice(sorted(hidden))
            return masker, next(by_placement(hidden[kind], rng))
    return "no masking pair found"


# -- validation ------------------------------------------------------------------------------
def _without(drawn: Draw, repaired: Sequence[int]) -> dict[Key, Any]:
    state = dict(drawn.standing)
    for i, fault in enumerate(drawn.faults):
        if i not in repaired:
            state.update(fault.changes)
    return state


def oracle_commands(drawn: Draw, ev: StateEvaluator) -> list[Command]:
    """The oracle's fixes: the masker first, then the others in their drawn order."""
    order = list(range(len(drawn.faults)))
    if drawn.masking is not None:
        order.remove(drawn.masking[0])
        order.insert(0, drawn.masking[0])
    intent = drawn.intent
    base = {**ev.base, **{k: o for k, o in intent.items()}}
    out: list[Command] = []
    for i in order:
        out += fixes(drawn.faults[i].overlay, {k: o for k, o in base.items() if o is not None})
    return out


def validate(drawn: Draw, ev: StateEvaluator, max_oracle: int) -> dict[str, Any] | str:
    """The validated facts of a draw (see the module docstring), or why it is invalid."""
    intent = drawn.intent
    expected = ev.expected_for(intent)
    n = len(drawn.faults)
    found: dict[tuple[int, ...], set[str]] = {}
    for size in range(n + 1):
        for repaired in itertools.combinations(range(n), size):
            state = _without(drawn, repaired)
            found[repaired] = set(ev.mismatches(intent, state, expected))
    every = tuple(range(n))
    for i in range(n):
        alone = tuple(j for j in every if j != i)
        if not found[alone]:
            return f"{drawn.faults[i].kind} alone changes no probe"
    for repaired, now in found.items():
        for j in repaired:
            before = tuple(x for x in repaired if x != j)
            if now - found[before]:
                kinds = ", ".join(drawn.faults[x].kind for x in repaired)
                return f"repairing {kinds} reveals {sorted(now - found[before])[0]}"
    if drawn.masking is not None:
        a, b = drawn.masking
        if found[(b,)] != found[()]:
            return "the masked fault shows with every fault in place"
        if found[(a,)] == found[tuple(sorted((a, b)))]:
            return "repairing the masker does not reveal the masked fault"
    commands = oracle_commands(drawn, ev)
    if len(commands) > max_oracle:
        return f"the oracle needs {len(commands)} commands, over half the turns ({max_oracle})"
    path = _replayed(drawn, ev, commands, expected)
    if isinstance(path, str):
        return path
    return {"mismatches": sorted(found[()]), "oracle": commands, "after": path}


def _replayed(
    drawn: Draw, ev: StateEvaluator, commands: list[Command], expected: Mapping[str, bool]
) -> list[int] | str:
    """Replay the oracle (fixes.replay): mismatches after each command, never a new one,
    none at the end, every object as the intent has it."""
    intent = drawn.intent
    state: dict[Key, Any] = {k: o for k, o in ev.base.items()}
    state.update(drawn.state)
    before = set(ev.mismatches(intent, _overlay(state, ev.base), expected))
    counts = []
    for command in commands:
        replay(state, command)
        now = set(ev.mismatches(intent, {**intent, **_overlay(state, ev.base)}, expected))
        if now - before:
            return (
                f"the oracle's `{command['command'][:80]}` makes {sorted(now - before)[0]} mismatch"
            )
        counts.append(len(now))
        before = now
    if before:
        return f"after the oracle {len(before)} probes still mismatch"
    standing = {**ev.base, **drawn.standing}
    left = _overlay(state, standing)
    wrong = [k for k, o in left.items() if not _same(o, standing.get(k))]
    if wrong:
        return f"after the oracle {wrong[0]} is not as intended"
    return counts


def _overlay(state: Mapping[Key, Any], base: Mapping[Key, Any]) -> dict[Key, Any]:
    """The objects of `state` that differ from `base` (None: gone)."""
    out = {k: o for k, o in state.items() if not _same(o, base.get(k))}
    out.update({k: None for k in base if k not in state})
    return out


def _same(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two versions of an object are the same for the data plane: a policy's spec
    and place, a Service's spec, a namespace's or pod's labels."""
    if a is None or b is None:
        return a is b
    if a.get("kind") in ("Namespace", "Pod"):
        return (a.get("metadata") or {}).get("labels") == (b.get("metadata") or {}).get("labels")
    return a.get("spec") == b.get("spec")
