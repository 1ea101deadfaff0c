"""What every app's query generator shares: the query id, the query key and the draw loop.

Query `index` of (app, level, seed) is drawn from its own random stream, so n queries are
a prefix of any larger set with the same arguments, and a draw that is rejected is
redrawn from the same stream.

Keys. Every query has a canonical key (`query_key`: what the agent is asked and the
hidden state it must discover, never incidental wording). The keys of one (app config,
level) are distinct across every seed in use, by ownership rather than by coordination:
a key belongs to slot `key_slot(key)` of `SEED_SLOTS`, and seed s takes only keys of its
slot `seed_slot(s)`. Seeds 0..3 are disjoint by construction and a seed's queries never
depend on which other seeds run; seeds s and s + 4 share a slot (a grid must not hold
both). Within a seed, `KeyTracker` refuses a key that an earlier query took.

The loop (`KeyTracker.take`): `draw()` gives (key, draw) or a one-line reason it could
not draw; a key of another slot, an earlier query's key, or a key whose draw already
failed validation is redrawn at once, without validating (routing and netllmbench
validate on live labs) and without spending the validation budget: those rejections have
their own, much larger budget, past which `CapacityExhausted` names the app's capacity.
A draw that reaches `build(draw)` and fails it spends the validation budget
(`max_draws`), past which `NoValidQuery` names the most common reasons.

Invalid draws and environment failures. `build` returns a reason when the draw itself is
invalid (what it decides: its faults, its oracle); it raises EnvironmentFailure when the
environment failed (a lab that could not be reset, a command killed at its time limit).
The latter is never held against the draw: the same draw is built again, up to
ENV_ATTEMPTS times, and if the environment still fails the EnvironmentFailure propagates.
So a loaded or flaky machine can fail a generation but never change which queries a seed
gives.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from pipeline.core import Query, canonical_json
from pipeline.errors import EnvironmentFailure, QueryGenerationError

T = TypeVar("T")
D = TypeVar("D")
log = logging.getLogger(__name__)

SEED_SLOTS = 4
MAX_KEY_REJECTIONS = 20_000  # slot, repeat and known-invalid rejections per query
ENV_ATTEMPTS = 4  # builds of one draw while the environment fails, before giving up


def query_id(app: str, level: int, seed: int, index: int) -> str:
    """ "<app>-L<level>-s<seed>-<index:05d>": unique across a results tree."""
    return f"{app}-L{level}-s{seed}-{index:05d}"


def query_rng(seed: int, level: int, index: int) -> random.Random:
    """The random stream of one query (every app draws query `index` from it alone)."""
    return random.Random(f"{seed}:{level}:{index}")


def healthy_query(seed: int, level: int, index: int) -> bool:
    """Whether detect query `index` is a healthy network: exactly one of each pair of
    indices (2k, 2k+1), which one drawn from the pair's own stream. Decided before any
    draw, so a class whose draws are rejected more often (a faulty network's validation
    refuses more) is never under-represented: redraws stay in the class."""
    first = random.Random(f"healthy:{seed}:{level}:{index // 2}").random() < 0.5
    return first if index % 2 == 0 else not first


def weighted_choice(
    rng: random.Random,
    options: Sequence[T],
    weights: Mapping[str, float] | None = None,
    label: Callable[[T], str] = str,
) -> T:
    """One of `options`: `rng.choice(options)` without weights (so a seed draws what it
    always drew), else drawn with probability proportional to `weights[label(option)]`
    (1.0 for a label the weights do not name). Failure-driven sampling passes the
    weights of an earlier run's failures per operation label (pipeline/focus.py)."""
    if weights is None:
        return rng.choice(options)
    chosen = [float(weights.get(label(o), 1.0)) for o in options]
    if not any(w > 0 for w in chosen):
        return rng.choice(options)
    return rng.choices(options, weights=chosen)[0]


def query_key(*parts: Any) -> str:
    """The canonical key of a query made of `parts` (JSON values): 16 hex characters of
    the sha256 of their canonical JSON."""
    return hashlib.sha256(canonical_json(list(parts)).encode()).hexdigest()[:16]


def key_slot(key: str) -> int:
    """The seed slot that owns `key`."""
    return int(key, 16) % SEED_SLOTS


def share_cap(taken: int, share: float, least: int = 1) -> int:
    """How many of a run's first `taken` queries one variety stratum may hold before a
    draw in it is redrawn: 1 + floor(share x taken), at least `least` (so after n queries
    no stratum holds more than 1 + share x n of them)."""
    return max(least, 1 + int(share * taken))


def seed_slot(seed: int) -> int:
    """The slot whose keys seed `seed` takes; seeds with equal slots may share keys."""
    return seed % SEED_SLOTS


class NoValidQuery(QueryGenerationError):
    """Every draw of one query was rejected."""

    def __init__(
        self, app: str, level: int, seed: int, index: int, reasons: list[str], hint: str = ""
    ) -> None:
        self.app, self.level, self.seed, self.index = app, level, seed, index
        self.reasons = reasons
        common = "; ".join(f"{why} ({n}x)" for why, n in Counter(reasons).most_common(3))
        super().__init__(
            f"no valid {app} query {query_id(app, level, seed, index)} (level {level}, seed "
            f"{seed}, index {index}) in {len(reasons)} draws; most common reasons: {common}"
            + (f". {hint}" if hint else "")
        )


class CapacityExhausted(QueryGenerationError):
    """One seed has taken every distinct query its draws find: the request exceeds what
    the level (or the query's operation) can produce for that seed."""

    def __init__(
        self,
        app: str,
        level: int,
        seed: int,
        index: int,
        found: int,
        capacity: str,
        rejections: Counter[str],
    ) -> None:
        self.app, self.level, self.seed, self.index, self.found = app, level, seed, index, found
        self.capacity = capacity
        why = ", ".join(f"{n} {what}" for what, n in rejections.most_common())
        super().__init__(
            f"{app} level {level}, seed {seed}: query {query_id(app, level, seed, index)} "
            f"(index {index}) drew no new distinct query in {sum(rejections.values())} draws "
            f"({why}); this seed found {found} distinct queries, taking only keys of seed "
            f"slot {seed_slot(seed)} of {SEED_SLOTS}. Capacity: {capacity}. Ask for fewer "
            "queries (or more seeds), or pass allow_repeats to keep repeats"
        )


class Taken(NamedTuple, Generic[T]):
    """What `KeyTracker.take` accepted: the built value, its key, and the id of the
    earlier query of the same seed with that key (only with allow_repeats)."""

    value: T
    key: str
    repeat_of: str | None


class KeyTracker:
    """The keys one (app, level, seed) has taken so far; see the module docstring.

    `capacity` is called only to word a CapacityExhausted error (it may be slow)."""

    def __init__(
        self,
        app: str,
        level: int,
        seed: int,
        *,
        allow_repeats: bool = False,
        capacity: Callable[[], object] | None = None,
        max_rejections: int | None = None,
    ) -> None:
        self.app, self.level, self.seed = app, level, seed
        self.allow_repeats = allow_repeats
        self.slot = seed_slot(seed)
        self.taken: dict[str, int] = {}  # key -> index of the query that took it
        self.invalid: dict[str, str] = {}  # key -> why its draw failed validation
        self._capacity = capacity
        self.max_rejections = max_rejections or MAX_KEY_REJECTIONS

    def _rejection(self, key: str) -> str | None:
        if key in self.invalid:
            return "known invalid"
        if self.allow_repeats:
            return None
        if key_slot(key) != self.slot:
            return "in another seed's slot"
        if key in self.taken:
            return "repeats"
        return None

    def take(
        self,
        index: int,
        draw: Callable[[], tuple[str, D] | str],
        build: Callable[[D], T | str],
        *,
        max_draws: int,
        hint: str = "",
    ) -> Taken[T]:
        """The first draw of query `index` whose key is free and whose draw `build`
        accepts; see the module docstring."""
        reasons: list[str] = []
        rejected: Counter[str] = Counter()
        where = query_id(self.app, self.level, self.seed, index)
        while True:
            drawn = draw()
            if isinstance(drawn, str):
                reasons.append(drawn)
            else:
                key, value = drawn
                why = self._rejection(key)
                if why is not None:
                    rejected[why] += 1
                    if rejected.total() >= self.max_rejections:
                        raise CapacityExhausted(
                            self.app,
                            self.level,
                            self.seed,
                            index,
                            len(self.taken),
                            self._describe_capacity(),
                            rejected,
                        )
                    continue
                built = built_despite_environment(build, value, where)
                if not isinstance(built, str):
                    earlier = self.taken.setdefault(key, index)
                    repeat = None
                    if earlier != index:
                        repeat = query_id(self.app, self.level, self.seed, earlier)
                    return Taken(built, key, repeat)
                self.invalid[key] = built
                reasons.append(built)
            log.debug("redrawing %s: %s", where, reasons[-1])  # NoValidQuery lists them
            if len(reasons) >= max_draws:
                raise NoValidQuery(self.app, self.level, self.seed, index, reasons, hint)

    def _describe_capacity(self) -> str:
        if self._capacity is None:
            return "unknown"
        try:
            found = self._capacity()
        except QueryGenerationError as err:
            return f"not computed ({err})"
        describe = getattr(found, "describe", None)
        return describe() if callable(describe) else str(found)


def built_despite_environment(build: Callable[[D], T | str], value: D, where: str) -> T | str:
    """`build(value)`, built again while it raises EnvironmentFailure (ENV_ATTEMPTS times in
    all); the last failure propagates."""
    for attempt in range(1, ENV_ATTEMPTS + 1):
        try:
            return build(value)
        except EnvironmentFailure as err:
            if attempt == ENV_ATTEMPTS:
                raise EnvironmentFailure(
                    f"{where}: the environment failed {ENV_ATTEMPTS} times while validating "
                    f"the same draw; last: {err}"
                ) from err
            log.warning("%s: the environment failed (%s); validating the draw again", where, err)
    raise AssertionError("unreachable")


def stamp(query: Query, taken: Taken[Any]) -> Query:
    """`query` with its key, and `ground_truth["repeat_of"]` when it repeats an earlier one."""
    truth = query.ground_truth
    if taken.repeat_of is not None:
        truth = {**truth, "repeat_of": taken.repeat_of}
    return dataclasses.replace(query, key=taken.key, ground_truth=truth)
