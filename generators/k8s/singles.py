"""The single faults of a generated application, and draws of several on distinct policies.

`Singles(evaluator)` lists every candidate fault of every kind (hardened.py) on the
application's intended workload policies, in a fixed order, each with the policy it
leaves behind; whether one is observable on its own (some probe mismatches) is evaluated
when first asked and remembered. A query of a generated application puts each of its
faults on its own policy, so its faulted policies are exactly the singles it drew: the
generator draws them here (`draw`), and the capacity count (counting.py) walks the same
lists.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any

from generators.k8s.evaluator import Evaluator
from generators.k8s.faults import ABBREVIATIONS
from generators.k8s.hardened import FAMILIES

DENY_PREFIX = "default-deny-"  # the namespaces' default denies: never a fault's target


@dataclass(frozen=True)
class Single:
    index: int  # position in its kind's list
    kind: str  # abbreviation
    fault: dict[str, Any]  # description (ground truth)
    policy: dict[str, Any]  # the faulted policy

    @property
    def name(self) -> str:
        return self.policy["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.policy["metadata"]["namespace"]


class Singles:
    def __init__(self, evaluator: Evaluator) -> None:
        self.ev = evaluator
        self.app = evaluator.spec.app
        if self.app is None:
            raise ValueError("Singles are for generated applications (Online Boutique has none)")
        self.base = {
            name: p for name, p in evaluator.by_name.items() if not name.startswith(DENY_PREFIX)
        }
        self._by_kind: dict[str, list[Single]] = {}
        self._wrong: dict[tuple[str, int], frozenset[str]] = {}

    def of_kind(self, kind: str) -> list[Single]:
        """Every candidate of `kind` that changes its policy, in the family's order."""
        if kind not in self._by_kind:
            found = []
            listed = FAMILIES[ABBREVIATIONS[kind]](self.app, copy.deepcopy(self.base))
            for fault, change in listed:
                name = fault["policy"]
                policy = copy.deepcopy(self.base[name])
                change(policy["spec"])
                if policy["spec"] != self.base[name]["spec"]:
                    fault = {**fault, "namespace": policy["metadata"]["namespace"]}
                    found.append(Single(len(found), kind, fault, policy))
            self._by_kind[kind] = found
        return self._by_kind[kind]

    def wrong(self, single: Single) -> frozenset[str]:
        """The probes that mismatch with `single` alone."""
        key = (single.kind, single.index)
        if key not in self._wrong:
            self._wrong[key] = frozenset(self.ev.mismatches({single.name: single.policy}))
        return self._wrong[key]

    def observable(self, kind: str) -> list[Single]:
        """The singles of `kind` some probe sees (evaluates them all)."""
        return [s for s in self.of_kind(kind) if self.wrong(s)]

    def _pick(self, options: list[Single], rng: random.Random) -> Single | None:
        """One of `options` that some probe sees, uniformly (evaluating as few as needed)."""
        pool = list(options)
        while pool:
            single = pool.pop(rng.randrange(len(pool)))
            if self.wrong(single):
                return single
        return None

    def draw(
        self, combo: tuple[str, ...], rng: random.Random, min_namespaces: int = 1
    ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]] | str:
        """(faults, faulted policies by name) of one observable single per kind of `combo`,
        each on its own policy, the policies spanning `min_namespaces` namespaces; or why
        no such draw exists."""
        chosen: list[Single] = []
        for position, kind in enumerate(combo):
            taken = {s.name for s in chosen}
            spaces = {s.namespace for s in chosen}
            short = min_namespaces - len(spaces) >= len(combo) - position
            options = [
                s
                for s in self.of_kind(kind)
                if s.name not in taken and not (short and s.namespace in spaces)
            ]
            single = self._pick(options, rng)
            if single is None:
                return f"no observable {ABBREVIATIONS[kind]} fault on another policy"
            chosen.append(single)
        return [s.fault for s in chosen], {s.name: s.policy for s in chosen}
