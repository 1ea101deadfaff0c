"""What the k8s App does differently at levels 6-8 (tiers.py): its settings' checks, the
objects a query's cluster is reset to, its capacity, and its oracle (the fixes for
mitigate; for detect and localize, the commands that show each cause, then the answer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from generators.k8s.clusters import ClusterSpec
from generators.k8s.config import K8sConfig
from generators.k8s.kinds import KINDS
from pipeline.api import Capacity, ConfigError, Query


def check_tier_config(cfg: K8sConfig, level: int, weights: Mapping[str, float] | None) -> None:
    """Refuse the settings that mean nothing at levels 6-8, naming them."""
    if cfg.faults is not None:
        raise ConfigError(
            f"app.faults selects the fault types of levels 1-5; level {level} draws from the "
            "whole catalogue of kinds (README: k8s levels 6-8); leave app.faults null"
        )
    if weights:
        raise ConfigError(
            f"failure-driven weights (focus.results) aim levels 1-5; level {level} balances "
            "its kinds and strata itself"
        )


def state_objects(
    spec: ClusterSpec, objects: Sequence[Sequence[Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the policies, the other objects replacing the estate's) of a query's state:
    `objects` is its ground truth's `[[kind, namespace, name], object or None]` list."""
    overlay = {tuple(key): obj for key, obj in objects}
    policies = []
    for policy in spec.intended():
        key = ("NetworkPolicy", policy["metadata"]["namespace"], policy["metadata"]["name"])
        if key in overlay:
            if overlay[key] is not None:
                policies.append(overlay.pop(key))
            else:
                overlay.pop(key)
        else:
            policies.append(policy)
    added = [o for k, o in overlay.items() if k[0] == "NetworkPolicy" and o is not None]
    others = [o for k, o in overlay.items() if k[0] != "NetworkPolicy"]
    if any(o is None for o in others):
        raise ConfigError("a level 6-8 query may not delete a namespace, pod or Service")
    return [*policies, *added], others


def tier_capacity(level: int) -> Capacity:
    """Not counted: a bound far above any run's request (the operations are the kinds)."""
    return Capacity(
        None,
        {**{k.id: None for k in KINDS}, "healthy": None},
        False,
        None,
        how=(
            f"not counted: level {level} draws 1-4 faults from the 1,300-3,700 single faults "
            "of each of its estates (and benign anomalies on top), far more distinct queries "
            "than a run asks"
        ),
    )


def tier_oracle(query: Query, turn: int) -> str:
    gt = query.ground_truth
    if query.task == "mitigate":
        commands = gt["oracle"]
        command = commands[min(turn, len(commands)) - 1]
        return json.dumps({"command": command["command"], "stdin": command["stdin"] or None})
    looks = gt["evidence"]
    if turn <= len(looks):
        return json.dumps({"command": looks[turn - 1]})
    answer: dict[str, Any] = {"healthy": gt["healthy"]}
    if query.task == "localize":
        answer["causes"] = gt["causes"]
    return json.dumps({"answer": answer})
