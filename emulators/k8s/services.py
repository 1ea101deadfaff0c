"""Services an agent may write (clusters that allow it): defaulting, validation worded as
kube-apiserver words it, and the ClusterIP, allocated on create and kept on update.

Only `type: ClusterIP` is served: the data plane translates ClusterIPs at the source
(emulators/k8s/enforce.py), and there are no nodes to open node ports on. As on a real
cluster, a write that leaves `clusterIP` out keeps the one the Service has, and one that
changes it is refused (`may not change once set`); `targetPort` defaults to `port`, and a
Service of several ports must name each. What the data plane does with a Service (its
endpoints, the translation to `targetPort`) follows from the stored object: nothing here
decides connectivity.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from emulators.k8s import schema
from emulators.k8s.resources import ApiError, Resource, invalid

SERVICE_CIDR = ipaddress.IPv4Network("10.96.0.0/12")
# Addresses a created Service gets, first free first (the cluster's own Services sit
# below 10.96.128.0; the DNS Service is 10.96.0.10).
ALLOCATE_FROM = ipaddress.IPv4Address("10.96.128.1")
MAX_PORTS = 64  # ports of one Service (kube-apiserver has no small limit; ours bounds rules)
PROTOCOLS = ["SCTP", "TCP", "UDP"]
TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
Cause = schema.Cause
S, N, B = schema.STRING, schema.INT, schema.BOOL  # shape words: string, int32, bool
MAP, ANY, INTSTR = schema.MAP, schema.ANY, schema.INT_OR_STRING
META = schema.META
_PORT = {
    "name": S, "protocol": S, "appProtocol": S, "port": N, "targetPort": INTSTR,
    "nodePort": N,
}  # fmt: skip
# core/v1 ServiceSpec, every field (strict decoding refuses only what a real server would).
SHAPE: dict[str, Any] = {
    "apiVersion": S,
    "kind": S,
    "metadata": META,
    "spec": {
        **{k: S for k in ("type", "clusterIP", "externalName", "externalTrafficPolicy")},
        **{k: S for k in ("internalTrafficPolicy", "ipFamilyPolicy", "loadBalancerClass")},
        **{k: S for k in ("loadBalancerIP", "sessionAffinity", "trafficDistribution")},
        **{k: [S] for k in ("clusterIPs", "externalIPs", "ipFamilies")},
        "loadBalancerSourceRanges": [S],
        "ports": [_PORT],
        "selector": MAP,
        "publishNotReadyAddresses": B,
        "allocateLoadBalancerNodePorts": B,
        "healthCheckNodePort": N,
        "sessionAffinityConfig": ANY,
    },
    "status": ANY,
}


def default_service(obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """kube-apiserver's defaulting of a Service written by a client: type, sessionAffinity,
    the IP family fields, each port's protocol and targetPort; on update, the ClusterIP of
    `old` when the write leaves it out."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
    if old is not None:
        before = old.get("spec") or {}
        if not spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIP"] = before.get("clusterIP")
            spec["clusterIPs"] = list(before.get("clusterIPs") or [before.get("clusterIP")])
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    if old is not None:  # a changed clusterIP alone changes clusterIPs[0] (normalisation)
        before = old.get("spec") or {}
        ips = spec.get("clusterIPs")
        if spec.get("clusterIP") != before.get("clusterIP") and ips == before.get("clusterIPs"):
            spec["clusterIPs"] = [spec.get("clusterIP"), *(ips or [])[1:]]


def allocate(res: Resource, obj: dict[str, Any], taken: Iterable[str]) -> None:
    """Give a created Service that names no ClusterIP the first free one (ALLOCATE_FROM
    on); raise the API server's 422 for one it names that is taken or outside the range."""
    spec = obj["spec"]
    used = set(taken)
    wanted = spec.get("clusterIP") or (spec.get("clusterIPs") or [None])[0]
    name = str(obj["metadata"].get("name", ""))
    if wanted:
        if wanted in used:
            raise invalid(
                res,
                name,
                [
                    schema.invalid_value(
                        "spec.clusterIPs", [wanted], "failed to allocate IP: provided IP is "
                        "already allocated"
                    )
                ],
            )  # fmt: skip
        return
    address = ALLOCATE_FROM
    while str(address) in used:
        address += 1
        if address not in SERVICE_CIDR:
            raise ApiError(500, "InternalError", "range is full: no ClusterIP is free")
    spec["clusterIP"], spec["clusterIPs"] = str(address), [str(address)]


def _ip_causes(spec: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    out: list[Cause] = []
    ips = spec.get("clusterIPs") or []
    ip = spec.get("clusterIP")
    if ip and ips and ips[0] != ip:
        out.append(
            schema.invalid_value(
                "spec.clusterIPs", ips, "element [0] must match clusterIP"
            )
        )  # fmt: skip
    if old is not None:
        was = (old.get("spec") or {}).get("clusterIPs") or []
        if list(ips) != list(was):
            shown = "[]string{" + ", ".join(f'"{ip}"' for ip in ips) + "}"
            out.append(
                ("FieldValueInvalid", "spec.clusterIPs[0]", f"Invalid value: {shown}: may not "
                 "change once set")
            )  # fmt: skip
        return out
    for text in ips:
        try:
            address = ipaddress.IPv4Address(text)
        except (ipaddress.AddressValueError, ValueError):
            out.append(schema.invalid_value("spec.clusterIPs[0]", text, "must be a valid IP"))
            continue
        if address not in SERVICE_CIDR:
            out.append(
                schema.invalid_value(
                    "spec.clusterIPs[0]", text,
                    f"failed to allocate IP {text}: the provided IP ({text}) is not in the "
                    f"valid range. The range of valid IPs is {SERVICE_CIDR}",
                )
            )  # fmt: skip
    return out


def _port_causes(ports: Any) -> list[Cause]:
    out: list[Cause] = []
    if not isinstance(ports, list) or not ports:
        return [("FieldValueRequired", "spec.ports", "Required value")]
    if len(ports) > MAX_PORTS:
        out.append(schema.invalid_value("spec.ports", len(ports), f"at most {MAX_PORTS} ports"))
    names: set[str] = set()
    seen: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        path = f"spec.ports[{i}]"
        if not isinstance(port, dict):
            out.append(("FieldValueRequired", path, "Required value"))
            continue
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            out.append(("FieldValueRequired", f"{path}.name", "Required value"))
        if name:
            if not schema.is_dns_label(name):
                out.append(schema.invalid_value(f"{path}.name", name, schema.LABEL_NAME_MSG))
            if name in names:
                out.append(("FieldValueDuplicate", f"{path}.name", f'Duplicate value: "{name}"'))
            names.add(name)
        number, proto = port.get("port"), port.get("protocol")
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 65535:
            out.append(schema.invalid_value(f"{path}.port", number, schema.PORT_RANGE_MSG))
        if proto not in PROTOCOLS:
            out.append(
                (
                    "FieldValueNotSupported",
                    f"{path}.protocol",
                    f'Unsupported value: "{proto}": supported values: "SCTP", "TCP", "UDP"',
                )
            )
        if (number, proto) in seen:
            out.append(
                ("FieldValueDuplicate", path, f'Duplicate value: {{"port": {number}, '
                 f'"protocol": "{proto}"}}')
            )  # fmt: skip
        seen.add((number, proto))
        target = port.get("targetPort")
        if isinstance(target, bool) or not isinstance(target, int | str):
            out.append(schema.invalid_value(f"{path}.targetPort", target, "must be a port"))
        elif isinstance(target, int) and not 1 <= target <= 65535:
            out.append(schema.invalid_value(f"{path}.targetPort", target, schema.PORT_RANGE_MSG))
        elif isinstance(target, str):
            out += [
                schema.invalid_value(f"{path}.targetPort", target, m)
                for m in schema.port_name_errors(target)
            ]
        if port.get("nodePort"):
            out.append(
                schema.invalid_value(
                    f"{path}.nodePort", port["nodePort"],
                    "may not be used when `type` is 'ClusterIP'",
                )
            )  # fmt: skip
    return out


def validate_service(res: Resource, obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """Raise the API server's 422 for an invalid (defaulted) Service, or one this cluster
    cannot serve (a type other than ClusterIP)."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    causes = schema.validate_name(meta.get("name"))
    if meta.get("name") and not schema.is_dns_label(meta["name"]):
        causes.append(schema.invalid_value("metadata.name", meta["name"], schema.LABEL_NAME_MSG))
    causes += schema.validate_labels(meta.get("labels"), "metadata.labels")
    kind = spec.get("type")
    if kind not in TYPES:
        causes.append(
            (
                "FieldValueNotSupported",
                "spec.type",
                f"Unsupported value: {schema.quote(kind)}: supported values: "
                + ", ".join(f'"{t}"' for t in TYPES),
            )
        )
    elif kind != "ClusterIP":
        causes.append(
            (
                "FieldValueForbidden",
                "spec.type",
                f"Forbidden: this cluster serves ClusterIP Services only, not {kind}",
            )
        )
    selector = spec.get("selector")
    if selector is not None and not isinstance(selector, dict):
        causes.append(schema.invalid_value("spec.selector", selector, "must be a map"))
    else:
        causes += schema.validate_labels(selector, "spec.selector")
    causes += _port_causes(spec.get("ports"))
    causes += _ip_causes(spec, old)
    if causes:
        raise invalid(res, str(meta.get("name", "")), causes)
