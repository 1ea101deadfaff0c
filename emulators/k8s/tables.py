"""Server-side printing: the `meta.k8s.io/v1` Table kubectl asks for on `kubectl get`, with
the columns kube-apiserver prints for each kind (priority 1 columns appear with `-o wide`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from emulators.k8s.resources import Resource
from emulators.k8s.selectors import format_selector

Row = list[Any]
Column = tuple[str, str, int]  # (name, type, priority)


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    return f"{hours // 24}d"


_RFC3339 = re.compile(
    r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:[Zz]|[+-]\d\d:\d\d)", re.ASCII
)


def parse_time(stamp: Any) -> datetime | None:
    """An RFC 3339 time (any offset, fractional seconds), else None."""
    if not isinstance(stamp, str) or not _RFC3339.fullmatch(stamp):
        return None
    text = stamp.upper().replace("Z", "+00:00")
    head, dot, tail = text.partition(".")
    if dot:  # fromisoformat takes at most 6 digits of a second
        digits = tail[: len(tail) - 6]
        text = f"{head}.{digits[:6].ljust(6, '0')}{tail[-6:]}"
    try:
        return datetime.fromisoformat(text)
    except ValueError:  # a day or hour that does not exist, e.g. 2024-02-30
        return None


def age(obj: dict[str, Any]) -> str:
    """How long ago the object was created, as kubectl prints it; <unknown> for a missing or
    unreadable creationTimestamp (the server sets it, but a reply must never fail on it)."""
    created = parse_time(obj["metadata"].get("creationTimestamp"))
    if created is None:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - created).total_seconds())


def _name(o: dict[str, Any]) -> str:
    return o["metadata"]["name"]


def _pod(o: dict[str, Any]) -> Row:
    statuses = o.get("status", {}).get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    total = len(o["spec"].get("containers") or [])
    status = o.get("status", {})
    return [
        _name(o),
        f"{ready}/{total}",
        status.get("phase", "Pending"),
        restarts,
        age(o),
        status.get("podIP", "<none>"),
        o["spec"].get("nodeName", "<none>"),
        "<none>",
        "<none>",
    ]


def _ports(o: dict[str, Any]) -> str:
    parts = []
    for p in o["spec"].get("ports") or []:
        node = f":{p['nodePort']}" if p.get("nodePort") else ""
        parts.append(f"{p['port']}{node}/{p.get('protocol', 'TCP')}")
    return ",".join(parts) or "<none>"


def _service(o: dict[str, Any]) -> Row:
    spec = o["spec"]
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items()))
    return [
        _name(o),
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP", "<none>"),
        "<none>",
        _ports(o),
        age(o),
        selector or "<none>",
    ]


def _containers(spec: dict[str, Any]) -> tuple[str, str]:
    cs = spec["template"]["spec"].get("containers") or []
    return ",".join(c["name"] for c in cs), ",".join(c.get("image", "") for c in cs)


def _deployment(o: dict[str, Any]) -> Row:
    spec, status = o["spec"], o.get("status") or {}
    names, images = _containers(spec)
    return [
        _name(o),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        age(o),
        names,
        images,
        format_selector(spec.get("selector")) or "<none>",
    ]


def _replicaset(o: dict[str, Any]) -> Row:
    spec, status = o["spec"], o.get("status") or {}
    names, images = _containers(spec)
    return [
        _name(o),
        spec.get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        age(o),
        names,
        images,
        format_selector(spec.get("selector")) or "<none>",
    ]


def _netpol(o: dict[str, Any]) -> Row:
    return [_name(o), format_selector(o["spec"].get("podSelector")) or "<none>", age(o)]


def _namespace(o: dict[str, Any]) -> Row:
    return [_name(o), o.get("status", {}).get("phase", "Active"), age(o)]


def _endpoints(o: dict[str, Any]) -> Row:
    addrs = [
        f"{a['ip']}:{p['port']}"
        for s in o.get("subsets") or []
        for a in s.get("addresses") or []
        for p in s.get("ports") or []
    ]
    return [_name(o), ",".join(addrs) or "<none>", age(o)]


def _slice(o: dict[str, Any]) -> Row:
    ports = ",".join(str(p["port"]) for p in o.get("ports") or []) or "<unset>"
    addrs = ",".join(a for e in o.get("endpoints") or [] for a in e["addresses"]) or "<unset>"
    return [_name(o), o.get("addressType", "IPv4"), ports, addrs, age(o)]


def _event(o: dict[str, Any]) -> Row:
    return [age(o), o.get("type", ""), o.get("reason", ""), "", o.get("message", "")]


_S, _I = "string", "integer"
PRINTERS: dict[str, tuple[list[Column], Callable[[dict[str, Any]], Row]]] = {
    "Pod": (
        [
            ("Name", _S, 0),
            ("Ready", _S, 0),
            ("Status", _S, 0),
            ("Restarts", _S, 0),
            ("Age", _S, 0),
            ("IP", _S, 1),
            ("Node", _S, 1),
            ("Nominated Node", _S, 1),
            ("Readiness Gates", _S, 1),
        ],
        _pod,
    ),
    "Service": (
        [
            ("Name", _S, 0),
            ("Type", _S, 0),
            ("Cluster-IP", _S, 0),
            ("External-IP", _S, 0),
            ("Port(s)", _S, 0),
            ("Age", _S, 0),
            ("Selector", _S, 1),
        ],
        _service,
    ),
    "Deployment": (
        [
            ("Name", _S, 0),
            ("Ready", _S, 0),
            ("Up-to-date", _I, 0),
            ("Available", _I, 0),
            ("Age", _S, 0),
            ("Containers", _S, 1),
            ("Images", _S, 1),
            ("Selector", _S, 1),
        ],
        _deployment,
    ),
    "ReplicaSet": (
        [
            ("Name", _S, 0),
            ("Desired", _I, 0),
            ("Current", _I, 0),
            ("Ready", _I, 0),
            ("Age", _S, 0),
            ("Containers", _S, 1),
            ("Images", _S, 1),
            ("Selector", _S, 1),
        ],
        _replicaset,
    ),
    "NetworkPolicy": ([("Name", _S, 0), ("Pod-Selector", _S, 0), ("Age", _S, 0)], _netpol),
    "Namespace": ([("Name", _S, 0), ("Status", _S, 0), ("Age", _S, 0)], _namespace),
    "Endpoints": ([("Name", _S, 0), ("Endpoints", _S, 0), ("Age", _S, 0)], _endpoints),
    "EndpointSlice": (
        [
            ("Name", _S, 0),
            ("AddressType", _S, 0),
            ("Ports", _S, 0),
            ("Endpoints", _S, 0),
            ("Age", _S, 0),
        ],
        _slice,
    ),
    "Event": (
        [
            ("Last Seen", _S, 0),
            ("Type", _S, 0),
            ("Reason", _S, 0),
            ("Object", _S, 0),
            ("Message", _S, 0),
        ],
        _event,
    ),
}


def table(res: Resource, objects: list[dict[str, Any]], include: str, rv: str) -> dict[str, Any]:
    """A Table of `objects`; `include` is the includeObject parameter (None/Metadata/Object)."""
    columns, printer = PRINTERS[res.kind]
    defs = [
        {
            "name": name,
            "type": kind,
            "format": "name" if name == "Name" else "",
            "description": name,
            "priority": priority,
        }
        for name, kind, priority in columns
    ]
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer(obj)}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": defs,
        "rows": rows,
    }
