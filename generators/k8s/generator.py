"""Validated queries per level: faults drawn with a seeded RNG, each query checked with the
pure-Python evaluator (the faults cause at least one mismatch; the oracle's repair,
applied with the API server's own JSON-patch code, restores the intended matrix; doing
nothing does not).
"""

from __future__ import annotations

import hashlib
import json
import random
import shlex
from collections.abc import Iterator
from typing import Any

from emulators.k8s import patch as patches
from emulators.k8s.policy import View, matrix, mismatches, probe_pairs, view_from_objects
from generators.k8s import boutique
from generators.k8s.faults import LEVELS, NoCandidate, inject, repair_command
from generators.k8s.prompt import task_prompt
from pipeline.core import Query
from pipeline.errors import ConfigError, DataError

MAX_DRAWS = 50


def env_key() -> str:
    """Fingerprint of the cluster objects and intended policies queries are generated on."""
    text = json.dumps([boutique.cluster_objects(), boutique.intended_policies()], sort_keys=True)
    return "online-boutique-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _view(policies: list[dict[str, Any]]) -> View:
    return view_from_objects([*boutique.cluster_objects(), *policies])


def _apply_oracle(faulted: list[dict[str, Any]], commands: list[str]) -> list[dict[str, Any]]:
    """The policies after the oracle's JSON patches, applied as the API server applies them."""
    by_name = {p["metadata"]["name"]: p for p in faulted}
    for command in commands:
        args = shlex.split(command)
        name, body = args[3], json.loads(args[args.index("-p") + 1])
        by_name[name] = patches.json_patch(by_name[name], body)
    return list(by_name.values())


class K8sQueryGenerator:
    def __init__(self, app_name: str = "k8s", max_turns: int = 10) -> None:
        self.app_name = app_name
        self.max_turns = max_turns
        self.intended = boutique.intended_policies()
        view = _view(self.intended)
        self.pairs = probe_pairs(view)
        self.expected = matrix(view, self.pairs)
        self.env_key = env_key()

    def generate(self, level: int, seed: int, count: int) -> Iterator[Query]:
        if level not in LEVELS:
            raise ConfigError(
                f"level={level} is not defined for k8s; choose one of {sorted(LEVELS)}"
            )
        for index in range(count):
            yield self.query(level, seed, index)

    def query(self, level: int, seed: int, index: int) -> Query:
        rng = random.Random(f"k8s/{level}/{seed}/{index}")
        combos = LEVELS[level]
        for _ in range(MAX_DRAWS):
            combo = combos[(index + seed) % len(combos)]
            try:
                faults, policies, touched = inject(self.intended, combo, rng)
            except NoCandidate:
                continue
            built = self._validated(faults, policies, touched)
            if built is not None:
                break
        else:
            raise DataError(f"no valid k8s query for level {level}, seed {seed}, index {index}")
        gt, wrong = built
        return Query(
            query_id=f"{self.app_name}-L{level}-s{seed}-{index:05d}",
            app=self.app_name,
            level=level,
            seed=seed,
            index=index,
            prompt=task_prompt(self.expected, wrong, self.max_turns),
            answer_type="connectivity",
            operation="+".join(combo),
            ground_truth=gt,
            env_key=self.env_key,
        )

    def _validated(self, faults, policies, touched) -> tuple[dict[str, Any], list[str]] | None:
        faulted = [policies.get(p["metadata"]["name"], p) for p in self.intended]
        wrong = mismatches(self.expected, matrix(_view(faulted), self.pairs))
        if not wrong:
            return None
        by_name = {p["metadata"]["name"]: p for p in self.intended}
        commands = [repair_command(by_name[name]) for name in touched]
        repaired = _apply_oracle(faulted, commands)
        if mismatches(self.expected, matrix(_view(repaired), self.pairs)):
            raise DataError(f"the oracle's repair of {faults} does not restore connectivity")
        gt = {
            "faults": faults,
            "policies": [policies[name] for name in touched],
            "expected": self.expected,
            "mismatches": wrong,
            "oracle_commands": commands,
        }
        return gt, wrong
