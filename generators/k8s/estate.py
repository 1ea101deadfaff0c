"""The applications of levels 6-8 ("estates"): generated call graphs (callgraph.py) at
three sizes, labelled and policed as a platform team's cluster is, with the objects the
tiers' benign anomalies live in.

`estate(size, variant)` is one application, the same on every machine (its own stream
`k8s-estate:<size>:<variant>`), of size `medium` (11 workloads in 4 namespaces), `large`
(18 in 5) or `xlarge` (about 30 in 7). Beside what levels 4 and 5 have (manifests.py),
an estate has:

  labels      pods carry `app: <workload>` (what policies select) and
              `app.kubernetes.io/name: <workload>` (what Deployments and Services select);
              namespaces carry `tier` (web `edge`, the middle ones `app`, data `data`,
              monitoring `monitoring`, external `external`, audit `audit`, sandbox
              `sandbox`), and about half of the cross-namespace peers select the caller's
              namespace by `tier` rather than by `kubernetes.io/metadata.name`
  workers     without a `metrics` port in about half of the cases: their policy is then
              egress only, and the namespace's default deny alone keeps them closed
  stores      policies with ingress rules only: the default deny of `data` keeps their
              egress closed (they start no connection, not even a DNS lookup)
  audit       namespace `audit`, pod and Service `audit-sink` (TCP 5140): every pod of the
              `edge` and `app` namespaces may send it audit events; it sends nothing
  sandbox     namespace `sandbox`, pod and Service `playground` (80 -> 8080), closed by
              its default deny
  legacy      Services `legacy-<workload>` for two workloads: an old name of theirs, same
              port, same pod

Pod addresses: monitoring from .3, audit-sink .6, playground .7, the application from .10,
external hosts on EXTERNAL_CIDR (callgraph.py).
"""

from __future__ import annotations

import copy
import functools
import random
from dataclasses import dataclass, replace
from typing import Any

from generators.k8s import callgraph, manifests
from generators.k8s.boutique import container, dns_objects, namespace_object, pod_name
from generators.k8s.callgraph import DATA, EDGE, EXTERNAL, MONITORING, MicroApp, Workload

SIZES = ("medium", "large", "xlarge")
SHAPES = {**callgraph.SHAPES, "xlarge": (5, 16, 7, 3)}
ESTATES_PER_SIZE = 6
TIER = "tier"  # the namespace label peers may select by
SELECTOR = "app.kubernetes.io/name"  # what Deployments and Services select
AUDIT, SANDBOX = "audit", "sandbox"
AUDIT_PORT = 5140
NS_TIERS = {EDGE: "edge", DATA: "data", MONITORING: "monitoring", EXTERNAL: "external",
            AUDIT: "audit", SANDBOX: "sandbox"}  # fmt: skip
SERVICE_IPS = "10.96.{a}.{b}"


@dataclass(frozen=True)
class Estate:
    app: MicroApp
    by_tier: frozenset[tuple[str, str]]  # (policy, peer workload) selected by namespace tier
    legacy: tuple[str, ...]  # workloads with a `legacy-<name>` Service

    @property
    def size(self) -> str:
        return self.app.size

    @property
    def variant(self) -> int:
        return self.app.variant

    def tier_of(self, namespace: str) -> str:
        return NS_TIERS.get(namespace, "app")

    @property
    def policy_namespaces(self) -> tuple[str, ...]:
        """Namespaces whose pods a default deny isolates."""
        return (*self.app.namespaces, MONITORING, AUDIT, SANDBOX)

    @property
    def open_egress(self) -> list[Workload]:
        """Application workloads whose egress the intent leaves open."""
        return [w for w in self.app.app_workloads if w.namespace not in self.app.locked]


def estate(size: str, variant: int) -> Estate:
    if size not in SHAPES:
        raise ValueError(f"size {size!r} is not one of {SIZES}")
    return _estate(size, variant)


@functools.cache
def _estate(size: str, variant: int) -> Estate:
    rng = random.Random(f"k8s-estate:{size}:{variant}")
    app = callgraph.build(rng, size, variant, SHAPES[size], metrics=lambda r: r.random() < 0.5)
    extras = [
        Workload("audit-sink", AUDIT, "audit", (callgraph.Port("ingest", AUDIT_PORT),), AUDIT_PORT),
        Workload(
            "playground", SANDBOX, "sandbox", (callgraph.Port("http", 8080),), 80
        ),
    ]  # fmt: skip
    ips = {"audit-sink": "10.244.0.6", "playground": "10.244.0.7"}
    app = replace(app, workloads=(*app.workloads, *(replace(w, ip=ips[w.name]) for w in extras)))
    by_tier = frozenset(p for p in _cross_peers(app) if rng.random() < 0.5)
    served = [w.name for w in app.app_workloads if w.role == "service"]
    legacy = tuple(sorted(rng.sample(served, 2)))
    return Estate(app, by_tier, legacy)


def _cross_peers(app: MicroApp) -> list[tuple[str, str]]:
    """(policy, peer workload) of every cross-namespace peer naming one workload in the
    intended rules (manifests.py's), in order."""
    found: list[tuple[str, str]] = []
    for w in app.workloads:
        if w.namespace not in (*app.namespaces, MONITORING):
            continue
        for rule in [*manifests._ingress(app, w), *manifests._egress(app, w)]:
            for p in [*(rule.get("from") or []), *(rule.get("to") or [])]:
                labels = (p.get("podSelector") or {}).get("matchLabels") or {}
                if "namespaceSelector" in p and labels.get("app") in app.by_name:
                    found.append((w.name, labels["app"]))
    return sorted(set(found))


# -- objects ---------------------------------------------------------------------------------
def _namespace(name: str, tier: str | None) -> dict[str, Any]:
    obj = namespace_object(name)
    if tier is not None:
        obj["metadata"]["labels"][TIER] = tier
    return obj


def _workload(w: Workload, es: Estate) -> list[dict[str, Any]]:
    ports = [{"name": p.name, "containerPort": p.number, "protocol": p.protocol} for p in w.ports]
    box = container("server" if ports else "main", _image(w, es.app), ports)
    selector = {SELECTOR: w.name}
    labels = {"app": w.name, SELECTOR: w.name}
    spec = {"containers": [box], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": w.name, "namespace": w.namespace, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": dict(labels)}, "spec": spec},
        },
        "status": {"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
    }
    name = pod_name(w.name)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": w.namespace,
            "labels": {**labels, "pod-template-hash": name.rsplit("-", 2)[1]},
        },
        "spec": {**spec, "nodeName": "ngk-node"},
        "status": {
            "phase": "Running",
            "podIP": w.ip,
            "podIPs": [{"ip": w.ip}],
            "hostIP": "172.18.0.2",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": box["name"], "ready": True, "restartCount": 0, "started": True}
            ],
        },
    }
    return [deployment, pod]


def _image(w: Workload, app: MicroApp) -> str:
    if w.role == "audit":
        return "docker.io/fluent/fluent-bit:3.1"
    if w.role == "sandbox":
        return "docker.io/library/busybox:1.36"
    return manifests._image(w, app)


def service(name: str, w: Workload, index: int) -> dict[str, Any]:
    """The Service `name` in front of workload `w` (its first port; ClusterIP from `index`)."""
    port = w.ports[0]
    ip = SERVICE_IPS.format(a=20 + index, b=(index * 37) % 200 + 20)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": w.namespace, "labels": {"app": w.name}},
        "spec": {
            "type": "ClusterIP",
            "selector": {SELECTOR: w.name},
            "clusterIP": ip,
            "clusterIPs": [ip],
            "ports": [
                {
                    "name": port.name,
                    "port": w.service_port,
                    "targetPort": port.number,
                    "protocol": port.protocol,
                }
            ],
            "sessionAffinity": "None",
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
        },
    }


def cluster_objects(es: Estate) -> list[dict[str, Any]]:
    """Namespaces, Deployments, Pods and Services of an estate (no policies)."""
    app = es.app
    names = ["default", *app.namespaces, MONITORING, EXTERNAL, AUDIT, SANDBOX, "kube-system"]
    objects = [
        _namespace(ns, None if ns in ("default", "kube-system") else es.tier_of(ns)) for ns in names
    ]
    objects += dns_objects()
    for index, w in enumerate(app.workloads):
        objects += _workload(w, es)
        if w.service_port is not None:
            objects.append(service(w.name, w, index))
    for k, name in enumerate(es.legacy):
        objects.append(service(f"legacy-{name}", app.by_name[name], 100 + k))
    return objects


# -- policies --------------------------------------------------------------------------------
def peer(es: Estate, target: Workload, policy: str, namespace: str) -> dict[str, Any]:
    """The peer naming `target` from policy `policy` of `namespace`: by the namespace's name
    or its tier (es.by_tier) when the namespaces differ."""
    out: dict[str, Any] = {"podSelector": {"matchLabels": {"app": target.name}}}
    if target.namespace != namespace:
        if (policy, target.name) in es.by_tier:
            out["namespaceSelector"] = {"matchLabels": {TIER: es.tier_of(target.namespace)}}
        else:
            out["namespaceSelector"] = {"matchLabels": {manifests.NS_LABEL: target.namespace}}
    return out


def _cross_tier(rules: list[dict[str, Any]], es: Estate, w: Workload) -> list[dict[str, Any]]:
    """`rules` (manifests.py's, naming peers by namespace name) with the peers es.by_tier
    names rewritten to select their namespace's tier."""
    out = copy.deepcopy(rules)
    for rule in out:
        for key in ("from", "to"):
            for j, p in enumerate(rule.get(key) or []):
                labels = (p.get("podSelector") or {}).get("matchLabels") or {}
                target = es.app.by_name.get(labels.get("app", ""))
                if target is not None and "namespaceSelector" in p:
                    rule[key][j] = peer(es, target, w.name, w.namespace)
    return out


def _policy(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def default_deny(namespace: str) -> dict[str, Any]:
    spec = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    return _policy(f"default-deny-{namespace}", namespace, spec)


def workload_policy(es: Estate, w: Workload) -> dict[str, Any]:
    """The intended policy of one application (or monitoring) workload."""
    app = es.app
    ingress = _cross_tier(manifests._ingress(app, w), es, w)
    egress = _cross_tier(manifests._egress(app, w), es, w)
    spec: dict[str, Any] = {"podSelector": {"matchLabels": {"app": w.name}}}
    if ingress:
        spec["ingress"] = ingress
    if w.role == "store":  # a data store starts no connection: the default deny keeps its egress
        spec["policyTypes"] = ["Ingress"]
        return _policy(w.name, w.namespace, spec)
    spec["egress"] = egress
    # A worker that serves nothing leaves its ingress to the namespace's default deny.
    spec["policyTypes"] = ["Ingress", "Egress"] if ingress or w.role != "worker" else ["Egress"]
    return _policy(w.name, w.namespace, spec)


def audit_policy() -> dict[str, Any]:
    spec = {
        "podSelector": {"matchLabels": {"app": "audit-sink"}},
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchExpressions": [
                                {"key": TIER, "operator": "In", "values": ["app", "edge"]}
                            ]
                        }
                    }
                ],
                "ports": [{"port": "ingest", "protocol": "TCP"}],
            }
        ],
        "policyTypes": ["Ingress", "Egress"],
    }
    return _policy("audit-sink", AUDIT, spec)


def intended_policies(es: Estate) -> list[dict[str, Any]]:
    """The default denies, one policy per workload of the application and monitoring, and
    audit-sink's."""
    out = [default_deny(ns) for ns in es.policy_namespaces]
    for w in es.app.workloads:
        if w.namespace in (*es.app.namespaces, MONITORING):
            out.append(workload_policy(es, w))
    out.append(audit_policy())
    return copy.deepcopy(out)
