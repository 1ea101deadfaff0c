"""Decoding, defaulting and validation of written objects, worded as kube-apiserver words them.

Strict decoding (kubectl's default `--validate=strict` sends `fieldValidation=Strict`)
rejects unknown fields of NetworkPolicies and object metadata; `null` decodes as Go's
typed decoder decodes it (a field set to null is unset; a null list item is the item
type's zero value, so `ingress: [null]` is one empty rule, as on a real cluster);
defaulting fills `protocol: TCP` and `policyTypes`; validation follows the NetworkPolicy
rules of `pkg/apis/networking/validation` with the same field paths and messages.
"""

from __future__ import annotations

import json
import re
from typing import Any

from emulators.k8s.policy import parse_cidr
from emulators.k8s.resources import ApiError, Resource, bad_request, invalid

Cause = tuple[str, str, str]  # (reason, field path, detail)

_S, _I, _B = "string", "integer", "boolean"
_MAP, _ANY, _INTSTR = "map", "any", "intstr"
STRING, INT, BOOL, MAP, ANY, INT_OR_STRING = _S, _I, _B, _MAP, _ANY, _INTSTR  # shape words
_SELECTOR: dict[str, Any] = {
    "matchLabels": _MAP,
    "matchExpressions": [{"key": _S, "operator": _S, "values": [_S]}],
}
_META: dict[str, Any] = {
    **{k: _S for k in ("name", "generateName", "namespace", "selfLink", "uid")},
    **{k: _S for k in ("resourceVersion", "creationTimestamp", "deletionTimestamp")},
    "generation": _I,
    "deletionGracePeriodSeconds": _I,
    "labels": _MAP,
    "annotations": _MAP,
    "ownerReferences": [_ANY],
    "finalizers": [_S],
    "managedFields": [_ANY],
}
META = _META
_PEER = {
    "podSelector": _SELECTOR,
    "namespaceSelector": _SELECTOR,
    "ipBlock": {"cidr": _S, "except": [_S]},
}
_PORT = {"protocol": _S, "port": _INTSTR, "endPort": _I}
NETWORK_POLICY: dict[str, Any] = {
    "apiVersion": _S,
    "kind": _S,
    "metadata": _META,
    "spec": {
        "podSelector": _SELECTOR,
        "ingress": [{"from": [_PEER], "ports": [_PORT]}],
        "egress": [{"to": [_PEER], "ports": [_PORT]}],
        "policyTypes": [_S],
    },
}
GENERIC: dict[str, Any] = {"apiVersion": _S, "kind": _S, "metadata": _META}
_GO_TYPES = {_S: "string", _I: "int32", _B: "bool", _MAP: "map[string]string"}


def schema_for(res: Resource) -> dict[str, Any]:
    if res.kind == "NetworkPolicy":
        return NETWORK_POLICY
    return {**GENERIC, "spec": _ANY, "status": _ANY, "data": _ANY}


def _type_error(kind: str, value: Any, path: str) -> str:
    got = {dict: "object", list: "array", str: "string", bool: "bool"}.get(type(value), "number")
    return f"json: cannot unmarshal {got} into Go struct field {path} of type {_GO_TYPES[kind]}"


def decode(
    res: Resource, obj: Any, strict: bool, prune: bool = False, shape: Any = None
) -> list[str]:
    """Unknown fields: raised as 400 when `strict`, else returned (for a Warning header) and,
    with `prune`, dropped from `obj` as the typed decoder drops them. Type errors: 400.
    `shape`: the kind's shape when not `schema_for`'s (a writable Service's)."""
    if not isinstance(obj, dict):
        raise bad_request(f"the body of the request was in an unknown format: {type(obj)}")
    shape = schema_for(res) if shape is None else shape
    _zero_nulls(shape, obj)
    unknown: list[str] = []
    errors: list[str] = []
    _walk(shape, obj, "", unknown, errors, res.kind)
    if errors:
        raise bad_request(
            f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: {errors[0]}'
        )
    if unknown and strict:
        fields = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise bad_request(
            f'{res.kind} in version "{res.version}" cannot be handled as a '
            f"{res.kind}: strict decoding error: {fields}"
        )
    if prune:
        for path in unknown:
            _drop(obj, path.split("."))
    return unknown


_ZERO = {_S: "", _I: 0, _B: False, _INTSTR: 0}


def _zero(schema: Any) -> Any:
    """The zero value Go's decoder gives a null of this type."""
    if isinstance(schema, dict) or schema == _MAP:
        return {}
    if isinstance(schema, list):
        return []
    return _ZERO.get(schema)


def _zero_nulls(schema: Any, value: Any) -> None:
    """In place: drop fields set to null, and make null list items and map values zero."""
    if isinstance(schema, dict) and isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None and k in schema]:
            del value[key]
        for key, sub in value.items():
            if key in schema:
                _zero_nulls(schema[key], sub)
    elif isinstance(schema, list) and isinstance(value, list):
        item = schema[0]
        if item != _ANY:
            for i, sub in enumerate(value):
                if sub is None:
                    value[i] = _zero(item)
                else:
                    _zero_nulls(item, sub)
    elif schema == _MAP and isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            value[key] = ""


def _drop(node: Any, path: list[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _drop(item, path)
    elif isinstance(node, dict) and path:
        if len(path) == 1:
            node.pop(path[0], None)
        elif path[0] in node:
            _drop(node[path[0]], path[1:])


def _walk(schema: Any, value: Any, path: str, unknown: list[str], errors: list[str], go: str):
    if value is None or schema == _ANY:
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            errors.append(
                f"json: cannot unmarshal {type(value).__name__} into Go struct field "
                f"{go}.{path or 'object'} of type object"
            )
            return
        for key, sub in value.items():
            child = f"{path}.{key}" if path else key
            if key not in schema:
                unknown.append(child)
            else:
                _walk(schema[key], sub, child, unknown, errors, go)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            errors.append(
                f"json: cannot unmarshal {type(value).__name__} into Go struct field "
                f"{go}.{path} of type []"
            )
            return
        for item in value:
            _walk(schema[0], item, path, unknown, errors, go)
    elif schema == _MAP:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            errors.append(_type_error(_MAP, value, f"{go}.{path}"))
    elif schema == _INTSTR:
        if isinstance(value, bool) or not isinstance(value, int | str):
            errors.append(
                f"json: cannot unmarshal {type(value).__name__} into Go struct field "
                f"{go}.{path} of type intstr.IntOrString"
            )
    elif schema == _I:
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(_type_error(_I, value, f"{go}.{path}"))
    elif schema == _S and not isinstance(value, str):
        errors.append(_type_error(_S, value, f"{go}.{path}"))


def default_network_policy(obj: dict[str, Any]) -> None:
    """The API server's defaulting: protocol TCP, policyTypes, an empty podSelector."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("podSelector", {})
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule or {}).get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    obj.pop("status", None)


_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
NAME_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
KEY_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_NAME_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def is_dns_label(text: Any) -> bool:
    return isinstance(text, str) and len(text) <= 63 and bool(_DNS_LABEL.match(text))


def _q(value: Any) -> str:
    """A value as Go's field errors quote it (strings with escapes: no raw newlines)."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


quote = _q


def invalid_value(path: str, value: Any, detail: str) -> Cause:
    return ("FieldValueInvalid", path, f"Invalid value: {_q(value)}: {detail}")


def _unsupported(path: str, value: Any, allowed: list[str]) -> Cause:
    listed = ", ".join(f'"{a}"' for a in allowed)
    return (
        "FieldValueNotSupported",
        path,
        f"Unsupported value: {_q(value)}: supported values: {listed}",
    )


def _required(path: str, detail: str = "") -> Cause:
    return ("FieldValueRequired", path, "Required value" + (f": {detail}" if detail else ""))


def _forbidden(path: str, detail: str) -> Cause:
    return ("FieldValueForbidden", path, f"Forbidden: {detail}")


def validate_name(name: Any) -> list[Cause]:
    if not name:
        return [_required("metadata.name", "name or generateName is required")]
    if not isinstance(name, str) or len(name) > 253 or not _DNS1123.match(name):
        return [invalid_value("metadata.name", name, NAME_MSG)]
    return []


def validate_labels(labels: Any, path: str) -> list[Cause]:
    out: list[Cause] = []
    for key, value in (labels or {}).items():
        name = key.rsplit("/", 1)[-1]
        if not _NAME_PART.match(name) or len(name) > 63:
            out.append(invalid_value(path, key, KEY_MSG))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            out.append(invalid_value(f"{path}", value, VALUE_MSG))
    return out


def validate_selector(sel: Any, path: str) -> list[Cause]:
    if not sel:
        return []
    out = validate_labels(sel.get("matchLabels"), f"{path}.matchLabels")
    ops = ["DoesNotExist", "Exists", "In", "NotIn"]
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        p, op = f"{path}.matchExpressions[{i}]", expr.get("operator")
        if op in ("In", "NotIn") and not expr.get("values"):
            out.append(
                _required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'")
            )
        elif op in ("Exists", "DoesNotExist") and expr.get("values"):
            out.append(
                _forbidden(
                    f"{p}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif op not in ops:
            out.append(_unsupported(f"{p}.operator", op, ops))
    return out


def port_name_errors(name: str) -> list[str]:
    """Why `name` is not a port name (IANA_SVC_NAME), as kube-apiserver words it."""
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not re.fullmatch(r"[-a-z0-9]+", name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def validate_port(port: dict[str, Any], path: str) -> list[Cause]:
    out: list[Cause] = []
    proto = port.get("protocol")
    if proto is not None and proto not in ("TCP", "UDP", "SCTP"):
        out.append(_unsupported(f"{path}.protocol", proto, ["SCTP", "TCP", "UDP"]))
    value, end = port.get("port"), port.get("endPort")
    if value is None:
        if end is not None:
            out.append(
                invalid_value(
                    f"{path}.endPort", end, "may not be specified when `port` is not specified"
                )
            )
    elif isinstance(value, int):
        if not 1 <= value <= 65535:
            out.append(invalid_value(f"{path}.port", value, PORT_RANGE_MSG))
        if end is not None:
            if end < value:
                out.append(
                    invalid_value(
                        f"{path}.endPort", value, "must be greater than or equal to `port`"
                    )
                )
            if not 1 <= end <= 65535:
                out.append(invalid_value(f"{path}.endPort", end, PORT_RANGE_MSG))
    else:
        if end is not None:
            out.append(
                invalid_value(
                    f"{path}.endPort", end, "may not be specified when `port` is non-numeric"
                )
            )
        out += [invalid_value(f"{path}.port", value, m) for m in port_name_errors(value)]
    return out


CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def validate_peer(peer: dict[str, Any], path: str) -> list[Cause]:
    out: list[Cause] = []
    count = sum(peer.get(k) is not None for k in ("podSelector", "namespaceSelector", "ipBlock"))
    out += validate_selector(peer.get("podSelector"), f"{path}.podSelector")
    out += validate_selector(peer.get("namespaceSelector"), f"{path}.namespaceSelector")
    block = peer.get("ipBlock")
    if block is not None:
        cidr = parse_cidr(block.get("cidr"))
        if not block.get("cidr"):
            out.append(_required(f"{path}.ipBlock.cidr"))
        elif cidr is None:
            out.append(invalid_value(f"{path}.ipBlock.cidr", block.get("cidr"), CIDR_MSG))
        for i, text in enumerate(block.get("except") or []):
            exc = parse_cidr(text)
            where = f"{path}.ipBlock.except[{i}]"
            if exc is None:
                out.append(invalid_value(where, text, CIDR_MSG))
            elif cidr is not None and (
                exc.version != cidr.version
                or not exc.subnet_of(cidr)
                or exc.prefixlen <= cidr.prefixlen  # type: ignore[arg-type]
            ):
                out.append(invalid_value(where, text, "must be a strict subset of `cidr`"))
    if count == 0:
        out.append(_required(path, "must specify a peer"))
    elif count > 1 and block is not None:
        out.append(_forbidden(path, "may not specify both ipBlock and another peer"))
    return out


def validate_network_policy(res: Resource, obj: dict[str, Any]) -> None:
    """Raise the API server's 422 for an invalid (already defaulted) NetworkPolicy."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    causes = validate_name(meta.get("name"))
    causes += validate_labels(meta.get("labels"), "metadata.labels")
    causes += validate_selector(spec.get("podSelector"), "spec.podSelector")
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            rule = rule or {}
            for j, port in enumerate(rule.get("ports") or []):
                causes += validate_port(port or {}, f"spec.{direction}[{i}].ports[{j}]")
            for j, peer in enumerate(rule.get(peers_key) or []):
                causes += validate_peer(peer or {}, f"spec.{direction}[{i}].{peers_key}[{j}]")
    types = spec.get("policyTypes") or []
    for i, kind in enumerate(types):
        if kind not in ("Ingress", "Egress"):
            causes.append(_unsupported(f"spec.policyTypes[{i}]", kind, ["Egress", "Ingress"]))
    if len(types) > 2:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.policyTypes",
                f"Invalid value: {types}: may not specify more than two policyTypes",
            )
        )
    if causes:
        raise invalid(res, str(meta.get("name", "")), causes)


def validate_metadata_only(res: Resource, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Objects other than NetworkPolicies may change labels and annotations only."""
    strip = ("resourceVersion", "labels", "annotations", "managedFields", "generation")

    def core(o: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (o.get("metadata") or {}).items() if k not in strip}
        return {**{k: v for k, v in o.items() if k not in ("metadata", "status")}, "metadata": meta}

    if core(old) != core(new):
        raise ApiError(
            403,
            "Forbidden",
            f'{res.qualified} "{new["metadata"].get("name")}" is forbidden: User '
            f'"netgauge-agent" may change only labels and annotations of {res.plural} in '
            "this cluster",
        )
    causes = validate_labels((new.get("metadata") or {}).get("labels"), "metadata.labels")
    if causes:
        raise invalid(res, str(new["metadata"].get("name", "")), causes)
