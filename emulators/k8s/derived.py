"""Read-only objects the API server computes from the stored ones (as controllers would):
Endpoints and EndpointSlices of Services, the ReplicaSet of each Deployment, no Events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from emulators.k8s.resources import Resource
from emulators.k8s.selectors import matches


def _pods(objects: list[dict[str, Any]], ns: str, selector: dict[str, str]):
    if not selector:
        return []
    return sorted(
        (
            o
            for o in objects
            if o["kind"] == "Pod"
            and o["metadata"].get("namespace") == ns
            and matches({"matchLabels": selector}, o["metadata"].get("labels") or {})
        ),
        key=lambda o: o["metadata"]["name"],
    )


def _target_ref(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"kind": "Pod", "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]}


def _resolve(port: dict[str, Any], pod: dict[str, Any]) -> int | None:
    """The pod's port a Service port sends to, as podutil.FindPort finds it: a number as
    it is, a name among the pod's container ports of the same protocol (None: not there)."""
    target = port.get("targetPort", port["port"])
    if isinstance(target, int):
        return target
    proto = port.get("protocol", "TCP")
    for container in pod["spec"].get("containers") or []:
        for cport in container.get("ports") or []:
            if cport.get("name") == target and cport.get("protocol", "TCP") == proto:
                return int(cport["containerPort"])
    return None


def _endpoints(svc: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """As the endpoints controller writes them: a pod goes under each Service port it has
    (a named targetPort it lacks leaves it out of that port), one subset per port set."""
    meta = svc["metadata"]
    subsets: list[dict[str, Any]] = []
    for pod in pods:
        ports = []
        for sp in svc["spec"].get("ports") or []:
            number = _resolve(sp, pod)
            if number is not None:
                ports.append(
                    {
                        "name": sp.get("name", ""),
                        "port": number,
                        "protocol": sp.get("protocol", "TCP"),
                    }
                )
        if not ports:
            continue
        address = {"ip": pod["status"]["podIP"], "targetRef": _target_ref(pod)}
        same = next((s for s in subsets if s["ports"] == ports), None)
        if same is None:
            subsets.append({"addresses": [address], "ports": ports})
        else:
            same["addresses"].append(address)
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "creationTimestamp": meta["creationTimestamp"],
            "uid": meta["uid"] + "-ep",
            "resourceVersion": meta["resourceVersion"],
        },
        "subsets": subsets,
    }


def _slice(svc: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    meta = svc["metadata"]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{meta['name']}-{meta['uid'][:5]}",
            "namespace": meta["namespace"],
            "labels": {
                "kubernetes.io/service-name": meta["name"],
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
            "creationTimestamp": meta["creationTimestamp"],
            "uid": meta["uid"] + "-eps",
            "resourceVersion": meta["resourceVersion"],
        },
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": [p["status"]["podIP"]],
                "conditions": {"ready": True},
                "targetRef": _target_ref(p),
                "nodeName": p["spec"].get("nodeName"),
            }
            for p in pods
        ],
        "ports": [
            {
                "name": sp.get("name", ""),
                "port": found,
                "protocol": sp.get("protocol", "TCP"),
            }
            for sp in svc["spec"].get("ports") or []
            if (found := (_resolve(sp, pods[0]) if pods else sp["port"])) is not None
        ],
    }


def _replicaset(dep: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    meta, spec = dep["metadata"], dep["spec"]
    pod_hash = next((p["metadata"]["labels"].get("pod-template-hash") for p in pods), "5d8f7c9b6d")
    labels = {**(spec["template"]["metadata"].get("labels") or {}), "pod-template-hash": pod_hash}
    template = {**spec["template"], "metadata": {**spec["template"]["metadata"], "labels": labels}}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{pod_hash}",
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": "1"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "creationTimestamp": meta["creationTimestamp"],
            "uid": meta["uid"] + "-rs",
            "resourceVersion": meta["resourceVersion"],
        },
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {
                "matchLabels": {
                    **spec["selector"].get("matchLabels", {}),
                    "pod-template-hash": pod_hash,
                }
            },
            "template": template,
        },
        "status": {
            "replicas": len(pods),
            "readyReplicas": len(pods),
            "availableReplicas": len(pods),
            "fullyLabeledReplicas": len(pods),
        },
    }


def derived_objects(res: Resource, stored: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    objects = list(stored)
    out = []
    for obj in objects:
        meta = obj["metadata"]
        if obj["kind"] == "Service" and res.kind in ("Endpoints", "EndpointSlice"):
            pods = _pods(objects, meta["namespace"], obj["spec"].get("selector") or {})
            out.append((_endpoints if res.kind == "Endpoints" else _slice)(obj, pods))
        elif obj["kind"] == "Deployment" and res.kind == "ReplicaSet":
            selector = obj["spec"]["selector"].get("matchLabels") or {}
            out.append(_replicaset(obj, _pods(objects, meta["namespace"], selector)))
    return sorted(out, key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))
