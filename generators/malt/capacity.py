"""How many distinct MALT queries a level holds on one topology: the measured estimate
(generators/malt/measure.py says how it is measured), cached per topology, app version,
the operations `app.operations` selects and the code that draws and validates."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from generators.malt import (
    APP_VERSION,
    actions,
    checker,
    coupled,
    coupledcheck,
    coupleddraw,
    coupledgreedy,
    coupledsolve,
    coupledspec,
    index,
    intended,
    operations,
    planbase,
    plancheck,
    plandraw,
    planmath,
    plansolve,
)
from generators.malt import generator as generator_module
from generators.malt import levels as levels_module
from generators.malt.generator import PLAN_LEVELS, MaltQueryGenerator
from generators.malt.measure import DRAWS, VALIDATE, VALIDATE_PLANS, measure, wilson_lower
from pipeline.api import Capacity, cached

__all__ = ["DRAWS", "VALIDATE", "VALIDATE_PLANS", "cached_measure", "measure", "wilson_lower"]
log = logging.getLogger(__name__)


def fingerprint(
    topology_id: str, draws: int, validate: int, selected: list[str] | None = None
) -> str:
    """What a measurement depends on: topology, app version, the operations selected, the
    code that draws specs and decides which are queries (drawers, evaluators, safety and
    plan rules), sizes."""
    modules = (levels_module, generator_module, actions, checker, index, intended, operations)
    modules += (planbase, plancheck, plandraw, planmath, plansolve)
    modules += (coupled, coupledcheck, coupleddraw, coupledgreedy, coupledsolve, coupledspec)
    sources = [hashlib.sha256(Path(m.__file__).read_bytes()).hexdigest() for m in modules]
    text = json.dumps([topology_id, APP_VERSION, sources, draws, validate])
    if selected is not None:  # unchanged names of measurements without the knob
        text = json.dumps([text, sorted(selected)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_measure(
    gen: MaltQueryGenerator,
    level: int,
    cache_dir: Path,
    draws: int = DRAWS,
    validate: int | None = None,
) -> Capacity:
    """`measure`, remembered (pipeline.capacity.cached)."""
    if validate is None:
        validate = VALIDATE_PLANS if level in PLAN_LEVELS else VALIDATE
    name = f"capacity-{fingerprint(gen.topology_id, draws, validate, gen.operations)}-L{level}"
    return cached(name, cache_dir, lambda: measure(gen, level, draws, validate))
