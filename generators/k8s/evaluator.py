"""The pure-Python evaluator of one cluster's probes, for generation and capacity counting.

`Evaluator(spec)` holds the intended matrix of a cluster (clusters.ClusterSpec; Online
Boutique by default) and evaluates policies that differ from the intended ones in a few
places. Only pairs whose source, backend or DNS pod a changed policy selects (before or
after the change) are evaluated again: no other pair can change. Policies are named by
`metadata.name`, which is unique across the namespaces of every cluster here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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
from generators.k8s.clusters import ClusterSpec, boutique_cluster


class Evaluator:
    """The intended matrix of a cluster, and the matrix of policies that differ from the
    intended ones in a few places (see the module docstring)."""

    def __init__(self, spec: ClusterSpec | None = None) -> None:
        self.spec = spec or boutique_cluster()
        self.intended = self.spec.intended()
        self.by_name = {p["metadata"]["name"]: p for p in self.intended}
        if len(self.by_name) != len(self.intended):
            raise ValueError(f"{self.spec.name}: two intended policies share a name")
        base = view_from_objects([*self.spec.objects(), *self.intended])
        self.base = base
        self.pairs = probe_set(base)
        self.expected = matrix(base, self.pairs)
        dns = base.dns_pod()
        self.dns = dns.name if dns is not None else ""
        self.involving: dict[str, list[Any]] = {}  # pod name -> pairs it is an end of
        self.ends: dict[str, frozenset[str]] = {}  # pair key -> its source and target pods
        # (pod name, "source" or "target") -> the pairs it is that end of
        self.as_end: dict[tuple[str, str], list[Any]] = {}
        for pair in self.pairs:
            backend = base.endpoint(pair.namespace, pair.service) if not pair.target else None
            target = pair.target or (backend.name if backend else "")
            ends = {pair.source, target} - {""}
            self.ends[pair.key] = frozenset(ends)
            for pod in ends:
                self.involving.setdefault(pod, []).append(pair)
            self.as_end.setdefault((pair.source, "source"), []).append(pair)
            if target:
                self.as_end.setdefault((target, "target"), []).append(pair)

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

    def view(self, changed: Mapping[str, dict[str, Any]]) -> View:
        """The base cluster with `changed` in place of the intended policies of those names;
        what the base view knows of pods no changed policy selects is reused."""
        policies = [changed.get(p["metadata"]["name"], p) for p in self.intended]
        view = View(self.base.pods, self.base.namespaces, self.base.services, policies)
        touched = {pod for name, p in changed.items() for pod in self.selected(name, p)}
        view._endpoints.update(self.base._endpoints)  # Services and pods do not change
        view._isolating.update(
            {key: found for key, found in self.base._isolating.items() if key[0] not in touched}
        )
        return view

    def _ends(self, name: str, policy: dict[str, Any]) -> tuple[str, ...]:
        """Which ends of a pair a change of policy `name` can affect: its target's (an
        ingress change), its source's (egress), or both."""
        old, new = self.by_name[name]["spec"], policy["spec"]
        if any(old.get(k) != new.get(k) for k in ("podSelector", "policyTypes")):
            return ("source", "target")
        return tuple(
            end
            for end, key in (("source", "egress"), ("target", "ingress"))
            if old.get(key) != new.get(key)
        )

    def _redone(self, changed: Mapping[str, dict[str, Any]]) -> dict[str, bool]:
        """The pairs `changed` can affect, evaluated with it (pair key -> connects)."""
        view = self.view(changed)
        redo: set[Any] = set()
        for name, policy in changed.items():
            pods = self.selected(name, policy)
            if self.dns in pods:
                redo = set(self.pairs)
                break
            for end in self._ends(name, policy):
                for pod in pods:
                    redo.update(self.as_end.get((pod, end), ()))
        return {pair.key: connects(view, pair) for pair in redo}

    def actual(self, changed: Mapping[str, dict[str, Any]]) -> dict[str, bool]:
        return {**self.expected, **self._redone(changed)}

    def mismatches(self, changed: Mapping[str, dict[str, Any]]) -> list[str]:
        redone = self._redone(changed)
        return mismatches({k: self.expected[k] for k in redone}, redone)

    def at_dns(self, changed: Mapping[str, dict[str, Any]], keys: Iterable[str]) -> list[str]:
        """Which of the pairs `keys` fail at their DNS lookup with `changed`, sorted."""
        view = self.view(changed)
        wanted = set(keys)
        return sorted(p.key for p in self.pairs if p.key in wanted and blocked_at_dns(view, p))

    def mismatched(self, changed: Mapping[str, dict[str, Any]], keys: Iterable[str]) -> set[str]:
        """Which of the pairs `keys` mismatch with `changed` (evaluating only those)."""
        view = self.view(changed)
        wanted = set(keys)
        return {
            pair.key
            for pair in self.pairs
            if pair.key in wanted and connects(view, pair) != self.expected[pair.key]
        }
