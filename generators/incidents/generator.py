"""Seeded incidents queries, each validated on a live lab (levels 6-8).

Query `index` of (level, seed): its lab is the seed's lab cycle's entry for the index
(variety.py), its faults and benign anomalies are drawn from its own stream (draw.py),
capped by stratum (variety.py: a draw in a full stratum is redrawn before any lab work),
keyed (draw.py: the task, the lab, each fault's kind, cause and elements) and taken by
pipeline/querygen.py's loop, which redraws keys of other seed slots and repeats without
validating. A draw is then validated live (validate.py); a rejected one is redrawn from
the same stream, so the same seed always gives the same queries. A detect query's class
(healthy or not) is fixed per index before its first draw (pipeline.api.healthy_query) and
redraws keep it: faulty draws are refused by validation far more often than healthy ones,
and a class redrawn with the rest made 4 of 4 level-8 detect queries of a reference
player's sample healthy.

`generate(..., live=False)` skips validation (no lab): the pure draws, for the variety
measurements and tests; such queries have no oracle and are never written as a shard.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from generators.incidents import APP_VERSION
from generators.incidents.config import TIERS, IncidentsConfig, Tier, selected
from generators.incidents.draw import Drawn, draw, holds_intent_only, holds_trap, tier_families
from generators.incidents.labs import LabPool
from generators.incidents.prompt import prompt, status
from generators.incidents.specs import lab_json, spec
from generators.incidents.validate import REPORTED, Validated, validate
from generators.incidents.variety import CAP_TRIES, StratumCap, lab_cycle, lab_of
from generators.netlab.spec import VARIANTS, NetSpec
from pipeline.api import (
    KeyTracker,
    Query,
    Vocabulary,
    healthy_query,
    query_id,
    query_rng,
    stamp,
)

log = logging.getLogger(__name__)
MAX_DRAWS = 12  # draws validated per query before NoValidQuery


class IncidentsGenerator:
    """Draws and validates queries; owns the labs it validates on until closed."""

    def __init__(
        self,
        cfg: IncidentsConfig,
        app_name: str,
        vocabulary: Callable[[int], Vocabulary],
        capacity: Callable[[int], object] | None = None,
    ) -> None:
        self.cfg = cfg
        self.app_name = app_name
        self.vocabulary = vocabulary
        self._capacity = capacity
        self.rejected: Counter[str] = Counter()  # why draws were dropped
        self.seconds: list[float] = []  # validation seconds per accepted query

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
        live: bool = True,
    ) -> Iterator[Query]:
        tier = TIERS[level]
        allowed = selected(self.cfg.faults) if self.cfg.faults is not None else None
        families = tier_families(tier, self.cfg.families(), allowed, self.cfg.sizes(level))
        pairs = lab_cycle(families, self.cfg.sizes(level), level, seed)
        cap = StratumCap()
        capacity = self._capacity
        tracker = KeyTracker(
            self.app_name, level, seed, allow_repeats=allow_repeats,
            capacity=None if capacity is None else (lambda: capacity(level)),
        )  # fmt: skip
        with LabPool(self.cfg, self.cfg.max_live_labs) as pool:
            for index in range(count):
                rng = query_rng(seed, level, index)
                lab = self._lab(tier, pairs, index, allowed)
                healthy = self.cfg.task == "detect" and healthy_query(seed, level, index)

                def pick(
                    rng: Any = rng, lab: Any = lab, healthy: bool = healthy
                ) -> tuple[str, Drawn] | str:
                    drawn = self._capped(cap, lambda: draw(
                        lab, tier, self.cfg.task, allowed, rng, weights, healthy))  # fmt: skip
                    return drawn if isinstance(drawn, str) else (drawn.key, drawn)

                def attempt(drawn: Drawn, index: int = index, rng: Any = rng) -> Query | str:
                    if not live:
                        return self._query(level, seed, index, drawn, None)
                    done = validate(
                        pool, drawn, tier, self.cfg.turns(level), self.cfg.read_bytes(level), rng
                    )
                    if isinstance(done, str):
                        self.rejected[done.split(":")[0]] += 1
                        log.info("%s rejected: %s", drawn.operation, done)
                        return done
                    self.seconds.append(sum(done.seconds.values()))
                    return self._query(level, seed, index, drawn, done)

                taken = tracker.take(index, pick, attempt, max_draws=MAX_DRAWS)
                query = stamp(taken.value, taken)
                cap.add(query.stratum)
                yield query

    @staticmethod
    def _lab(tier: Tier, pairs: list[tuple[str, str]], index: int, allowed: Any) -> NetSpec:
        """Query `index`'s lab; at a tier that asks an intent-only fault (or an order trap),
        the next variant of its (family, size) that can hold one when its own cannot
        (netlab variants differ in areas and protocols, and some hold no path intent)."""
        family, size, variant = lab_of(pairs, index)
        lab = spec(family, size, variant)

        def holds(one: NetSpec) -> bool:
            return (tier.intent_only == 0 or holds_intent_only(one, allowed)) and (
                tier.traps[0] == 0 or holds_trap(one, allowed)
            )

        if holds(lab):
            return lab
        for step in range(1, VARIANTS):
            other = spec(family, size, (variant + step) % VARIANTS)
            if holds(other):
                return other
        return lab

    @staticmethod
    def _capped(cap: StratumCap, one: Callable[[], Drawn | str]) -> Drawn | str:
        """A draw whose stratum has room (see variety.py), else the emptiest of CAP_TRIES."""
        best: Drawn | None = None
        why = ""
        for _ in range(CAP_TRIES):
            drawn = one()
            if isinstance(drawn, str):
                why = drawn
                continue
            if cap.allows(drawn.stratum):
                return drawn
            if best is None or cap.counts[drawn.stratum] < cap.counts[best.stratum]:
                best = drawn
        return best if best is not None else why

    def _query(
        self, level: int, seed: int, index: int, drawn: Drawn, done: Validated | None
    ) -> Query:
        tier, task, cfg = TIERS[level], drawn.task, self.cfg
        faults = done.faults if done is not None else drawn.faults
        ticket = done.ticket if done is not None else None
        symptoms = None  # mitigate: the checks failing; localize at level 6: their counts
        if done is not None and task == "mitigate":
            symptoms = done.shown
        elif done is not None and task == "localize" and not tier.ticket:
            symptoms = status(_expand(done.symptoms), done.totals, "counts", REPORTED)
        text = prompt(
            drawn.spec, tier, task, drawn.benign,
            turns=cfg.turns(level), read_bytes=cfg.read_bytes(level),
            ticket=None if task == "detect" or ticket is None else ticket.text,
            vocabulary=self.vocabulary(level) if task == "localize" else None,
            symptoms=symptoms, command=cfg.command,
        )  # fmt: skip
        truth: dict[str, Any] = {
            "lab": lab_json(drawn.spec),
            "faults": [f.to_json() for f in faults],
            "benign": [b.to_json() for b in drawn.benign],
            "healthy": drawn.healthy,
            "causes": [f.cause.to_json() for f in faults],
            "oracle": done.oracle if done is not None else [],
            "ticket": ticket.to_json() if ticket is not None else None,
            "symptoms": done.symptoms if done is not None else {},
            "masking": done.masking if done is not None else [],
            "validation": {
                "oracle_turns": len(done.oracle) if done is not None else 0,
                "oracle_bytes": done.oracle_bytes if done is not None else 0,
                "seconds": {k: round(v, 2) for k, v in (done.seconds if done else {}).items()},
            },
            "app_version": APP_VERSION,
        }
        if done is not None and done.traps:
            # only where a trap was drawn: every other query's truth keeps its bytes
            truth["traps"] = done.traps
        return Query(
            query_id(self.app_name, level, seed, index), self.app_name, level, seed, index,
            text, "causes" if task == "localize" else "state", drawn.operation, truth,
            env_key=drawn.spec.name, size=drawn.spec.size, task=task, stratum=drawn.stratum,
        )  # fmt: skip


def _expand(symptoms: Mapping[str, int]) -> list[str]:
    """Placeholder violations reproducing the counts by class (for a counts-only status)."""
    return [f"{key}:#{i}" for key, n in symptoms.items() for i in range(n)]
