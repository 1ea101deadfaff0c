"""A generated application (callgraph.MicroApp) as API objects, and its intended policies.

The policies are written as a hardened cluster's are: every namespace of the application
and `monitoring` denies both directions by default (`default-deny-<namespace>`), and one
policy per workload (named after it) admits exactly what it needs:

  ingress  its callers on its port (a caller in another namespace by namespaceSelector AND
           podSelector in one peer; the port by name or by number), Prometheus on the
           named `metrics` port; the gateway admits EXTERNAL_CIDR except EXCLUDED_CIDR on
           `http`, Prometheus admits EXCLUDED_CIDR (the admin hosts) on `web`, the StatsD
           collector every pod of the application's namespaces (matchExpressions `In`)
  egress   in a namespace whose egress is locked down (callgraph: `locked`): DNS (kube-dns
           in kube-system, UDP and TCP 53), each callee on its port (by name or number),
           the partner API (EXTERNAL_CIDR except EXCLUDED_CIDR on 443), StatsD (UDP
           8125); Prometheus scrapes `metrics` in the application's namespaces.
           Elsewhere, everything (`egress: [{}]`)

Hosts outside the cluster (namespace `external`) and kube-system have no policies.
"""

from __future__ import annotations

import copy
from typing import Any

from generators.k8s.boutique import container, dns_objects, namespace_object, workload_objects
from generators.k8s.callgraph import (
    EXCLUDED_CIDR,
    EXTERNAL,
    EXTERNAL_CIDR,
    MONITORING,
    PARTNER_PORT,
    MicroApp,
    Workload,
)

NS_LABEL = "kubernetes.io/metadata.name"
DNS_PEER = {
    "namespaceSelector": {"matchLabels": {NS_LABEL: "kube-system"}},
    "podSelector": {"matchLabels": {"app": "kube-dns"}},
}
DNS_RULE = {
    "to": [DNS_PEER],
    "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
}
EXTERNAL_PEER = {"ipBlock": {"cidr": EXTERNAL_CIDR, "except": [EXCLUDED_CIDR]}}
IMAGES = {
    "postgres": "postgres:16.3", "mysql": "mysql:8.4", "redis": "redis:7.2",
    "mongodb": "mongo:7.0", "kafka": "bitnami/kafka:3.7", "amqp": "rabbitmq:3.13",
    "http": "elasticsearch:8.13.4", "memcache": "memcached:1.6", "cql": "cassandra:4.1",
}  # fmt: skip


def policy_namespaces(app: MicroApp) -> tuple[str, ...]:
    """Namespaces whose pods are isolated by a default deny."""
    return (*app.namespaces, MONITORING)


def _image(w: Workload, app: MicroApp) -> str:
    if w.role == "store":
        return IMAGES[w.ports[0].name]
    if w.role == "prometheus":
        return "quay.io/prometheus/prometheus:v2.53.0"
    if w.role == "statsd":
        return "docker.io/statsd/statsd:v0.10.2"
    if w.role == "external":
        return "docker.io/library/nginx:1.27"
    return f"registry.example.com/{app.size}-{app.variant}/{w.name}:1.{len(w.name) % 7}.0"


def _service(w: Workload, index: int) -> dict[str, Any]:
    port = w.ports[0]
    ip = f"10.96.{20 + index}.{(index * 37) % 200 + 20}"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": w.name, "namespace": w.namespace, "labels": {"app": w.name}},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": w.name},
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
        },
    }


def cluster_objects(app: MicroApp) -> list[dict[str, Any]]:
    """Namespaces, Deployments, Pods and Services of `app` (no policies)."""
    names = ["default", *app.namespaces, MONITORING, EXTERNAL, "kube-system"]  # default: empty
    objects = [namespace_object(ns) for ns in names] + dns_objects()
    for index, w in enumerate(app.workloads):
        ports = [
            {"name": p.name, "containerPort": p.number, "protocol": p.protocol} for p in w.ports
        ]
        box = container("server" if ports else "main", _image(w, app), ports)
        objects += workload_objects(w.name, w.namespace, w.ip, box)
        if w.service_port is not None:
            objects.append(_service(w, index))
    return objects


def peer(target: Workload, namespace: str) -> dict[str, Any]:
    """The peer naming `target` from a policy of `namespace` (namespaceSelector AND
    podSelector in one peer when the namespaces differ)."""
    out: dict[str, Any] = {"podSelector": {"matchLabels": {"app": target.name}}}
    if target.namespace != namespace:
        out["namespaceSelector"] = {"matchLabels": {NS_LABEL: target.namespace}}
    return out


def _port(w: Workload, named: bool) -> dict[str, Any]:
    first = w.ports[0]
    return {"port": first.name if named else first.number, "protocol": first.protocol}


def _in_namespaces(app: MicroApp) -> dict[str, Any]:
    expr = {"key": NS_LABEL, "operator": "In", "values": sorted(app.namespaces)}
    return {"namespaceSelector": {"matchExpressions": [expr]}}


def _ingress(app: MicroApp, w: Workload) -> list[dict[str, Any]]:
    rules = []
    callers = app.callers(w.name)
    if callers:
        rules.append(
            {
                "from": [peer(c, w.namespace) for c in sorted(callers, key=lambda c: c.name)],
                "ports": [_port(w, w.named_ingress)],
            }
        )
    if w.role == "gateway":
        rules.append({"from": [EXTERNAL_PEER], "ports": [_port(w, True)]})
    if w.role == "prometheus":
        rules.append({"from": [{"ipBlock": {"cidr": EXCLUDED_CIDR}}], "ports": [_port(w, True)]})
    if w.role == "statsd":
        rules.append({"from": [_in_namespaces(app)], "ports": [_port(w, True)]})
    if any(p.name == "metrics" for p in w.ports):
        prometheus = app.by_name["prometheus"]
        rules.append(
            {
                "from": [peer(prometheus, w.namespace)],
                "ports": [{"port": "metrics", "protocol": "TCP"}],
            }
        )
    return rules


def _egress(app: MicroApp, w: Workload) -> list[dict[str, Any]]:
    return locked_egress(app, w) if w.namespace in app.locked else [{}]


def locked_egress(app: MicroApp, w: Workload) -> list[dict[str, Any]]:
    """The egress rules of `w` locked down to what it needs (a fresh copy)."""
    rules = [DNS_RULE]
    for call in w.calls:
        target = app.by_name[call.target]
        rules.append({"to": [peer(target, w.namespace)], "ports": [_port(target, call.named)]})
    if w.partner:
        rules.append({"to": [EXTERNAL_PEER], "ports": [{"port": PARTNER_PORT, "protocol": "TCP"}]})
    if w.statsd:
        statsd = app.by_name["statsd"]
        rules.append({"to": [peer(statsd, w.namespace)], "ports": [_port(statsd, False)]})
    if w.role == "prometheus":
        rules.append(
            {"to": [_in_namespaces(app)], "ports": [{"port": "metrics", "protocol": "TCP"}]}
        )
    return copy.deepcopy(rules)


def _policy(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def intended_policies(app: MicroApp) -> list[dict[str, Any]]:
    """The default denies, then one policy per workload of the isolated namespaces."""
    out = [
        _policy(f"default-deny-{ns}", ns, {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
        for ns in policy_namespaces(app)
    ]
    for w in app.workloads:
        if w.namespace not in policy_namespaces(app):
            continue
        spec: dict[str, Any] = {"podSelector": {"matchLabels": {"app": w.name}}}
        ingress = _ingress(app, w)
        if ingress:
            spec["ingress"] = ingress
        spec["egress"] = _egress(app, w)
        spec["policyTypes"] = ["Ingress", "Egress"]
        out.append(_policy(w.name, w.namespace, spec))
    return copy.deepcopy(out)  # no two policies share a dict (faults change them in place)
