"""How many distinct MALT queries a level holds on one topology: a measured estimate
(capacity.py caches it per topology, app version and code).

The drawer (levels.py) picks among sorted sequences with the RNG, so the choice tree
could be enumerated; but on a MALT-sized topology it has about a million paths at level 1
(each of ~300 switches times six mutations, times ports, capacities, stages, filters) and
far more at levels 2 and 3, each leaf needing the analytic evaluator and the safety
checker: minutes, not the seconds a plan may spend. So the count is measured the way a
seed meets it. `draws` specs are drawn from the generator's own distribution and keyed
(cheap); of the distinct keys, up to `validate` (all when fewer) are put through the
generator's checks 1-3 (what makes a draw a query; the oracle's agreement, check 4, is a
bug when it fails, never a reason to redraw). Each count is the distinct keys drawn times
the valid fraction's Wilson 95 % lower bound (per operation, each operation's own
fraction), or the exact number of valid keys found when every key was validated: in both
cases queries a seed's draws do reach (a seed draws the same way, with a far larger budget
per query). `how` adds Chao1 (from the keys drawn once and twice), an estimate of how many
distinct specs the level holds in all. Results are cached per topology, app version, the
operations `app.operations` selects and the code that draws and validates.

With `app.operations`, the draws are the level's own and only the keys of the selected
operations count (levels 1-3 draw as always and keep the selected labels; levels 4 and 5
draw only the selected templates), as a seed's draws meet them. Capacity plans (levels
4 and 5) are validated by solving them and holding the plan to the plan checker.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from generators.malt.actions import Spec, operation_label
from generators.malt.index import Redraw
from generators.malt.levels import PLAN_LEVELS, spec_key
from generators.malt.operations import selects
from pipeline.api import SEED_SLOTS, Capacity, key_slot

if TYPE_CHECKING:  # the generator calls `measure` on itself (a bare one, with no app)
    from generators.malt.generator import MaltQueryGenerator

DRAWS = 20_000
VALIDATE = 1_500
# Capacity plans are drawn feasible (plandraw.py) and cost ~10 ms each to validate (solve,
# check every invariant): a smaller sample bounds their valid fraction as well, in seconds.
VALIDATE_PLANS = 300


def wilson_lower(successes: int, n: int, z: float = 1.96) -> float:
    """The lower end of the Wilson score interval of a proportion."""
    if n == 0:
        return 0.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))


def measure(
    gen: MaltQueryGenerator, level: int, draws: int = DRAWS, validate: int | None = None
) -> Capacity:
    """The estimate of the module docstring (`validate`: VALIDATE, VALIDATE_PLANS for
    levels 4 and 5)."""
    if validate is None:
        validate = VALIDATE_PLANS if level in PLAN_LEVELS else VALIDATE
    rng = random.Random(f"malt-capacity/{level}")
    seen: Counter[str] = Counter()
    specs: dict[str, dict[str, Any]] = {}
    for _ in range(draws):
        try:
            spec = gen.raw_draw(level, rng)
        except Redraw:
            continue
        if not selects(gen.operations, operation_label(spec)):
            continue
        key = spec_key(gen.topology_id, spec)
        seen[key] += 1
        specs.setdefault(key, spec)
    keys = sorted(specs)
    checked = keys if len(keys) <= validate else rng.sample(keys, validate)
    ok = {k for k in checked if not isinstance(gen.check(Spec.of(specs[k])), str)}
    complete = len(checked) == len(keys)
    rate = 1.0 if complete else wilson_lower(len(ok), len(checked))
    counted = [k for k in keys if k in ok] if complete else keys

    def scaled(found: Iterable[str], at: float) -> int:
        return sum(1 for _ in found) if complete else math.floor(sum(1 for _ in found) * at)

    slots = [scaled((k for k in counted if key_slot(k) == s), rate) for s in range(SEED_SLOTS)]
    by_op: dict[str, list[str]] = {}
    for key in counted:
        by_op.setdefault(operation_label(specs[key]), []).append(key)
    # Each operation at its own valid fraction: one never valid on this topology (a level-1
    # ranking on Google's example, whose switches all tie) counts nothing.
    sampled = Counter(operation_label(specs[k]) for k in checked)
    valid = Counter(operation_label(specs[k]) for k in ok)
    op_rates = {op: wilson_lower(valid[op], sampled[op]) for op in by_op}
    once = sum(1 for k in counted if seen[k] == 1)
    twice = sum(1 for k in counted if seen[k] == 2)
    chao1 = len(keys) + once * (once - 1) / (2 * (twice + 1))
    if complete:
        derived = f"all {len(keys):,} distinct keys validated, {len(ok):,} valid"
    else:
        derived = (
            f"{len(keys):,} distinct keys, {len(ok)} of {len(checked):,} sampled valid "
            f"(Wilson 95 % lower bound {rate:.3f}; each operation at its own)"
        )
    return Capacity(
        total=scaled(counted, rate),
        by_operation={op: scaled(found, op_rates[op]) for op, found in sorted(by_op.items())},
        exact=False,
        per_seed=min(slots),
        how=(
            f"measured from {draws:,} draws of the generator's own distribution on topology "
            f"{gen.topology_id}: {derived}; Chao1 estimate of all distinct specs "
            f"{chao1:,.0f}"
        ),
    )
