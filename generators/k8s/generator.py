"""Validated queries per level: faults drawn with a seeded RNG, each query checked with the
pure-Python evaluator (the faults cause at least one mismatch; the oracle's repair,
applied with the API server's own JSON-patch code, restores the intended matrix; doing
nothing does not).

A query's key is the faulted cluster: the specs of the policies that differ from the
intended ones (`state_key`). What the agent is told (the mismatching pairs) and what it
must find (the faulted specs) both follow from it; fault descriptions do not enter it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from emulators.k8s import patch as patches
from emulators.k8s.policy import (
    View,
    blocked_at_dns,
    connects,
    matrix,
    mismatches,
    selects,
    view_from_objects,
)
from emulators.k8s.probes import probe_set
from generators.k8s import boutique
from generators.k8s.faults import LEVELS, NoCandidate, inject, repair_command
from generators.k8s.prompt import task_prompt
from pipeline.core import Query, canonical_json
from pipeline.errors import ConfigError, QueryGenerationError
from pipeline.querygen import KeyTracker, query_id, query_key, query_rng, stamp

MAX_DRAWS = 50


def env_key() -> str:
    """Fingerprint of the cluster objects and intended policies queries are generated on."""
    text = json.dumps([boutique.cluster_objects(), boutique.intended_policies()], sort_keys=True)
    return "online-boutique-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def spec_digest(spec: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(spec).encode()).hexdigest()[:16]


def state_key(changed: Mapping[str, Mapping[str, Any]]) -> str:
    """The key of a faulted cluster from the policies whose specs differ from the intended
    ones (policy name -> policy)."""
    return query_key({name: spec_digest(p["spec"]) for name, p in changed.items()})


class Evaluator:
    """The intended matrix, and the matrix of policies that differ from the intended ones
    in a few places. Only pairs whose source, backend or DNS pod a changed policy selects
    (before or after the change) are evaluated again: no other pair can change."""

    def __init__(self) -> None:
        self.intended = boutique.intended_policies()
        self.by_name = {p["metadata"]["name"]: p for p in self.intended}
        base = view_from_objects([*boutique.cluster_objects(), *self.intended])
        self.base = base
        self.pairs = probe_set(base)
        self.expected = matrix(base, self.pairs)
        dns = base.dns_pod()
        self.dns = dns.name if dns is not None else ""
        self.involving: dict[str, list[Any]] = {}  # pod name -> pairs it is an end of
        self.ends: dict[str, frozenset[str]] = {}  # pair key -> its source and target pods
        for pair in self.pairs:
            backend = base.endpoint(pair.namespace, pair.service) if not pair.target else None
            ends = {pair.source, pair.target or (backend.name if backend else "")} - {""}
            self.ends[pair.key] = frozenset(ends)
            for pod in ends:
                self.involving.setdefault(pod, []).append(pair)

    def changed(self, policies: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The policies among `policies` whose spec differs from the intended one."""
        return {
            name: p
            for name, p in sorted(policies.items())
            if p["spec"] != self.by_name[name]["spec"]
        }

    def selected(self, name: str, policy: dict[str, Any]) -> set[str]:
        """The pods `policy` (a changed version of policy `name`) or the intended one select:
        the only ends of pairs the change can affect (all pairs, if the DNS pod is one)."""
        return {
            pod.name
            for pod in self.base.pods.values()
            if selects(policy, pod) or selects(self.by_name[name], pod)
        }

    def actual(self, changed: Mapping[str, dict[str, Any]]) -> dict[str, bool]:
        policies = [changed.get(p["metadata"]["name"], p) for p in self.intended]
        view = View(self.base.pods, self.base.namespaces, self.base.services, policies)
        pods = {pod for name, policy in changed.items() for pod in self.selected(name, policy)}
        out = dict(self.expected)
        redo = (
            self.pairs
            if self.dns in pods
            else {p for pod in pods for p in self.involving.get(pod, [])}
        )
        for pair in redo:
            out[pair.key] = connects(view, pair)
        return out

    def mismatches(self, changed: Mapping[str, dict[str, Any]]) -> list[str]:
        return mismatches(self.expected, self.actual(changed))

    def at_dns(self, changed: Mapping[str, dict[str, Any]], keys: Iterable[str]) -> list[str]:
        """Which of the pairs `keys` fail at their DNS lookup with `changed`, sorted."""
        policies = [changed.get(p["metadata"]["name"], p) for p in self.intended]
        view = View(self.base.pods, self.base.namespaces, self.base.services, policies)
        wanted = set(keys)
        return sorted(p.key for p in self.pairs if p.key in wanted and blocked_at_dns(view, p))

    def mismatched(self, changed: Mapping[str, dict[str, Any]], keys: Iterable[str]) -> set[str]:
        """Which of the pairs `keys` mismatch with `changed` (evaluating only those)."""
        policies = [changed.get(p["metadata"]["name"], p) for p in self.intended]
        view = View(self.base.pods, self.base.namespaces, self.base.services, policies)
        wanted = set(keys)
        return {
            pair.key
            for pair in self.pairs
            if pair.key in wanted and connects(view, pair) != self.expected[pair.key]
        }


def _apply_oracle(faulted: list[dict[str, Any]], commands: list[str]) -> list[dict[str, Any]]:
    """The policies after the oracle's JSON patches, applied as the API server applies them."""
    by_name = {p["metadata"]["name"]: p for p in faulted}
    for command in commands:
        args = shlex.split(command)
        name, body = args[3], json.loads(args[args.index("-p") + 1])
        by_name[name] = patches.json_patch(by_name[name], body)
    return list(by_name.values())


class K8sQueryGenerator:
    def __init__(
        self,
        app_name: str = "k8s",
        max_turns: int = 10,
        capacity: Callable[[int], object] | None = None,
    ) -> None:
        self.app_name = app_name
        self.max_turns = max_turns
        self.evaluator = Evaluator()
        self.intended = self.evaluator.intended
        self.pairs = self.evaluator.pairs
        self.expected = self.evaluator.expected
        self.env_key = env_key()
        self._capacity = capacity

    def generate(
        self, level: int, seed: int, count: int, *, allow_repeats: bool = False
    ) -> Iterator[Query]:
        if level not in LEVELS:
            raise ConfigError(
                f"level={level} is not defined for k8s; choose one of {sorted(LEVELS)}"
            )
        tracker = self.tracker(level, seed, allow_repeats)
        for index in range(count):
            yield self.query(level, seed, index, tracker)

    def tracker(self, level: int, seed: int, allow_repeats: bool = False) -> KeyTracker:
        return KeyTracker(
            self.app_name,
            level,
            seed,
            allow_repeats=allow_repeats,
            capacity=lambda: self.capacity(level),
        )

    def capacity(self, level: int) -> object:
        """The app's capacity of `level` (counted here when the app gave no way to)."""
        if self._capacity is None:
            from generators.k8s.capacity import K8sCapacity  # it imports this module

            self._capacity = K8sCapacity(self.evaluator).level
        return self._capacity(level)

    def query(self, level: int, seed: int, index: int, tracker: KeyTracker | None = None) -> Query:
        """Query `index` of (level, seed), given the keys earlier ones took (`tracker`)."""
        tracker = tracker or self.tracker(level, seed)
        rng = query_rng(seed, level, index)
        combos = LEVELS[level]
        combo = combos[(index + seed) % len(combos)]

        def draw() -> tuple[str, tuple[Any, ...]] | str:
            try:
                faults, policies, touched = inject(self.intended, combo, rng)
            except NoCandidate as err:
                return f"no candidate for {'+'.join(combo)}: {err}"
            changed = self.evaluator.changed(policies)
            if not changed:
                return "the faults leave every policy as intended"
            return state_key(changed), (faults, policies, touched, changed)

        def build(drawn: tuple[Any, ...]) -> tuple[dict[str, Any], list[str]] | str:
            built = self._validated(*drawn)
            return "the faults change no probed pair" if built is None else built

        taken = tracker.take(index, draw, build, max_draws=MAX_DRAWS)
        gt, wrong = taken.value
        query = Query(
            query_id=query_id(self.app_name, level, seed, index),
            app=self.app_name,
            level=level,
            seed=seed,
            index=index,
            prompt=task_prompt(self.expected, wrong, self.max_turns, gt["blocked_at_dns"]),
            answer_type="connectivity",
            operation="+".join(combo),
            ground_truth=gt,
            env_key=self.env_key,
        )
        return stamp(query, taken)

    def _masked(self, changed: dict[str, dict[str, Any]], wrong: set[str]) -> str | None:
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
                now = set(self.evaluator.mismatches(left))
                found[repaired] = now
                for before in itertools.combinations(repaired, size - 1):
                    revealed = now - found[before]
                    if revealed:
                        return (
                            f"repairing {', '.join(repaired)} reveals {sorted(revealed)[0]}: "
                            "one fault masks another"
                        )
        return None

    def _validated(
        self, faults, policies, touched, changed
    ) -> tuple[dict[str, Any], list[str]] | str | None:
        wrong = self.evaluator.mismatches(changed)
        if not wrong:
            return None
        hidden = self._masked(changed, set(wrong))
        if hidden:
            return hidden
        faulted = [policies.get(p["metadata"]["name"], p) for p in self.intended]
        by_name = self.evaluator.by_name
        commands = [repair_command(by_name[name]) for name in touched]
        repaired = {p["metadata"]["name"]: p for p in _apply_oracle(faulted, commands)}
        left = self.evaluator.changed({n: p for n, p in repaired.items() if n in policies})
        if left or self.evaluator.mismatches(left):
            raise QueryGenerationError(
                f"the oracle's repair of {faults} does not restore the intended policies "
                f"({sorted(left)} still differ)"
            )
        gt = {
            "faults": faults,
            "policies": [policies[name] for name in touched],
            "expected": self.expected,
            "mismatches": wrong,
            "blocked_at_dns": self.evaluator.at_dns(changed, wrong),
            "oracle": commands,
        }
        return gt, wrong
