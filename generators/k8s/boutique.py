"""Online Boutique as API objects: the cluster the k8s app runs, and its intended policies.

Written from the demo's public communication graph (who calls whom, on which port), not
from its manifests: `SERVICES` lists each microservice's Service port, container port and
callers. Every workload is one Deployment with one Pod in `default`; DNS is one
`coredns` Pod behind the `kube-dns` Service in `kube-system`. The intended policies are a
default deny of both directions plus one policy per workload admitting its callers on its
port and any egress (`frontend` admits everyone: it is the public entry point).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

NAMESPACE = "default"
POD_CIDR_PREFIX = "10.244.0."
DNS_CLUSTER_IP = "10.96.0.10"
IMAGE = "us-central1-docker.pkg.dev/google-samples/microservices-demo/{}:v0.10.3"


@dataclass(frozen=True)
class Workload:
    name: str
    port: int | None  # Service port (None: no Service)
    target: int | None  # container port behind it
    port_name: str  # the container port's name (Services target it by number)
    callers: tuple[str, ...]  # workloads that call it; ("*",) = everyone


SERVICES: tuple[Workload, ...] = (
    Workload("frontend", 80, 8080, "http", ("*",)),
    Workload("adservice", 9555, 9555, "grpc", ("frontend",)),
    Workload("cartservice", 7070, 7070, "grpc", ("frontend", "checkoutservice")),
    Workload("checkoutservice", 5050, 5050, "grpc", ("frontend",)),
    Workload("currencyservice", 7000, 7000, "grpc", ("frontend", "checkoutservice")),
    Workload("emailservice", 5000, 8080, "grpc", ("checkoutservice",)),
    Workload("paymentservice", 50051, 50051, "grpc", ("checkoutservice",)),
    Workload(
        "productcatalogservice",
        3550,
        3550,
        "grpc",
        ("frontend", "checkoutservice", "recommendationservice"),
    ),
    Workload("recommendationservice", 8080, 8080, "grpc", ("frontend",)),
    Workload("shippingservice", 50051, 50051, "grpc", ("frontend", "checkoutservice")),
    Workload("redis-cart", 6379, 6379, "redis", ("cartservice",)),
    Workload("loadgenerator", None, None, "", ()),
)
BY_NAME = {w.name: w for w in SERVICES}
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the ReplicaSet/Pod name suffix alphabet


def _suffix(seed: str, length: int) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:length])


def pod_name(workload: str) -> str:
    """The (deterministic) name of a workload's single Pod."""
    return f"{workload}-{_suffix(workload + '/rs', 10)}-{_suffix(workload + '/pod', 5)}"


def namespace_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def container(name: str, image: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent"}
    if ports:
        out["ports"] = ports
    out["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    return out


def workload_objects(
    name: str, ns: str, ip: str, container: dict[str, Any]
) -> list[dict[str, Any]]:
    labels = {"app": name}
    pod_spec = {"containers": [container], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
        },
        "status": {"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(name),
            "namespace": ns,
            "labels": {**labels, "pod-template-hash": _suffix(name + "/rs", 10)},
        },
        "spec": {**pod_spec, "nodeName": "ngk-node"},
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "hostIP": "172.18.0.2",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": container["name"], "ready": True, "restartCount": 0, "started": True}
            ],
        },
    }
    return [deployment, pod]


def _service(name: str, ns: str, ip: str, port: int, target: int, pname: str) -> dict[str, Any]:
    proto = "UDP" if pname == "dns" else "TCP"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": name if name != "kube-dns" else "kube-dns"},
            "clusterIP": ip,
            "clusterIPs": [ip],
            "ports": [{"name": pname, "port": port, "targetPort": target, "protocol": proto}],
        },
    }


def dns_objects() -> list[dict[str, Any]]:
    """kube-system's DNS: the `coredns` Deployment and Pod, the `kube-dns` Service."""
    dns_port = {"name": "dns", "containerPort": 53, "protocol": "UDP"}
    dns = container("coredns", "registry.k8s.io/coredns/coredns:v1.11.3", [dns_port])
    objects = workload_objects("coredns", "kube-system", POD_CIDR_PREFIX + "2", dns)
    for obj in objects:
        obj["metadata"]["labels"]["app"] = "kube-dns"
    objects[0]["spec"]["selector"]["matchLabels"] = {"app": "kube-dns"}
    objects[0]["spec"]["template"]["metadata"]["labels"] = {"app": "kube-dns"}
    objects.append(_service("kube-dns", "kube-system", DNS_CLUSTER_IP, 53, 53, "dns"))
    return objects


def cluster_objects() -> list[dict[str, Any]]:
    """Namespaces, Deployments, Pods and Services of the demo (no policies)."""
    objects = [namespace_object(NAMESPACE), namespace_object("kube-system"), *dns_objects()]
    for index, w in enumerate(SERVICES):
        ports = []
        if w.target is not None:
            ports = [{"name": w.port_name, "containerPort": w.target, "protocol": "TCP"}]
        box = container("server" if ports else "main", IMAGE.format(w.name), ports)
        objects += workload_objects(w.name, NAMESPACE, f"{POD_CIDR_PREFIX}{10 + index}", box)
        if w.port is not None and w.target is not None:
            ip = f"10.96.{10 + index}.{(index * 37) % 200 + 20}"
            objects.append(_service(w.name, NAMESPACE, ip, w.port, w.target, w.port_name))
    return objects


def _app_selector(name: str) -> dict[str, Any]:
    return {"matchLabels": {"app": name}}


def intended_policy(w: Workload) -> dict[str, Any]:
    """The policy of one workload: its callers on its port, any egress."""
    spec: dict[str, Any] = {"podSelector": _app_selector(w.name)}
    if w.callers == ("*",):
        spec["ingress"] = [{}]
    elif w.callers:
        spec["ingress"] = [
            {
                "from": [{"podSelector": _app_selector(c)} for c in w.callers],
                "ports": [{"port": w.target, "protocol": "TCP"}],
            }
        ]
    spec["egress"] = [{}]
    spec["policyTypes"] = ["Ingress", "Egress"]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": w.name, "namespace": NAMESPACE},
        "spec": spec,
    }


def intended_policies() -> list[dict[str, Any]]:
    """The default deny plus one policy per workload, in a fixed order."""
    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny-all", "namespace": NAMESPACE},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }
    return [deny, *(intended_policy(w) for w in SERVICES)]
