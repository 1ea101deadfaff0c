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
from generators.k8s import APP_VERSION
from generators.k8s import faults as faults_module
from generators.k8s import generator as generator_module
from generators.k8s import mistakes as mistakes_module
from generators.k8s.faults import LEVELS, candidates, workload_policies
from generators.k8s.generator import Evaluator, env_key, spec_digest
from pipeline.capacity import Capacity, cached
from pipeline.querygen import SEED_SLOTS, key_slot, query_key

log = logging.getLogger(__name__)


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

    def __init__(self, evaluator: Evaluator | None = None) -> None:
        self.ev = evaluator or Evaluator()
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
            self._levels[level] = self._compute(level)
        return self._levels[level]

    def _compute(self, level: int) -> Capacity:
        singles = self.singles()
        cycle = ["+".join(c) for c in LEVELS[level]]
        by_op: dict[str, set[str]] = {}
        for combo, op in zip(LEVELS[level], cycle, strict=True):
            if level == 1:
                by_op[op] = {s.key for s in singles[combo[0]]}
            else:
                by_op[op] = self._pair_keys(singles[combo[0]], singles[combo[1]])
        per_slot = {op: _slots(keys) for op, keys in by_op.items()}
        total = len(set().union(*by_op.values()))
        if level == 1:
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
            exact=level == 1,
            per_seed=balanced_per_seed(per_slot, cycle),
            per_seed_by_operation={op: min(counts) for op, counts in per_slot.items()},
            how=how,
        )


def fingerprint() -> str:
    """What the counts depend on: the app version, the cluster, the fault code, and what
    decides validity (the probes and the evaluator's semantics, the generator's checks)."""
    modules = (faults_module, mistakes_module, probes_module, policy_module, generator_module)
    sources = [hashlib.sha256(Path(m.__file__).read_bytes()).hexdigest() for m in modules]
    text = json.dumps([APP_VERSION, env_key(), *sources])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_capacity(level: int, counter: K8sCapacity, cache_dir: Path | None) -> Capacity:
    """`counter.level(level)`, remembered (pipeline.capacity.cached)."""
    return cached(f"capacity-{fingerprint()}-L{level}", cache_dir, lambda: counter.level(level))
