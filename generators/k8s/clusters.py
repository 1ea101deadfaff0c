"""The clusters k8s queries run on: Online Boutique, or a generated application.

A `ClusterSpec` is everything a query needs of its cluster: the API objects, the intended
policies, the size class, the application's namespaces and the `env_key` fingerprint a
query records. Online Boutique (generators/k8s/boutique.py) is the `medium` class of
levels 1-3 and has no `ref`; a generated application (callgraph.py, manifests.py) is named
by `ref = {"size": ..., "variant": ...}`, which a query's ground truth carries as
`cluster` so the environment can build it again.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from generators.k8s import boutique, callgraph, estate, manifests

BOUTIQUE_SIZE = "medium"  # Online Boutique's 12 workloads: the size class it stands for


@dataclass(frozen=True)
class ClusterSpec:
    name: str  # "online-boutique" or "generated-<size>-<variant>"
    size: str  # small, medium or large
    namespaces: tuple[str, ...]  # the application's own namespaces
    ref: dict[str, Any] | None  # what builds it again (None: Online Boutique)
    _objects: str = field(repr=False)  # JSON, so no caller can change the shared copy
    _intended: str = field(repr=False)
    app: callgraph.MicroApp | None = None  # the call graph of a generated application
    estate: Any = None  # estate.Estate of a level 6-8 application

    @property
    def writable(self) -> tuple[str, ...]:
        """The kinds clients may write in full: Services too on an estate."""
        return ("NetworkPolicy", "Service") if self.estate is not None else ("NetworkPolicy",)

    def objects(self) -> list[dict[str, Any]]:
        """The cluster's namespaces, workloads and Services (a fresh copy)."""
        return json.loads(self._objects)

    def intended(self) -> list[dict[str, Any]]:
        """The intended policies (a fresh copy)."""
        return json.loads(self._intended)

    @functools.cached_property
    def env_key(self) -> str:
        digest = hashlib.sha256(f"[{self._objects}, {self._intended}]".encode()).hexdigest()
        return f"{self.name}-{digest[:12]}"


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@functools.cache
def boutique_cluster() -> ClusterSpec:
    return ClusterSpec(
        "online-boutique",
        BOUTIQUE_SIZE,
        (boutique.NAMESPACE,),
        None,
        _json(boutique.cluster_objects()),
        _json(boutique.intended_policies()),
    )


@functools.cache
def generated_cluster(size: str, variant: int) -> ClusterSpec:
    app = callgraph.generated(size, variant)
    return ClusterSpec(
        f"generated-{size}-{variant}",
        size,
        app.namespaces,
        {"size": size, "variant": variant},
        _json(manifests.cluster_objects(app)),
        _json(manifests.intended_policies(app)),
        app,
    )


@functools.cache
def estate_cluster(size: str, variant: int) -> ClusterSpec:
    """An application of levels 6-8 (estate.py)."""
    es = estate.estate(size, variant)
    return ClusterSpec(
        f"estate-{size}-{variant}",
        size,
        es.app.namespaces,
        {"estate": size, "variant": variant},
        _json(estate.cluster_objects(es)),
        _json(estate.intended_policies(es)),
        es.app,
        es,
    )


def cluster_of(ground_truth: Mapping[str, Any]) -> ClusterSpec:
    """The cluster a query's ground truth names (Online Boutique when it names none)."""
    ref = ground_truth.get("cluster")
    if ref is None:
        return boutique_cluster()
    if "estate" in ref:
        return estate_cluster(str(ref["estate"]), int(ref["variant"]))
    return generated_cluster(str(ref["size"]), int(ref["variant"]))


def catalog(size: str) -> list[ClusterSpec]:
    """The generated applications of a size class."""
    return [generated_cluster(size, v) for v in range(callgraph.APPS_PER_SIZE)]
