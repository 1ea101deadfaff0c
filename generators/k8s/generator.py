"""Validated queries per level: faults drawn with a seeded RNG, each query checked with the
pure-Python evaluator (the faults cause at least one mismatch; no fault masks another; the
oracle's repair, applied with the API server's own JSON-patch code, restores the intended
matrix; doing nothing does not).

Levels 1-3 run on Online Boutique (the `medium` size class; faults from mistakes.py, a
later fault acting on the policies as earlier ones left them). Levels 4 and 5, and levels
1-3 at another `size`, run on a generated application of the catalogue (clusters.py; a
size class drawn per query unless `size` fixes one), each fault on its own policy and
observable on its own (singles.py; hardened.py's families).

Query `index` of (level, seed) has fault combination `combos[(index + seed) % k]` (the
level's combinations, or those `faults` selects); with failure-driven `weights` (one per
operation label) the combination is drawn with `querygen.weighted_choice` instead.

A query's key is the faulted cluster: the specs of the policies that differ from the
intended ones (`state_key`), and, on a generated application, which one it is. What the
agent is told (the mismatching pairs) and what it must find (the faulted specs) both
follow from it; fault descriptions do not enter it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from emulators.k8s import patch as patches
from generators.k8s import boutique
from generators.k8s.callgraph import APPS_PER_SIZE, SIZES
from generators.k8s.clusters import (
    BOUTIQUE_SIZE,
    ClusterSpec,
    boutique_cluster,
    generated_cluster,
)
from generators.k8s.evaluator import Evaluator
from generators.k8s.faults import (
    MIN_NAMESPACES,
    NoCandidate,
    combos,
    inject,
    repair_command,
)
from generators.k8s.prompt import task_prompt
from generators.k8s.singles import Singles
from pipeline.api import (
    KeyTracker,
    Query,
    QueryGenerationError,
    canonical_json,
    query_id,
    query_key,
    query_rng,
    stamp,
    weighted_choice,
)

MAX_DRAWS = 50
BOUTIQUE_LEVELS = (1, 2, 3)  # the levels Online Boutique serves (at its size class)

__all__ = ["Evaluator", "K8sQueryGenerator", "env_key", "spec_digest", "state_key"]


def env_key() -> str:
    """Fingerprint of the cluster objects and intended policies of Online Boutique."""
    text = json.dumps([boutique.cluster_objects(), boutique.intended_policies()], sort_keys=True)
    return "online-boutique-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def spec_digest(spec: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(spec).encode()).hexdigest()[:16]


def state_key(changed: Mapping[str, Mapping[str, Any]], cluster: ClusterSpec | None = None) -> str:
    """The key of a faulted cluster from the policies whose specs differ from the intended
    ones (policy name -> policy); a generated application's name enters it too."""
    specs = {name: spec_digest(p["spec"]) for name, p in changed.items()}
    if cluster is None or cluster.ref is None:
        return query_key(specs)
    return query_key({"cluster": cluster.env_key, "policies": specs})


def _apply_oracle(faulted: list[dict[str, Any]], commands: list[str]) -> list[dict[str, Any]]:
    """The policies after the oracle's JSON patches, applied as the API server applies them."""
    by_name = {p["metadata"]["name"]: p for p in faulted}
    for command in commands:
        args = shlex.split(command)
        name, body = args[3], json.loads(args[args.index("-p") + 1])
        by_name[name] = patches.json_patch(by_name[name], body)
    return list(by_name.values())


def masked(ev: Evaluator, changed: dict[str, dict[str, Any]], wrong: set[str]) -> str | None:
    """Why one fault hides another, or None. Whatever faulted policies an agent repairs,
    in whatever order, a repair must reveal no mismatch the state before it did not
    show: else an agent that repairs the one fault it can see (or the oracle, in some
    order) turns a matching pair into a mismatch and is scored unsafe for it. So the
    mismatches must shrink along every chain of the subset lattice."""
    names = sorted(changed)
    found = {(): wrong}  # repaired policies -> the mismatches left
    for size in range(1, len(names)):
        for repaired in itertools.combinations(names, size):
            left = {n: changed[n] for n in names if n not in repaired}
            now = set(ev.mismatches(left))
            found[repaired] = now
            for before in itertools.combinations(repaired, size - 1):
                revealed = now - found[before]
                if revealed:
                    return (
                        f"repairing {', '.join(repaired)} reveals {sorted(revealed)[0]}: "
                        "one fault masks another"
                    )
    return None


Drawn = tuple[list[dict[str, Any]], dict[str, dict[str, Any]], list[str], dict[str, Any]]


class K8sQueryGenerator:
    def __init__(
        self,
        app_name: str = "k8s",
        max_turns: int = 10,
        capacity: Callable[[int], object] | None = None,
        *,
        faults: Sequence[str] | None = None,
        size: str | None = None,
    ) -> None:
        self.app_name = app_name
        self.max_turns = max_turns
        self.faults = tuple(faults) if faults else None
        self.size = size
        self.evaluator = Evaluator()  # Online Boutique's
        self.intended = self.evaluator.intended
        self.pairs = self.evaluator.pairs
        self.expected = self.evaluator.expected
        self.env_key = self.evaluator.spec.env_key
        self._capacity = capacity
        self._evaluators: dict[str, Evaluator] = {self.env_key: self.evaluator}
        self._singles: dict[str, Singles] = {}

    # -- clusters ------------------------------------------------------------------------
    def evaluator_for(self, spec: ClusterSpec) -> Evaluator:
        if spec.env_key not in self._evaluators:
            self._evaluators[spec.env_key] = Evaluator(spec)
        return self._evaluators[spec.env_key]

    def singles_for(self, spec: ClusterSpec) -> Singles:
        if spec.env_key not in self._singles:
            self._singles[spec.env_key] = Singles(self.evaluator_for(spec))
        return self._singles[spec.env_key]

    def sizes(self, level: int) -> tuple[str, ...]:
        """The size classes queries of `level` are drawn at."""
        if self.size is not None:
            return (self.size,)
        return (BOUTIQUE_SIZE,) if level in BOUTIQUE_LEVELS else SIZES

    def uses_boutique(self, level: int) -> bool:
        return level in BOUTIQUE_LEVELS and self.sizes(level) == (BOUTIQUE_SIZE,)

    def cluster(self, level: int, rng: random.Random) -> ClusterSpec:
        """The cluster of one query: Online Boutique, or a generated application of a size
        class (drawn when several are in play) and of the catalogue."""
        if self.uses_boutique(level):
            return boutique_cluster()
        sizes = self.sizes(level)
        size = sizes[rng.randrange(len(sizes))] if len(sizes) > 1 else sizes[0]
        return generated_cluster(size, rng.randrange(APPS_PER_SIZE))

    def combos(self, level: int) -> list[tuple[str, ...]]:
        return combos(level, self.faults)

    # -- queries -------------------------------------------------------------------------
    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        tracker = self.tracker(level, seed, allow_repeats)
        for index in range(count):
            yield self.query(level, seed, index, tracker, weights)

    def tracker(self, level: int, seed: int, allow_repeats: bool = False) -> KeyTracker:
        return KeyTracker(
            self.app_name,
            level,
            seed,
            allow_repeats=allow_repeats,
            # The app's capacity words a CapacityExhausted error; a bare generator has none.
            capacity=None if self._capacity is None else lambda: self._capacity(level),
        )

    def query(
        self,
        level: int,
        seed: int,
        index: int,
        tracker: KeyTracker | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> Query:
        """Query `index` of (level, seed), given the keys earlier ones took (`tracker`)."""
        tracker = tracker or self.tracker(level, seed)
        rng = query_rng(seed, level, index)
        options = self.combos(level)
        if weights is None:
            combo = options[(index + seed) % len(options)]
        else:
            combo = weighted_choice(rng, options, weights, "+".join)
        spec = self.cluster(level, rng)
        ev = self.evaluator_for(spec)

        def draw() -> tuple[str, Drawn] | str:
            if spec.ref is None:
                try:
                    faults, policies, touched = inject(self.intended, combo, rng)
                except NoCandidate as err:
                    return f"no candidate for {'+'.join(combo)}: {err}"
            else:
                drawn = self.singles_for(spec).draw(combo, rng, MIN_NAMESPACES.get(level, 1))
                if isinstance(drawn, str):
                    return drawn
                faults, policies = drawn
                touched = sorted(policies)
            changed = ev.changed(policies)
            if not changed:
                return "the faults leave every policy as intended"
            return state_key(changed, spec), (faults, policies, touched, changed)

        def build(drawn: Drawn) -> tuple[dict[str, Any], list[str]] | str:
            built = self._validated(ev, *drawn)
            return "the faults change no probed pair" if built is None else built

        taken = tracker.take(index, draw, build, max_draws=MAX_DRAWS)
        gt, wrong = taken.value
        cluster = None if spec.ref is None else spec
        query = Query(
            query_id=query_id(self.app_name, level, seed, index),
            app=self.app_name,
            level=level,
            seed=seed,
            index=index,
            prompt=task_prompt(ev.expected, wrong, self.max_turns, gt["blocked_at_dns"], cluster),
            answer_type="connectivity",
            operation="+".join(combo),
            ground_truth=gt,
            env_key=spec.env_key,
            size=spec.size,
        )
        return stamp(query, taken)

    def _validated(
        self, ev: Evaluator, faults, policies, touched, changed
    ) -> tuple[dict[str, Any], list[str]] | str | None:
        wrong = ev.mismatches(changed)
        if not wrong:
            return None
        hidden = masked(ev, changed, set(wrong))
        if hidden:
            return hidden
        faulted = [policies.get(p["metadata"]["name"], p) for p in ev.intended]
        commands = [repair_command(ev.by_name[name]) for name in touched]
        repaired = {p["metadata"]["name"]: p for p in _apply_oracle(faulted, commands)}
        left = ev.changed({n: p for n, p in repaired.items() if n in policies})
        if left or ev.mismatches(left):
            raise QueryGenerationError(
                f"the oracle's repair of {faults} does not restore the intended policies "
                f"({sorted(left)} still differ)"
            )
        gt: dict[str, Any] = {
            "faults": faults,
            "policies": [policies[name] for name in touched],
            "expected": ev.expected,
            "mismatches": wrong,
            "blocked_at_dns": ev.at_dns(changed, wrong),
            "oracle": commands,
        }
        if ev.spec.ref is not None:
            gt["cluster"] = ev.spec.ref
        return gt, wrong
