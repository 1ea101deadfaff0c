"""The pure draw of one query: its lab's faults and benign anomalies from the catalogue.

`draw(spec, tier, task, allowed, rng, weights, healthy)` takes, from the query's own
stream, the tier's number of benign anomalies (drawn first, so no fault lands on one), then,
unless the query is a healthy detect query (`healthy`, decided per index before any draw by
pipeline.api.healthy_query: half of them, whatever validation rejects), the tier's number
of faults:
  - kinds uniformly among those the config allows that declare the lab's family (with
    failure-driven `weights` per kind id), each kind at most once per query; a kind's
    own `draw` picks its place and returns None where the lab offers none (another kind
    is tried);
  - at levels with a composition requirement, first a masking pair when the allowed
    kinds hold one: a kind that declares `masks`, then one of the kinds it masks, drawn
    after it on the masker's element at its other end (faults/masking.py); half
    the time, and always on a lab where no ticket can be a distant symptom (leaf-spine,
    medium campus: `tickets.may_be_distant`), where a draw without one is refused before
    any lab work (it could never be composed); a tier asking for at least one pair
    (`pairs`, level 8) always draws one, and up to its maximum further pairs of other
    kinds while the query's count leaves room for them and the intent-only faults owed;
  - where the tier asks for order traps (`traps`, 0 at every level for now, so no draw
    changes), a kind that declares `shields`, then one it shields, drawn on its element
    (faults/traps.py: fixing the first one first moves traffic onto the second's element);
  - at level 8, at least one intent-only kind (it loses no flow: the verdict's intent or
    closed checks see it);
  - a detect query draws the tier's `detect_faults` instead, never composed (it shows no
    ticket and asks no fix), and at level 8 only intent-only kinds (`detect_silent`):
    several flow-losing faults are one ping away, and "does the network meet its intent"
    is then only a question about pings; below that, intent-only kinds weigh twice.
Nothing here touches a lab: whether the draw does what it claims is validate.py's proof.

The key is what the agent must find: the task (when not mitigate), the lab, and each
fault and benign anomaly by kind, cause and the elements it touches (not by the free
numbers its injection chose: a hello interval of 7 s and one of 9 s are one query).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from generators.incidents import tickets
from generators.incidents.config import Tier
from generators.incidents.faults import kinds as catalogue
from generators.incidents.faults.kinds import Fault, FaultKind, Taken
from generators.incidents.faults.masking import draw_masked
from generators.incidents.faults.traps import draw_trap
from generators.incidents.variety import stratum
from generators.netlab.spec import NetSpec
from pipeline.api import query_key, weighted_choice

KIND_TRIES = 40  # kind draws per query before the draw gives up
PAIR_TRIES = 8  # pairs tried where a tier always asks for one


@dataclass(frozen=True)
class Drawn:
    spec: NetSpec
    faults: tuple[Fault, ...]
    benign: tuple[Fault, ...]
    task: str

    @property
    def healthy(self) -> bool:
        return not self.faults

    @property
    def stratum(self) -> str:
        return stratum(
            self.spec.family, self.spec.size, [(f.kind, f.placement) for f in self.faults]
        )

    @property
    def operation(self) -> str:
        return "+".join(sorted(f.kind for f in self.faults)) or "healthy"

    @property
    def key(self) -> str:
        asked = [self.task] if self.task != "mitigate" else []
        return query_key(
            *asked,
            self.spec.name,
            sorted(_identity(f) for f in self.faults),
            sorted(_identity(f) for f in self.benign),
        )


def _identity(fault: Fault) -> list:
    return [fault.kind, fault.cause.to_json(), sorted(fault.elements)]


def intent_only(kind: FaultKind) -> bool:
    """A kind that loses no flow: only the intent or closed checks see it."""
    return "works" not in kind.checks


def fault_kinds(spec: NetSpec, allowed: frozenset[str] | None) -> list[FaultKind]:
    return fault_kinds_of(spec.family, allowed, spec.size)


def tier_families(
    tier: Tier,
    families: tuple[str, ...],
    allowed: frozenset[str] | None,
    sizes: tuple[str, ...] | None = None,
) -> tuple[str, ...]:
    """The lab families a tier draws on: at a tier that asks for intent-only faults (L8),
    only families where an allowed kind loses no flow (on chain and ISP labs only the
    security policy's kinds do: every OSPF or BGP fault there costs a flow, no path or
    VRRP intent can move; `app.faults` without them leaves those families out); at one
    that asks for at least one order trap, only families where an allowed kind shields
    another (ring and mesh today); all of `families` when none has one, so the draw says
    why it fails. `sizes`: the lab sizes
    drawn (the tier's, or `app.size`): small chain labs hold no policy, hence no such kind."""
    if tier.intent_only == 0 and tier.traps[0] == 0:
        return families
    kept = tuple(
        f
        for f in families
        if (
            tier.intent_only == 0
            or any(
                intent_only(k)
                for size in sizes or (None,)
                for k in fault_kinds_of(f, allowed, size)
            )
        )
        and (tier.traps[0] == 0 or _steers(f, allowed))
    )
    return kept or families


def _steers(family: str, allowed: frozenset[str] | None) -> bool:
    """Whether an allowed kind drawn on `family` shields another allowed one there (an
    order trap can be drawn; faults/traps.py)."""
    ids = {k.id for k in fault_kinds_of(family, allowed)}
    return any(set(catalogue.kind(i).shields) & ids for i in ids)


def holds_trap(spec: NetSpec, allowed: frozenset[str] | None) -> bool:
    """Whether an allowed steerer and a kind it shields find a place together on the lab
    (a ring variant without path intents holds no stub-router place)."""
    rng = random.Random(f"incidents-trap:{spec.name}")
    return bool(_trap_pair(spec, fault_kinds(spec, allowed), Taken(), rng, 2, 4))


def holds_intent_only(spec: NetSpec, allowed: frozenset[str] | None) -> bool:
    """Whether an allowed intent-only kind finds a place on the lab (some variants hold
    no path intent: an OSPF cost moves nothing the verdict walks there)."""
    rng = random.Random(f"incidents-intent-only:{spec.name}")
    return any(
        k.draw(rng, spec, Taken()) is not None
        for k in fault_kinds(spec, allowed)
        if intent_only(k)
        for _ in range(4)
    )


def fault_kinds_of(
    family: str, allowed: frozenset[str] | None, size: str | None = None
) -> list[FaultKind]:
    """The allowed kinds drawn on `family` (at `size`, when given: the security policy's
    kinds only where large and xlarge labs carry it)."""
    return [
        k
        for k in catalogue.kinds()
        if k.drawn_on(family, size) and (allowed is None or k.id in allowed)
    ]


def benign_kinds(spec: NetSpec) -> list[FaultKind]:
    return [k for k in catalogue.kinds(benign=True) if k.drawn_on(spec.family, spec.size)]


def benign_range(tier: Tier, task: str) -> tuple[int, int]:
    """A detect query holds at least one benign anomaly at every level: healthy networks
    must differ by more than their lab, and "looks odd" must not mean "is faulty"."""
    low, high = tier.benign
    return (max(low, 1), max(high, 1)) if task == "detect" else (low, high)


def draw(
    spec: NetSpec,
    tier: Tier,
    task: str,
    allowed: frozenset[str] | None,
    rng: random.Random,
    weights: Mapping[str, float] | None = None,
    healthy: bool = False,
) -> Drawn | str:
    """One draw (see the module docstring), or why the lab could not hold it. `healthy`
    (a detect query's class) draws no fault."""
    taken = Taken()
    benign: list[Fault] = []
    wanted = rng.randint(*benign_range(tier, task))
    options = benign_kinds(spec)
    for _ in range(KIND_TRIES):
        if len(benign) >= wanted or not options:
            break
        kind = rng.choice(options)
        fault = kind.draw(rng, spec, taken)
        if fault is not None and fault.kind not in taken.kinds:
            taken.add(fault)
            benign.append(fault)
    if len(benign) < wanted:
        return f"{spec.name}: room for {len(benign)} of {wanted} benign anomalies"
    if healthy:
        if task != "detect":
            raise ValueError(f"only a detect query can be drawn healthy, not {task!r}")
        return Drawn(spec, (), tuple(benign), task)
    pool = fault_kinds(spec, allowed)
    if not pool:
        return f"{spec.name}: no allowed fault kind is drawn on {spec.family} labs"
    detect = task == "detect"
    count = rng.randint(*(tier.detect_faults if detect else tier.faults))
    silent = count if detect and tier.detect_silent else tier.intent_only
    faults: list[Fault] = []
    if tier.composed and not detect:
        distant = tickets.may_be_distant(spec)
        low, high = tier.pairs
        tries = PAIR_TRIES if low else 1
        faults += _masking_pair(spec, pool, taken, rng, count, distant and not low, tries)
        if not faults and not distant:
            return (
                f"{spec.name}: no masking pair drawn, and no ticket can be "
                f"{tickets.DISTANT[spec.size]} hops from a cause on it"
            )
        for _ in range(high - 1 if faults else 0):
            room = count - len(faults) - max(0, silent - _silent(faults))
            left = [k for k in pool if k.id not in taken.kinds]
            faults += _masking_pair(spec, left, taken, rng, room, False, tries)
    if tier.traps[1] and not detect:
        # only where a tier asks: with traps (0, 0) the stream is not drawn from at all
        wanted, drawn = rng.randint(*tier.traps), 0
        for _ in range(wanted):
            left = [k for k in pool if k.id not in taken.kinds]
            pair = _trap_pair(spec, left, taken, rng, count - len(faults), PAIR_TRIES)
            faults += pair
            drawn += bool(pair)
        if drawn < tier.traps[0]:
            return f"{spec.name}: room for {drawn} of {tier.traps[0]} order traps"
    for _ in range(KIND_TRIES):
        if len(faults) >= count:
            break
        need = silent - _silent(faults)
        left = [k for k in pool if k.id not in taken.kinds]
        if need > 0 and any(intent_only(k) for k in left):
            left = [k for k in left if intent_only(k)]
        if not left:
            break
        kind = _weighted(rng, left, weights, task)
        fault = kind.draw(rng, spec, taken)
        if fault is not None:
            taken.add(fault)
            faults.append(fault)
    if len(faults) < count:
        return f"{spec.name}: room for {len(faults)} of {count} faults of the allowed kinds"
    if _silent(faults) < silent:
        return f"{spec.name}: room for fewer than {silent} intent-only faults"
    return Drawn(spec, tuple(faults), tuple(benign), task)


def _silent(faults: list[Fault]) -> int:
    return sum(intent_only(catalogue.kind(f.kind)) for f in faults)


def _weighted(
    rng: random.Random, kinds: list[FaultKind], weights: Mapping[str, float] | None, task: str
) -> FaultKind:
    if weights is None:
        if task == "detect":
            weights = {k.id: 2.0 for k in kinds if intent_only(k)}
        # a group's kinds share one kind's weight (kinds.FaultKind.group): the security
        # policy's four would otherwise be most of level 8's intent-only draws; no group
        # among `kinds` leaves the weights, and so every earlier draw, as they were
        groups = Counter(k.group for k in kinds if k.group)
        if groups:
            weights = dict(weights or {})
            for k in kinds:
                if k.group:
                    weights[k.id] = weights.get(k.id, 1.0) / groups[k.group]
    return weighted_choice(rng, kinds, weights, label=lambda k: k.id)


def _masking_pair(
    spec: NetSpec, pool: list[FaultKind], taken: Taken, rng: random.Random, count: int,
    distant: bool, tries: int = 1,
) -> list[Fault]:  # fmt: skip
    """A masker and a kind it masks, when the pool holds such a pair and both find a
    place; [] otherwise (the tier's distant-symptom route remains). Half the time there
    is none where a ticket can be distant; always one where it cannot (`distant` False).
    `tries`: maskers drawn before giving up (more than one where a tier always asks for
    a pair)."""
    # on the masker's element, at its other end (masking.py): a plain draw put it on
    # another link or session, where nothing masks it and no pair was ever proven
    return _pair_on_element(
        spec, pool, taken, rng, count, tries, lambda k: k.masks, draw_masked,
        skip=lambda: rng.random() < 0.5 and distant,
    )  # fmt: skip


def _trap_pair(
    spec: NetSpec, pool: list[FaultKind], taken: Taken, rng: random.Random, count: int,
    tries: int,
) -> list[Fault]:  # fmt: skip
    """A steerer and a fault it shields on its element (faults/traps.py), when the pool
    holds such kinds, the query's count leaves room for two, and both find a place; []
    otherwise. `tries`: steerers drawn before giving up."""
    return _pair_on_element(spec, pool, taken, rng, count, tries, lambda k: k.shields, draw_trap)


def _pair_on_element(
    spec: NetSpec, pool: list[FaultKind], taken: Taken, rng: random.Random, count: int,
    tries: int, related: Callable[[FaultKind], Iterable[str]],
    draw_second: Callable[[random.Random, NetSpec, Fault, FaultKind, Taken], Fault | None],
    skip: Callable[[], bool] = lambda: False,
) -> list[Fault]:  # fmt: skip
    """A fault of a pool kind with a `related` kind in the pool, then one of that related
    kind drawn on its element (`draw_second`), both added to `taken`; [] when the count
    leaves no room for two, no kind has a relative, `skip()` says so (drawn after those
    checks, so the stream is what each caller drew before), or `tries` first faults found
    no second. Masking pairs and order traps are both drawn so."""
    ids = {k.id for k in pool}
    firsts = [k for k in pool if set(related(k)) & ids]
    if count < 2 or not firsts or skip():
        return []
    for _ in range(tries):
        kind = rng.choice(firsts)
        first = kind.draw(rng, spec, taken)
        if first is None:
            continue
        other = catalogue.kind(rng.choice(sorted(set(related(kind)) & ids)))
        second = draw_second(rng, spec, first, other, taken)
        if second is None:
            continue
        taken.add(first)
        taken.add(second)
        return [first, second]
    return []
