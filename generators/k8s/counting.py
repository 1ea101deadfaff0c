"""How many distinct queries a level holds on the generated applications (capacity.py counts
Online Boutique's).

A query of a generated application is a set of observable singles (singles.py), one per
fault of its combination, on distinct policies (level 5: in two namespaces at least),
none masking another; its key is the application and the faulted specs. Counted per
application of the catalogue for the size classes in play, and summed:

  * the singles: every candidate evaluated, the unobservable left out, equal faulted specs
    of one policy counted once (each under the first kind in RI, AI, CP, CPR, AE order, so
    no set is counted under two combinations). One fault per query: exact;
  * `sets`: the sets of such singles with the combination's kinds on distinct policies
    (and namespaces), exactly, by a generating polynomial over the policies;
  * times the share of them with no *risky* pair: two singles one of whose mismatches has
    an end at the other's pod (the only way one fault can hide another, as a workload
    policy selects one pod). A set without one is valid: no probe depends on more than
    the policies of the two pods at its ends, so no repair can reveal a mismatch. The
    share is measured on SAMPLES seeded draws and taken at its Wilson 95 % lower bound:
    an estimate from below (a risky pair masks nothing more often than not).

Per seed: one combination's keys fall in the four seed slots by hash; a slot gets at least
a quarter less four standard deviations (exact counts per slot for single faults).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from generators.k8s.faults import KINDS, MIN_NAMESPACES
from generators.k8s.generator import spec_digest, state_key
from generators.k8s.singles import Singles
from pipeline.api import SEED_SLOTS, key_slot

SAMPLES = 2000  # sets drawn per combination and application to measure the risky share


@dataclass(frozen=True)
class Counted:
    """One application's distinct observable singles, by kind."""

    name: str  # the application (its cluster's name)
    policies: dict[str, str]  # policy name -> namespace
    # kind -> (policy, the other policies whose pods its mismatches have an end at)
    by_kind: dict[str, list[tuple[str, frozenset[str]]]]
    keys: dict[str, list[str]]  # kind -> the keys of its singles as level-1 queries


def counted(singles: Singles) -> Counted:
    """The distinct observable singles of an application (see the module docstring)."""
    ev = singles.ev
    seen: set[tuple[str, str]] = set()
    by_kind: dict[str, list[tuple[str, frozenset[str]]]] = {}
    keys: dict[str, list[str]] = {}
    policy_of = {_pod(ev, name): name for name in singles.base}  # pod -> its policy
    for kind in KINDS:
        by_kind[kind], keys[kind] = [], []
        for single in singles.observable(kind):
            ident = (single.name, spec_digest(single.policy["spec"]))
            if ident in seen:
                continue
            seen.add(ident)
            ends = {pod for m in singles.wrong(single) for pod in ev.ends[m]}
            touched = {policy_of[pod] for pod in ends if pod in policy_of} - {single.name}
            by_kind[kind].append((single.name, frozenset(touched)))
            keys[kind].append(state_key({single.name: single.policy}, ev.spec))
    namespaces = {name: p["metadata"]["namespace"] for name, p in singles.base.items()}
    return Counted(ev.spec.name, namespaces, by_kind, keys)


def _pod(ev, name: str) -> str:
    """The pod a workload policy selects (its workload's)."""
    (pod,) = ev.selected(name, ev.by_name[name])
    return pod


def sets(c: Counted, combo: Sequence[str], min_namespaces: int = 1) -> int:
    """Sets of singles with `combo`'s kinds on distinct policies spanning at least
    `min_namespaces` namespaces (exact)."""
    total = _sets(c, combo, c.policies)
    if min_namespaces > 1:
        for ns in set(c.policies.values()):
            total -= _sets(c, combo, {p: n for p, n in c.policies.items() if n == ns})
    return total


def _sets(c: Counted, combo: Sequence[str], policies: Iterable[str]) -> int:
    need = Counter(combo)
    kinds = sorted(need)
    per_policy: dict[str, Counter[str]] = defaultdict(Counter)
    for kind in kinds:
        for policy, _ in c.by_kind[kind]:
            per_policy[policy][kind] += 1
    states: dict[tuple[int, ...], int] = {tuple(0 for _ in kinds): 1}
    for policy in policies:
        counts = per_policy.get(policy)
        if not counts:
            continue
        grown = dict(states)
        for state, ways in states.items():
            for i, kind in enumerate(kinds):
                if counts[kind] and state[i] < need[kind]:
                    nxt = (*state[:i], state[i] + 1, *state[i + 1 :])
                    grown[nxt] = grown.get(nxt, 0) + ways * counts[kind]
        states = grown
    return states.get(tuple(need[k] for k in kinds), 0)


def risk_free(
    c: Counted, combo: Sequence[str], min_namespaces: int, rng: random.Random
) -> tuple[int, int]:
    """(sets with no risky pair, sets drawn) of SAMPLES sets drawn uniformly: a single per
    kind slot, redrawn while policies repeat or namespaces are too few."""
    lists = [c.by_kind[k] for k in combo]
    ok = drawn = tries = 0
    while all(lists) and drawn < SAMPLES and tries < 50 * SAMPLES:
        tries += 1
        picked = [items[rng.randrange(len(items))] for items in lists]
        policies = {p for p, _ in picked}
        if len(policies) < len(picked):
            continue
        if len({c.policies[p] for p in policies}) < min_namespaces:
            continue
        drawn += 1
        ok += all(b[0] not in a[1] and a[0] not in b[1] for a, b in _pairs(picked))
    return ok, drawn


def wilson_lower(successes: int, n: int, z: float = 1.96) -> float:
    """The lower end of the Wilson score interval of successes / n."""
    p = successes / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))


def estimate(c: Counted, combo: Sequence[str], min_namespaces: int, seed: str) -> int:
    """Valid sets of `combo` on one application: exact for one fault, else the sets on
    distinct policies times the Wilson 95 % lower bound of the fraction without a risky
    pair (see the module docstring)."""
    total = sets(c, combo, min_namespaces)
    if len(combo) == 1 or total == 0:
        return total
    ok, drawn = risk_free(c, combo, min_namespaces, random.Random(seed))
    return math.floor(total * wilson_lower(ok, drawn)) if drawn else 0


def _pairs(items: Sequence[Any]) -> list[tuple[Any, Any]]:
    return [(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))]


def per_slot(total: int) -> list[int]:
    """A lower bound of the keys of each seed slot, out of `total` hashed ones."""
    quarter = total / SEED_SLOTS
    sigma = math.sqrt(total * (1 / SEED_SLOTS) * (1 - 1 / SEED_SLOTS))
    return [max(0, math.floor(quarter - 4 * sigma))] * SEED_SLOTS


def level_counts(
    apps: Sequence[Counted], cycle: Sequence[tuple[str, ...]], level: int
) -> tuple[dict[str, int], dict[str, list[int]]]:
    """(distinct queries per operation, per seed slot) over the applications."""
    by_op: dict[str, int] = {}
    slots: dict[str, list[int]] = {}
    min_ns = MIN_NAMESPACES.get(level, 1)
    for combo in cycle:
        op = "+".join(combo)
        if len(combo) == 1:
            keys = [k for c in apps for k in c.keys[combo[0]]]
            by_op[op] = len(keys)
            counts = [0] * SEED_SLOTS
            for key in keys:
                counts[key_slot(key)] += 1
            slots[op] = counts
            continue
        by_op[op] = sum(estimate(c, combo, min_ns, f"{c.name}:{op}:{level}") for c in apps)
        slots[op] = per_slot(by_op[op])
    return by_op, slots
