"""Reading and changing the rules of a NetworkPolicy spec, for the fault families of generated
applications (hardened.py).

A rule is addressed by `where = (direction, index)`; a change is a function of the spec
(faults.apply calls it on the policy being faulted), so a fault is a description and a
change, as in mistakes.py.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Callable, Iterator
from typing import Any

from generators.k8s.callgraph import MicroApp, Workload
from generators.k8s.manifests import NS_LABEL
from generators.k8s.mistakes import Fault, Spec

POD_CIDR = "10.244.0.0/16"
Where = tuple[str, int]  # (direction, rule index)
KEYS = {"ingress": "from", "egress": "to"}


def fault(kind: str, variant: str, policy: str, where: Where, **operands: Any) -> Fault:
    return {"fault": kind, "variant": variant, "policy": policy, "direction": where[0],
            "rule": where[1], **operands}  # fmt: skip


# -- changes of a spec ---------------------------------------------------------------------
def edit(where: Where, how: Callable[[dict[str, Any]], None]) -> Callable[[Spec], None]:
    direction, i = where

    def apply(spec: Spec) -> None:
        how(spec[direction][i])

    return apply


def set_peer(where: Where, j: int, peers: list[dict[str, Any]]) -> Callable[[Spec], None]:
    """Peer j of the rule replaced by `peers` (none: dropped, and the rule if it empties)."""
    direction, i = where
    key = KEYS[direction]

    def apply(spec: Spec) -> None:
        rule = spec[direction][i]
        rule[key][j : j + 1] = copy.deepcopy(peers)
        if not rule[key]:
            del spec[direction][i]

    return apply


def drop_rule(where: Where) -> Callable[[Spec], None]:
    return lambda spec: spec[where[0]].pop(where[1])


def set_key(where: Where, key: str, value: Any) -> Callable[[Spec], None]:
    """The rule's `key` (from, to, ports) replaced by `value`."""
    return edit(where, lambda rule: rule.__setitem__(key, copy.deepcopy(value)))


def set_ports(where: Where, k: int, entries: list[dict[str, Any]]) -> Callable[[Spec], None]:
    def how(rule: dict[str, Any]) -> None:
        rule["ports"][k : k + 1] = copy.deepcopy(entries)

    return edit(where, how)


def set_block(where: Where, j: int, block: dict[str, Any]) -> Callable[[Spec], None]:
    key = KEYS[where[0]]
    return edit(where, lambda rule: rule[key][j].__setitem__("ipBlock", dict(block)))


# -- reading a spec ------------------------------------------------------------------------
def named_peer(p: dict[str, Any]) -> tuple[str, str | None] | None:
    """(app, namespace or None) of a peer naming one workload by its `app` label."""
    if "podSelector" not in p or not set(p) <= {"podSelector", "namespaceSelector"}:
        return None
    labels = p["podSelector"].get("matchLabels") or {}
    if set(p["podSelector"]) != {"matchLabels"} or set(labels) != {"app"}:
        return None
    ns = None
    if "namespaceSelector" in p:
        ns_labels = p["namespaceSelector"].get("matchLabels") or {}
        if set(p["namespaceSelector"]) != {"matchLabels"} or set(ns_labels) != {NS_LABEL}:
            return None
        ns = ns_labels[NS_LABEL]
    return labels["app"], ns


def rules(spec: Spec) -> Iterator[tuple[Where, dict[str, Any]]]:
    for direction in ("ingress", "egress"):
        for i, rule in enumerate(spec.get(direction) or []):
            yield (direction, i), rule


def is_dns(rule: dict[str, Any]) -> bool:
    return any(named_peer(p) == ("kube-dns", "kube-system") for p in rule.get("to") or [])


def in_list(p: dict[str, Any]) -> list[str] | None:
    """The namespaces of a peer `namespaceSelector: {matchExpressions: [key In [...]]}`."""
    exprs = (p.get("namespaceSelector") or {}).get("matchExpressions") or []
    if set(p) == {"namespaceSelector"} and len(exprs) == 1 and exprs[0]["operator"] == "In":
        return list(exprs[0]["values"])
    return None


def in_peer(values: list[str]) -> dict[str, Any]:
    expr = {"key": NS_LABEL, "operator": "In", "values": values}
    return {"namespaceSelector": {"matchExpressions": [expr]}}


def ip_block(cidr: str, excepted: list[str] | None = None) -> dict[str, Any]:
    return {"cidr": cidr, **({"except": excepted} if excepted else {})}


def covering(ip: str, inside: str, prefix: int) -> str:
    """The network of length `prefix` around `ip` (a strict subnet of `inside`)."""
    net = ipaddress.ip_network(f"{ip}/{prefix}", strict=False)
    assert net.subnet_of(ipaddress.ip_network(inside))
    return str(net)


def other_namespace(app: MicroApp, ns: str) -> str:
    spaces = list(app.namespaces)
    return spaces[(spaces.index(ns) + 1) % len(spaces)] if ns in spaces else spaces[0]


def port_owner(app: MicroApp, where: Where, rule: dict[str, Any], name: str) -> Workload | None:
    """The workload whose ports a rule's port entries name: the policy's own for ingress,
    the callee for egress."""
    if where[0] == "ingress":
        return app.by_name.get(name)
    named = [named_peer(p) for p in rule.get("to") or []]
    return app.by_name.get(named[0][0]) if len(named) == 1 and named[0] else None
