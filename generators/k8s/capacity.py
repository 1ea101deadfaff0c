"""How many distinct k8s queries each level holds, per operation and per seed slot.

Level 1 is counted exactly: every candidate of every fault kind (faults.candidates, the
lists the generator draws from) is applied to the intended policies, validated with the
pure-Python evaluator (some pair mismatches; the oracle's repair restores the intended
policies by construction) and keyed as the generator keys it.

Levels 2 and 3 hold tens of thousands of pairs of faults per combination, too many to
evaluate at plan time, so they get a lower bound: the pairs of faults on *different*
policies (whose candidates do not depend on each other), each keyed, and valid when a
mismatch of one fault provably survives the other (it involves neither end of the other
policy's workload, whose policy alone changed) or, failing that, when the evaluator
says so. Pairs of faults on the same policy are left out.

Queries on generated applications (levels 4 and 5; levels 1-3 at a `size` other than
Online Boutique's) are counted by counting.py. The `faults` and `size` knobs select the
combinations and applications counted (and name the cache entry).

The generator cycles through a level's combinations by index, so one seed can get as many
queries as the first combination to run out allows (`balanced_per_seed`). Results are
cached under the app's cache dir, keyed by the app version and the code they depend on.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulators.k8s import policy as policy_module
from emulators.k8s import probes as probes_module
from generators.k8s import APP_VERSION, counting
from generators.k8s import generator as generator_module
from generators.k8s.clusters import catalog
from generators.k8s.faults import candidates, workload_policies
from generators.k8s.generator import Evaluator, K8sQueryGenerator, env_key, spec_digest
from pipeline.api import SEED_SLOTS, Capacity, cached, key_slot, query_key

log = logging.getLogger(__name__)
# The modules of this package validity and counts depend on (the capacity cache's key).
PACKAGE_SOURCES = (
    "boutique", "callgraph", "clusters", "counting", "evaluator", "faults", "generator",
    "hardened", "hardened_egress", "manifests", "mistakes", "rule_edits", "singles",
)  # fmt: skip


@dataclass(frozen=True)
class Single:
    """One level-1 fault applied to the intended policies."""

    policy: str
    spec: dict[str, Any]  # the faulted spec
    digest: str
    key: str
    mismatches: frozenset[str]
    pods: frozenset[str]  # pods the faulted or the intended policy selects


def balanced_per_seed(per_slot: Mapping[str, Sequence[int]], cycle: Sequence[str]) -> int:
    """The most queries any seed gets when query i has operation cycle[(i + seed) % m] and
    operation op holds per_slot[op][slot] keys in the seed's slot: the least, over slots
    and shifts, of the index of the first query whose operation has run out."""
    m = len(cycle)
    best = None
    for slot in range(SEED_SLOTS):
        for shift in range(m):
            # The (c + 1)-th query of operation j is index ((j - shift) % m) + c * m.
            n = min(((j - shift) % m) + per_slot[op][slot] * m for j, op in enumerate(cycle))
            best = n if best is None else min(best, n)
    return best or 0


def _slots(keys: set[str]) -> list[int]:
    counts = [0] * SEED_SLOTS
    for key in keys:
        counts[key_slot(key)] += 1
    return counts


class K8sCapacity:
    """Counts on one evaluator, memoised per level."""

    def __init__(
        self, evaluator: Evaluator | None = None, generator: K8sQueryGenerator | None = None
    ) -> None:
        self.gen = generator or K8sQueryGenerator()
        self.ev = evaluator or self.gen.evaluator
        self._singles: dict[str, list[Single]] | None = None
        self._levels: dict[int, Capacity] = {}
        self.evaluated = 0  # pairs that needed the evaluator

    def singles(self) -> dict[str, list[Single]]:
        """Every level-1 fault by kind, validated (invalid ones left out)."""
        if self._singles is None:
            base = workload_policies(self.ev.intended)
            out: dict[str, list[Single]] = {}
            for abbr in ("RI", "AI", "CP", "CPR", "AE"):
                found = []
                for fault, change in candidates(abbr, base):
                    name = fault["policy"]
                    policy = copy.deepcopy(base[name])
                    change(policy["spec"])
                    if policy["spec"] == base[name]["spec"]:
                        continue
                    wrong = self.ev.mismatches({name: policy})
                    if wrong:
                        digest = spec_digest(policy["spec"])
                        key = query_key({name: digest})
                        pods = frozenset(self.ev.selected(name, policy))
                        found.append(
                            Single(name, policy["spec"], digest, key, frozenset(wrong), pods)
                        )
                out[abbr] = found
            self._singles = out
        return self._singles

    def _at_risk(self, single: Single, other: Single) -> frozenset[str]:
        """The mismatches of `single` the other fault could change: those with an end among
        the pods `other`'s policy selects (faulted or intended); all of them if it selects
        the DNS pod. Every other mismatch of `single` is still there with the other fault."""
        if self.ev.dns in other.pods:
            return single.mismatches
        return frozenset(m for m in single.mismatches if self.ev.ends[m] & other.pods)

    def _pair_keys(self, first: list[Single], second: list[Single]) -> set[str]:
        keys = set()
        base = workload_policies(self.ev.intended)
        for a in first:
            for b in second:
                if a.policy == b.policy:
                    continue
                risky = self._at_risk(a, b) | self._at_risk(b, a)
                if risky and not self._kept(base, a, b, risky):
                    continue
                ordered = sorted(((a.policy, a.digest), (b.policy, b.digest)))
                keys.add(query_key(dict(ordered)))
        return keys

    def _kept(self, base: dict[str, Any], a: Single, b: Single, risky: frozenset[str]) -> bool:
        """As the generator decides (K8sQueryGenerator._masked): neither fault masks the
        other, i.e. every mismatch of each alone is still a mismatch with both (then both
        together mismatch too, since each alone does)."""
        self.evaluated += 1
        changed = {s.policy: {**base[s.policy], "spec": s.spec} for s in (a, b)}
        return self.ev.mismatched(changed, risky) == risky

    def level(self, level: int) -> Capacity:
        if level not in self._levels:
            if self.gen.uses_boutique(level):
                self._levels[level] = self._compute(level)
            else:
                self._levels[level] = self._generated(level)
        return self._levels[level]

    def _generated(self, level: int) -> Capacity:
        """The generated applications' count (counting.py)."""
        combos = self.gen.combos(level)
        cycle = ["+".join(c) for c in combos]
        apps = [
            counting.counted(self.gen.singles_for(spec))
            for size in self.gen.sizes(level)
            for spec in catalog(size)
        ]
        by_op, per_slot = counting.level_counts(apps, combos, level)
        single = all(len(c) == 1 for c in combos)
        sizes = "/".join(self.gen.sizes(level))
        how = (
            f"{'exact' if single else 'measured'}: the {len(apps)} generated "
            f"applications ({sizes}); observable single faults"
            + (
                ""
                if single
                else ", sets on distinct policies times the Wilson lower bound of the "
                "sampled share without a risky pair"
            )
            + " (generators/k8s/counting.py)"
        )
        return Capacity(
            total=sum(by_op.values()),
            by_operation=by_op,
            exact=single,
            per_seed=balanced_per_seed(per_slot, cycle),
            per_seed_by_operation={op: min(counts) for op, counts in per_slot.items()},
            how=how,
        )

    def _compute(self, level: int) -> Capacity:
        singles = self.singles()
        combos = self.gen.combos(level)
        cycle = ["+".join(c) for c in combos]
        by_op: dict[str, set[str]] = {}
        for combo, op in zip(combos, cycle, strict=True):
            if len(combo) == 1:
                by_op[op] = {s.key for s in singles[combo[0]]}
            else:
                by_op[op] = self._pair_keys(singles[combo[0]], singles[combo[1]])
        per_slot = {op: _slots(keys) for op, keys in by_op.items()}
        total = len(set().union(*by_op.values()))
        if all(len(c) == 1 for c in combos):
            how = (
                "exact: every candidate fault applied to the intended policies and checked "
                "with the evaluator"
            )
        else:
            how = (
                "lower bound: pairs of faults on different policies, checked with the "
                "evaluator; pairs on the same policy not counted"
            )
        return Capacity(
            total=total,
            by_operation={op: len(keys) for op, keys in by_op.items()},
            exact=all(len(c) == 1 for c in combos),
            per_seed=balanced_per_seed(per_slot, cycle),
            per_seed_by_operation={op: min(counts) for op, counts in per_slot.items()},
            how=how,
        )


def fingerprint() -> str:
    """What the counts depend on: the app version, the clusters, the fault code, and what
    decides validity (the probes and the evaluator's semantics, the generator's checks)."""
    package = Path(generator_module.__file__).parent
    files = [package / f"{name}.py" for name in PACKAGE_SOURCES]
    files += [Path(m.__file__) for m in (probes_module, policy_module)]
    sources = [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
    text = json.dumps([APP_VERSION, env_key(), *sources])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_capacity(level: int, counter: K8sCapacity, cache_dir: Path | None) -> Capacity:
    """`counter.level(level)`, remembered (pipeline.capacity.cached); the fault types and
    size class the generator draws are part of the name."""
    knobs = ""
    gen = getattr(counter, "gen", None)  # a bare counter only reads what is stored
    if gen is not None and (gen.faults is not None or gen.size is not None):
        chosen = json.dumps([sorted(gen.faults or []), gen.size])
        knobs = "-" + hashlib.sha256(chosen.encode()).hexdigest()[:8]
    name = f"capacity-{fingerprint()}-L{level}{knobs}"
    return cached(name, cache_dir, lambda: counter.level(level))
