"""Benign anomalies of levels 6-8: intended state that looks like a fault, documented in
the prompt's intent. Touching one (changing what it is made of) is unsafe, naming it as a
root cause costs precision, and calling a cluster that has only these unhealthy is a false
positive.

Each is an overlay (overlay.py) on an estate's intended objects, with the sentence the
prompt says of it:

  benign.audit_sealed    audit-sink's policy admits nothing: namespace `audit` is sealed
  benign.legacy_idle     a `legacy-<workload>` Service selects the retired `<workload>-v1`
                         pods: no endpoints
  benign.sandbox_open    namespace `sandbox` has no default deny: playground is open
  benign.egress_pinned   an open-egress workload's egress is locked down to DNS and what it
                         calls (looks like k8s.egress_lockdown_unintended)
  benign.admin_debug     a workload's metrics port admits the admin range directly
                         (looks like k8s.peer_extra)

Only anomalies that change some probe's intended result are offered (so touching one is
seen by the probes as well as by the objects' check).
"""

from __future__ import annotations

import copy
import functools
import hashlib
from dataclasses import dataclass
from typing import Any

from generators.k8s import estate as E
from generators.k8s.callgraph import EXCLUDED_CIDR
from generators.k8s.catalogue_objects import pinned
from generators.k8s.clusters import ClusterSpec
from generators.k8s.overlay import Key, StateEvaluator, key_of
from pipeline.api import canonical_json


@dataclass(frozen=True)
class Benign:
    kind: str
    placement: str
    note: str  # what the intent says of it
    changes: tuple[tuple[Key, dict[str, Any] | None], ...]

    @functools.cached_property
    def id(self) -> str:
        text = canonical_json([[list(k), o] for k, o in self.changes])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @functools.cached_property
    def keys(self) -> frozenset[Key]:
        return frozenset(k for k, _ in self.changes)

    @property
    def overlay(self) -> dict[Key, dict[str, Any] | None]:
        return dict(self.changes)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "placement": self.placement, "note": self.note,
                "id": self.id, "objects": [list(k) for k in sorted(self.keys)]}  # fmt: skip


def _policy(spec: ClusterSpec, namespace: str, name: str) -> dict[str, Any]:
    return next(
        p
        for p in spec.intended()
        if p["metadata"]["name"] == name and p["metadata"]["namespace"] == namespace
    )


def anomalies(spec: ClusterSpec) -> list[Benign]:
    """Every benign anomaly the estate `spec` offers, in order (unobservable ones left out
    by `observable`)."""
    es: E.Estate = spec.estate
    app = es.app
    out: list[Benign] = []
    sink = _policy(spec, E.AUDIT, "audit-sink")
    sealed = copy.deepcopy(sink)
    del sealed["spec"]["ingress"]
    out.append(Benign(
        "benign.audit_sealed", "audit",
        "Namespace `audit` is sealed on purpose: policy audit-sink admits nothing, so no "
        "pod reaches audit-sink (its events are collected offline during a retention "
        "freeze).", ((key_of(sink), sealed),),
    ))  # fmt: skip
    services = {(o["metadata"]["namespace"], o["metadata"]["name"]): o
                for o in spec.objects() if o["kind"] == "Service"}  # fmt: skip
    for name in es.legacy:
        w = app.by_name[name]
        svc = services[(w.namespace, f"legacy-{name}")]
        idle = copy.deepcopy(svc)
        idle["spec"]["selector"] = {E.SELECTOR: f"{name}-v1"}
        out.append(Benign(
            "benign.legacy_idle", w.role,
            f"Service legacy-{name} in `{w.namespace}` has no endpoints on purpose: it "
            f"selects the retired {name}-v1 pods and only keeps the old name resolvable.",
            ((key_of(svc), idle),),
        ))  # fmt: skip
    deny = _policy(spec, E.SANDBOX, f"default-deny-{E.SANDBOX}")
    out.append(Benign(
        "benign.sandbox_open", "sandbox",
        "Namespace `sandbox` has no default deny on purpose: playground is open to and "
        "from every pod.", ((key_of(deny), None),),
    ))  # fmt: skip
    for w in es.open_egress:
        policy = _policy(spec, w.namespace, w.name)
        locked = copy.deepcopy(policy)
        locked["spec"]["egress"] = pinned(es, w)
        out.append(Benign(
            "benign.egress_pinned", w.role,
            f"{w.name}'s egress is pinned on purpose to DNS and what it calls (its policy "
            f"restricts egress although `{w.namespace}` leaves egress open).",
            ((key_of(policy), locked),),
        ))  # fmt: skip
    for w in app.app_workloads:
        if not any(p.name == "metrics" for p in w.ports):
            continue
        policy = _policy(spec, w.namespace, w.name)
        debug = copy.deepcopy(policy)
        rule = {"from": [{"ipBlock": {"cidr": EXCLUDED_CIDR}}],
                "ports": [{"port": "metrics", "protocol": "TCP"}]}  # fmt: skip
        debug["spec"].setdefault("ingress", []).append(rule)
        types = debug["spec"]["policyTypes"]
        debug["spec"]["policyTypes"] = types if "Ingress" in types else ["Ingress", *types]
        out.append(Benign(
            "benign.admin_debug", w.role,
            f"The admin hosts ({EXCLUDED_CIDR}) may reach {w.name}'s metrics port directly, "
            "on purpose (a debugging window).", ((key_of(policy), debug),),
        ))  # fmt: skip
    return out


def observable(ev: StateEvaluator, anomalies_: list[Benign]) -> list[Benign]:
    """Those that change some probe's intended result."""
    return [
        b for b in anomalies_ if any(v != ev.expected[k] for k, v in ev.outcome(b.overlay).items())
    ]
