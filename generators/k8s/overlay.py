"""States of a cluster as overlays on its intended objects, and their pure evaluation.

An overlay maps an object's key `(kind, namespace, name)` (namespace "" for Namespaces)
to the object as a state has it, or None where the state lacks it: a faulted or deleted
policy, one created in another namespace, a namespace's or a pod's labels, a Service. A
query's intent is the cluster's intended objects with its benign anomalies overlaid; its
state is the intent with its faults overlaid too.

`StateEvaluator(spec)` holds the intended matrix of an estate's probes (probes.py, with
the data plane's listening sockets modelled, so a Service whose targetPort meets no
listener fails as it does with packets) and evaluates an overlay by re-evaluating only
the probes it can change:

  policy      the probes whose source (egress) or target (ingress) the old or the new
              version selects; a policy selecting the DNS pod: every probe
  pod         the probes the pod is an end of (its labels decide what selects it, whom
              peers admit, and the Services it backs)
  namespace   the probes an end of which lives there (namespace labels only decide peers)
  Service     the probes to that Service; kube-dns: every probe
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from emulators.k8s.policy import (
    Pair,
    View,
    blocked_at_dns,
    connects,
    selects,
    view_from_objects,
)
from emulators.k8s.probes import listening, probe_set
from generators.k8s.clusters import ClusterSpec

Key = tuple[str, str, str]
Overlay = Mapping[Key, dict[str, Any] | None]
ALL = None  # what `affected` returns when every probe may change


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    namespace = "" if obj.get("kind") == "Namespace" else str(meta.get("namespace", "default"))
    return str(obj.get("kind")), namespace, str(meta.get("name"))


def key_text(key: Key) -> str:
    kind, namespace, name = key
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


class StateEvaluator:
    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        objects = [*spec.objects(), *spec.intended()]
        self.base: dict[Key, dict[str, Any]] = {key_of(o): o for o in objects}
        view = view_from_objects(objects)
        self.pairs = probe_set(view)
        self.listens = {k: frozenset(v) for k, v in listening(view, self.pairs).items()}
        view.listens = self.listens
        self.view = view
        self.keys = [p.key for p in self.pairs]
        self.expected = {p.key: connects(view, p) for p in self.pairs}
        dns = view.dns_pod()
        self.dns = dns.name if dns is not None else ""
        self.by_key = {p.key: p for p in self.pairs}
        self.as_end: dict[tuple[str, str], list[Pair]] = {}
        self.to_service: dict[tuple[str, str], list[Pair]] = {}
        self.ends: dict[str, frozenset[str]] = {}
        for pair in self.pairs:
            backend = view.endpoint(pair.namespace, pair.service) if not pair.target else None
            target = pair.target or (backend.name if backend else "")
            self.ends[pair.key] = frozenset({pair.source, target} - {""})
            self.as_end.setdefault((pair.source, "source"), []).append(pair)
            if target:
                self.as_end.setdefault((target, "target"), []).append(pair)
            if not pair.target:
                self.to_service.setdefault((pair.namespace, pair.service), []).append(pair)
        self.pods_in: dict[str, list[str]] = {}
        for pod in view.pods.values():
            self.pods_in.setdefault(pod.namespace, []).append(pod.name)
        self.pod_keys = {("Pod", p.namespace, p.name): p.name for p in view.pods.values()}

    # -- views -----------------------------------------------------------------------------
    def view_of(self, overlay: Overlay) -> View:
        """The intended cluster with `overlay` in place (memos of untouched pods reused)."""
        base = self.view
        pods, namespaces, services = dict(base.pods), dict(base.namespaces), dict(base.services)
        policies = []
        for policy in base.policies:
            key = key_of(policy)
            if key in overlay:
                if overlay[key] is not None:
                    policies.append(overlay[key])
            else:
                policies.append(policy)
        added = [
            obj
            for key, obj in overlay.items()
            if key[0] == "NetworkPolicy" and obj is not None and key not in self.base
        ]
        policies += added
        touched: set[str] = set()
        for key, obj in overlay.items():
            kind, namespace, name = key
            if kind == "Pod":
                if obj is None:
                    raise ValueError(f"an overlay may not delete pod {name}")
                pods[name] = _pod_info(obj, base.pods[name])
                touched.add(name)
            elif kind == "Namespace":
                namespaces[name] = dict(((obj or {}).get("metadata") or {}).get("labels") or {})
            elif kind == "Service":
                if obj is None:
                    services.pop((namespace, name), None)
                else:
                    services[(namespace, name)] = _service_info(obj)
            elif kind == "NetworkPolicy":
                touched |= self._selected(key, obj)
        view = View(pods, namespaces, services, policies, listens=self.listens)
        if not any(k[0] in ("Pod", "Service") for k in overlay):
            view._endpoints.update(base._endpoints)
        view._isolating.update({k: v for k, v in base._isolating.items() if k[0] not in touched})
        return view

    def _selected(self, key: Key, new: Mapping[str, Any] | None) -> set[str]:
        """Pods the intended version of policy `key` or `new` selects."""
        old = self.base.get(key)
        return {
            pod.name
            for pod in self.view.pods.values()
            if (old is not None and selects(old, pod)) or (new is not None and selects(new, pod))
        }

    # -- which probes an overlay can change ------------------------------------------------
    def affected(self, overlay: Overlay) -> set[Pair] | None:
        """The probes `overlay` can change (ALL: every probe)."""
        found: set[Pair] = set()
        for key, obj in overlay.items():
            one = self._affected_by(key, obj)
            if one is ALL:
                return ALL
            found |= one
        return found

    def _affected_by(self, key: Key, obj: Mapping[str, Any] | None) -> set[Pair] | None:
        kind, namespace, name = key
        if kind == "NetworkPolicy":
            pods = self._selected(key, obj)
            if self.dns in pods:
                return ALL
            old = self.base.get(key)
            ends = _ends(old, obj)
            return {p for pod in pods for end in ends for p in self.as_end.get((pod, end), ())}
        if kind == "Pod":
            if name == self.dns:
                return ALL
            out = self._involving([name])
            labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
            for (ns, svc), info in self.view.services.items():
                if ns == namespace and _selects(info.selector, labels):
                    out |= set(self.to_service.get((ns, svc), ()))
            return out
        if kind == "Namespace":
            if name == "kube-system":
                return ALL
            return self._involving(self.pods_in.get(name, []))
        if kind == "Service":
            if (namespace, name) == ("kube-system", "kube-dns"):
                return ALL
            out = set(self.to_service.get((namespace, name), ()))
            new = _service_info(obj) if obj is not None else None
            if new is not None:
                backend = self.view_of({key: obj}).endpoint(namespace, name)
                old = self.view.endpoint(namespace, name)
                if backend is not None and backend != old:
                    return ALL  # a Service moved to another pod: its pairs are indexed by the old
            return out
        raise ValueError(f"an overlay may not hold a {kind}")

    def _involving(self, pods: Iterable[str]) -> set[Pair]:
        out: set[Pair] = set()
        for pod in pods:
            out.update(self.as_end.get((pod, "source"), ()))
            out.update(self.as_end.get((pod, "target"), ()))
        return out

    # -- evaluation ------------------------------------------------------------------------
    def outcome(self, overlay: Overlay) -> dict[str, bool]:
        """Probe key -> connects, for the probes `overlay` can change (all of them when
        it can change every one)."""
        redo = self.affected(overlay)
        pairs = self.pairs if redo is ALL else sorted(redo, key=lambda p: p.key)
        view = self.view_of(overlay)
        return {p.key: connects(view, p) for p in pairs}

    def expected_for(self, intent: Overlay) -> dict[str, bool]:
        """Every probe's intended result when the intent is the cluster's with `intent`."""
        return {**self.expected, **self.outcome(intent)}

    def mismatches(
        self,
        intent: Overlay,
        state: Mapping[Key, Any],
        expected: Mapping[str, bool] | None = None,
    ) -> list[str]:
        """The probes whose result with `state` (the intent's overlay and more) differs
        from the intent's (`expected`, when the caller has it), sorted."""
        if any(key not in state or state[key] != obj for key, obj in intent.items()):
            raise ValueError("a state overlay must hold its intent's")
        if expected is None:
            expected = self.expected_for(intent)
        got = self.outcome(state)
        return sorted(k for k, v in got.items() if v != expected[k])

    def at_dns(self, state: Overlay, keys: Iterable[str]) -> list[str]:
        """Which of the probes `keys` fail at their DNS lookup with `state`, sorted."""
        view = self.view_of(state)
        return sorted(k for k in keys if blocked_at_dns(view, self.by_key[k]))


def _ends(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Which ends of a probe a policy change can affect."""
    if old is None or new is None:
        return ("source", "target")
    a, b = old.get("spec") or {}, new.get("spec") or {}
    if any(a.get(k) != b.get(k) for k in ("podSelector", "policyTypes")):
        return ("source", "target")
    if (old.get("metadata") or {}).get("namespace") != (new.get("metadata") or {}).get("namespace"):
        return ("source", "target")
    return tuple(
        end
        for end, field in (("source", "egress"), ("target", "ingress"))
        if a.get(field) != b.get(field)
    )


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _pod_info(obj: Mapping[str, Any], base: Any) -> Any:
    labels = dict((obj.get("metadata") or {}).get("labels") or {})
    return type(base)(base.name, base.namespace, labels, base.ip, base.ports)


def _service_info(obj: Mapping[str, Any]) -> Any:
    view = view_from_objects([obj])
    return next(iter(view.services.values()))
