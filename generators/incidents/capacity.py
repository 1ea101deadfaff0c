"""How many distinct incidents queries a level holds: an estimate from pure draws.

Drawing is pure (draw.py) and validating is what costs, so the count draws SAMPLES
queries per lab of the level's catalogue (every family and size the config allows, each
of netlab's VARIANTS variants), keys them as the generator does and counts the distinct
keys, per operation (the faults' kinds). It is an estimate, not a bound: live validation
rejects some draws (its reasons are logged and counted by the bench), and more samples
find more keys. A seed takes the keys of its slot: a quarter. Cached per app version, the
registered kinds and the knobs.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from pathlib import Path

from generators.incidents import APP_VERSION
from generators.incidents.config import TIERS, IncidentsConfig, selected
from generators.incidents.draw import draw, holds_intent_only, tier_families
from generators.incidents.faults import kinds as catalogue
from generators.incidents.specs import spec
from generators.netlab.spec import VARIANTS
from pipeline.api import SEED_SLOTS, Capacity, cached, key_slot

SAMPLES = 40  # draws per lab


def capacity(cfg: IncidentsConfig, level: int, cache_dir: Path | None) -> Capacity:
    registered = ",".join(k.id for k in catalogue.kinds(benign=None))
    knobs = f"{APP_VERSION}|{level}|{cfg.task}|{cfg.topology}|{cfg.size}|{cfg.faults}|{SAMPLES}"
    digest = hashlib.sha256(f"{knobs}|{registered}".encode()).hexdigest()[:16]
    return cached(f"incidents-L{level}-{digest}", cache_dir, lambda: _count(cfg, level))


def _count(cfg: IncidentsConfig, level: int) -> Capacity:
    tier = TIERS[level]
    allowed = selected(cfg.faults) if cfg.faults is not None else None
    keys: dict[str, str] = {}
    for family in tier_families(tier, cfg.families(), allowed, cfg.sizes(level)):
        for size in cfg.sizes(level):
            for variant in range(VARIANTS):
                lab = spec(family, size, variant)
                if tier.intent_only and not holds_intent_only(lab, allowed):
                    continue  # the generator takes another variant (generator._lab)
                rng = random.Random(f"incidents-capacity:{level}:{lab.name}")
                for sample in range(SAMPLES):
                    healthy = cfg.task == "detect" and sample % 2 == 0  # as generated
                    drawn = draw(lab, tier, cfg.task, allowed, rng, healthy=healthy)
                    if not isinstance(drawn, str):
                        keys[drawn.key] = drawn.operation
    by_operation = Counter(keys.values())
    slots = [Counter(key_slot(k) for k in keys)[s] for s in range(SEED_SLOTS)]
    per_op: dict[str, int | None] = {}
    for op in by_operation:
        per_op[op] = min(
            sum(1 for k, o in keys.items() if o == op and key_slot(k) == s)
            for s in range(SEED_SLOTS)
        )
    return Capacity(
        total=len(keys),
        by_operation=dict(by_operation),
        exact=False,
        per_seed=min(slots) if keys else 0,
        per_seed_by_operation=per_op,
        how=(
            f"distinct keys among {SAMPLES} pure draws per lab of the level's catalogue "
            "(an estimate: live validation rejects some, more draws find more)"
        ),
    )
