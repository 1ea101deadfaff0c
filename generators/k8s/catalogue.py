"""Every single fault of levels 6-8 an estate admits, as `Fault` records (kinds.py names
them), in a fixed order: the rules of its policies here, whole policies and the other
objects in catalogue_objects.py.

A fault is one object changed (two for a policy moved to another namespace): the overlay
(overlay.py) it makes, the root cause an answer names (device: the namespace; component:
`networkpolicy/<ns>/<name>`, `namespace/<name>`, `pod/<ns>/<name>` or
`service/<ns>/<name>`), its placement (the role of the workload it is about, or the tier
of its namespace: what the variety strata count) and its operands. Faults touch only the
application's namespaces and monitoring: `audit` and `sandbox` are where benign anomalies
live (benign.py).
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from generators.k8s import estate as E
from generators.k8s.callgraph import EXCLUDED_CIDR, MicroApp, Workload
from generators.k8s.hardened import _wrong_ports
from generators.k8s.hardened_egress import BROKEN_DNS
from generators.k8s.manifests import NS_LABEL
from generators.k8s.mistakes import misspelt
from generators.k8s.overlay import Key, key_of
from generators.k8s.rule_edits import (
    KEYS,
    POD_CIDR,
    Where,
    covering,
    drop_rule,
    in_list,
    in_peer,
    ip_block,
    is_dns,
    rules,
    set_block,
    set_key,
    set_peer,
    set_ports,
)
from pipeline.api import canonical_json

LABEL_KEYS = ("name", "k8s-app", "app.kubernetes.io/instance")  # not the pods' keys
EXTRA_PEERS = 3  # workloads one rule may wrongly admit (a seeded few of all the others)
Spec = dict[str, Any]


@dataclass(frozen=True)
class Fault:
    kind: str  # kinds.py id
    variant: str
    placement: str
    device: str  # the namespace of the component
    component: str
    changes: tuple[tuple[Key, dict[str, Any] | None], ...]
    detail: dict[str, Any] = field(default_factory=dict, compare=False)

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

    def cause(self) -> dict[str, str]:
        return {"device": self.device, "component": self.component, "kind": self.kind}

    def describe(self) -> dict[str, Any]:
        return {**self.cause(), "variant": self.variant, "placement": self.placement,
                "id": self.id, **self.detail}  # fmt: skip


def policy_fault(
    kind: str, variant: str, policy: dict[str, Any], change: Callable[[Spec], None],
    placement: str, **detail: Any,
) -> Fault | None:  # fmt: skip
    """The fault `change` makes of `policy` (None when it changes nothing)."""
    faulted = copy.deepcopy(policy)
    change(faulted["spec"])
    if faulted["spec"] == policy["spec"]:
        return None
    meta = policy["metadata"]
    component = f"networkpolicy/{meta['namespace']}/{meta['name']}"
    return Fault(kind, variant, placement, meta["namespace"], component,
                 ((key_of(policy), faulted),), detail)  # fmt: skip


def named(p: dict[str, Any]) -> tuple[str, dict[str, str] | None] | None:
    """(app, the namespaceSelector's matchLabels or None) of a peer naming one workload by
    its `app` label, its namespace by name or by tier (or not at all)."""
    if "podSelector" not in p or not set(p) <= {"podSelector", "namespaceSelector"}:
        return None
    labels = (p["podSelector"] or {}).get("matchLabels") or {}
    if set(p["podSelector"]) != {"matchLabels"} or set(labels) != {"app"}:
        return None
    if "namespaceSelector" not in p:
        return labels["app"], None
    ns = (p["namespaceSelector"] or {}).get("matchLabels") or {}
    if set(p["namespaceSelector"]) != {"matchLabels"} or len(ns) != 1:
        return None
    if set(ns) not in ({NS_LABEL}, {E.TIER}):
        return None
    return labels["app"], dict(ns)


def _mix(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _other_namespace(app: MicroApp, ns: str) -> str:
    spaces = list(app.namespaces)
    return spaces[(spaces.index(ns) + 1) % len(spaces)] if ns in spaces else spaces[0]


def _other_tier(tier: str) -> str:
    return {"app": "data", "data": "app", "edge": "app", "monitoring": "app"}.get(tier, "app")


# -- rules of a policy -----------------------------------------------------------------------
def rule_faults(es: E.Estate, policy: dict[str, Any]) -> Iterator[Fault | None]:
    """The faults of the rules of one workload's policy, kind by kind."""
    app = es.app
    w = app.by_name[policy["metadata"]["name"]]
    spec = policy["spec"]
    place = w.role
    for where, rule in rules(spec):
        f = functools.partial(_rule_fault, policy, place, where)
        key = KEYS[where[0]]
        if is_dns(rule):
            yield f("k8s.egress_dns_missing", "no_dns", drop_rule(where))
            for variant, peers in BROKEN_DNS.items():
                yield f("k8s.egress_dns_missing", variant, set_key(where, "to", peers))
            yield f("k8s.egress_dns_missing", "tcp_only",
                    set_key(where, "ports", [{"port": 53, "protocol": "TCP"}]))  # fmt: skip
            yield f("k8s.egress_dns_missing", "port_5353",
                    set_key(where, "ports", [{"port": 5353, "protocol": "UDP"},
                                             {"port": 5353, "protocol": "TCP"}]))  # fmt: skip
            continue
        peers = rule.get(key) or []
        if spec.get("egress") == [{}] and where[0] == "egress":
            continue  # an open egress: its mistakes are catalogue_objects.lockdowns
        yield f("k8s.peer_missing", "rule", drop_rule(where))
        yield from _peer_faults(es, w, where, peers, f)
        yield from _port_faults(app, w, where, rule, f)


def _rule_fault(
    policy: dict[str, Any], place: str, where: Where, kind: str, variant: str,
    change: Callable[[Spec], None], **detail: Any,
) -> Fault | None:  # fmt: skip
    return policy_fault(kind, variant, policy, change, place, direction=where[0], rule=where[1],
                        **detail)  # fmt: skip


def _peer_faults(es: E.Estate, w: Workload, where: Where, peers: list, f) -> Iterator[Fault | None]:
    app = es.app
    ingress = where[0] == "ingress"
    key = KEYS[where[0]]
    listed = {n[0] for n in (named(p) for p in peers) if n}
    if ingress and peers and all(named(p) for p in peers):
        others = [o for o in app.app_workloads if o.name not in listed and o.name != w.name]
        for other in sorted(others, key=lambda o: _mix(w.name, where, o.name))[:EXTRA_PEERS]:
            extra = [*peers, E.peer(es, other, w.name, w.namespace)]
            yield f("k8s.peer_extra", "peer", set_key(where, key, extra), peer=other.name)
        yield f("k8s.peer_extra", "all_pods", set_key(where, key, [*peers, {"podSelector": {}}]))
    for j, p in enumerate(peers):
        if len(peers) > 1:
            yield f("k8s.peer_missing", "peer", set_peer(where, j, []), peer=j)
        found = named(p)
        if found is not None:
            target, ns_labels = found
            for value in misspelt(target)[:1]:
                wrong = {**p, "podSelector": {"matchLabels": {"app": value}}}
                yield f("k8s.peer_selector_wrong", "label_value", set_peer(where, j, [wrong]),
                        peer=target, value=value)  # fmt: skip
            for other_key in LABEL_KEYS:
                wrong = {**p, "podSelector": {"matchLabels": {other_key: target}}}
                yield f("k8s.peer_selector_wrong", "label_key", set_peer(where, j, [wrong]),
                        peer=target, key=other_key)  # fmt: skip
            if ns_labels is None:
                other = {NS_LABEL: _other_namespace(app, w.namespace)}
                wrong = {**p, "namespaceSelector": {"matchLabels": other}}
                yield f("k8s.peer_namespace_wrong", "namespace_added",
                        set_peer(where, j, [wrong]), peer=target)  # fmt: skip
                continue
            ns = app.by_name[target].namespace
            plain = {"podSelector": p["podSelector"]}
            yield f("k8s.peer_namespace_wrong", "namespace_dropped", set_peer(where, j, [plain]),
                    peer=target)  # fmt: skip
            variants = [("name_label", {"name": ns})]
            if NS_LABEL in ns_labels:
                variants.append(("other_namespace", {NS_LABEL: _other_namespace(app, ns)}))
            else:
                variants.append(("other_tier", {E.TIER: _other_tier(ns_labels[E.TIER])}))
            for variant, labels in variants:
                wrong = {**p, "namespaceSelector": {"matchLabels": labels}}
                yield f("k8s.peer_namespace_wrong", variant, set_peer(where, j, [wrong]),
                        peer=target)  # fmt: skip
            split = [{"namespaceSelector": p["namespaceSelector"]},
                     {"podSelector": p["podSelector"]}]  # fmt: skip
            yield f("k8s.ns_selector_split", "split", set_peer(where, j, split), peer=target)
            if ingress:
                whole = [{"namespaceSelector": p["namespaceSelector"]}]
                yield f("k8s.peer_extra", "namespace_only", set_peer(where, j, whole),
                        peer=target)  # fmt: skip
        values = in_list(p)
        if values:
            for k, value in enumerate(values):
                rest = values[:k] + values[k + 1 :]
                yield f("k8s.peer_namespace_wrong", "list_missing",
                        set_peer(where, j, [in_peer(rest)]), namespace=value)  # fmt: skip
                typo = [*rest[:k], f"{value}-ns", *rest[k:]]
                yield f("k8s.peer_namespace_wrong", "list_misspelt",
                        set_peer(where, j, [in_peer(typo)]), namespace=value)  # fmt: skip
            if ingress:
                yield f("k8s.peer_extra", "all_namespaces",
                        set_peer(where, j, [{"namespaceSelector": {}}]))  # fmt: skip
        block = p.get("ipBlock")
        if block is not None:
            yield from _block_faults(app, where, j, block, f)


def _block_faults(app: MicroApp, where: Where, j: int, block: dict, f) -> Iterator[Fault | None]:
    clients = [app.by_name["lb"]] if where[0] == "ingress" else [app.by_name["partner-api"]]
    if block.get("except"):
        yield f("k8s.ipblock_wrong", "except_dropped", set_block(where, j, ip_block(block["cidr"])))
        for client in clients:
            grown = [*block["except"], covering(client.ip, block["cidr"], 28)]
            change = set_block(where, j, ip_block(block["cidr"], grown))
            yield f("k8s.ipblock_wrong", "except_covers", change, client=client.name)
        admin = app.by_name["admin-host"].ip
        narrow = ip_block(covering(admin, block["cidr"], 28), block["except"])
        yield f("k8s.ipblock_wrong", "cidr_narrowed", set_block(where, j, narrow))
        if where[0] == "ingress":
            wide = ip_block(POD_CIDR, block["except"])
            yield f("k8s.ipblock_wrong", "cidr_widened", set_block(where, j, wide))
    elif block.get("cidr") == EXCLUDED_CIDR:
        host = ip_block(f"{app.by_name['admin-host'].ip.rsplit('.', 1)[0]}.249/32")
        yield f("k8s.ipblock_wrong", "cidr_narrowed", set_block(where, j, host))
        yield f("k8s.ipblock_wrong", "cidr_widened",
                set_block(where, j, ip_block("10.244.0.192/26")))  # fmt: skip


def port_owner(app: MicroApp, w: Workload, where: Where, rule: dict) -> Workload | None:
    """The workload whose ports a rule's entries name: the policy's own for ingress, the
    callee of an egress rule naming one workload."""
    if where[0] == "ingress":
        return w
    found = [named(p) for p in rule.get("to") or []]
    return app.by_name.get(found[0][0]) if len(found) == 1 and found[0] else None


def _port_faults(app: MicroApp, w: Workload, where: Where, rule: dict, f) -> Iterator[Fault | None]:
    owner = port_owner(app, w, where, rule)
    for k, entry in enumerate(rule.get("ports") or []):
        old, proto = entry.get("port"), entry.get("protocol", "TCP")
        if old is None or entry.get("endPort") is not None:
            continue
        for variant, new in _wrong_ports(app, owner, old):
            kind = "k8s.named_port_wrong" if isinstance(new, str) else "k8s.port_wrong"
            value = {"port": new, "protocol": proto}
            yield f(kind, variant, set_ports(where, k, [value]), port=old, new_port=new)
        if isinstance(old, int):
            for low, high in ((old + 1, old + 10), (old - 10, old - 1)):
                if low >= 1 and high <= 65535:
                    value = {"port": low, "endPort": high, "protocol": proto}
                    yield f("k8s.port_wrong", "range", set_ports(where, k, [value]),
                            port=old, new_port=low, end_port=high)  # fmt: skip
        for new_proto in ("TCP",) if proto == "UDP" else ("UDP", "SCTP"):
            yield f("k8s.protocol_wrong", "udp_as_tcp" if proto == "UDP" else "protocol",
                    set_ports(where, k, [{**entry, "protocol": new_proto}]),
                    port=old, protocol=new_proto)  # fmt: skip
