"""The faults of whole objects of an estate (levels 6-8): open egresses locked down,
policies whose type, selector or place is wrong or that are gone, default denies gone,
namespaces' and pods' labels, Services' targetPort and selector; and `singles`, every
fault of an estate in order (catalogue.py holds the Fault record and the rules' faults).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from generators.k8s import estate as E
from generators.k8s.callgraph import MONITORING, Workload
from generators.k8s.catalogue import Fault, _other_namespace, policy_fault, rule_faults
from generators.k8s.clusters import ClusterSpec
from generators.k8s.hardened_egress import BROKEN_DNS
from generators.k8s.manifests import locked_egress
from generators.k8s.mistakes import misspelt
from generators.k8s.overlay import key_of

HTTP_NAMES = ("http", "grpc")


def _set_egress(rules: list[dict[str, Any]]):
    def apply(spec: dict[str, Any]) -> None:
        spec["egress"] = copy.deepcopy(rules)

    return apply


def pinned(es: E.Estate, w: Workload) -> list[dict[str, Any]]:
    """The egress of `w` locked down to DNS and what it calls (peers as the estate names
    them): a mistake on an open egress, or a benign anomaly the intent documents."""
    return E._cross_tier(locked_egress(es.app, w), es, w)


def lockdowns(es: E.Estate, policy: dict[str, Any]) -> Iterator[Fault | None]:
    """The mistaken lock-downs of an open egress (hardened_egress.py's, on an estate)."""
    w = es.app.by_name[policy["metadata"]["name"]]
    locked = pinned(es, w)

    def f(variant: str, egress: list[dict[str, Any]], **detail: Any) -> Fault | None:
        return policy_fault("k8s.egress_lockdown_unintended", variant, policy,
                            _set_egress(egress), w.role, **detail)  # fmt: skip

    yield f("locked_down", locked)
    yield f("lockdown_without_dns", locked[1:])
    for r in range(1, len(locked)):
        yield f("lockdown_without_callee", locked[:r] + locked[r + 1 :], rule=r)
    for variant, peers in BROKEN_DNS.items():
        yield f("lockdown_broken_dns", [{**locked[0], "to": peers}, *locked[1:]], dns=variant)
    for proto in ("UDP", "SCTP"):
        yield f("egress_one_protocol", [{"ports": [{"protocol": proto}]}], protocol=proto)
    for other in es.app.app_workloads:
        if other.service_port is not None and other.name != w.name:
            port = {"port": other.ports[0].number, "protocol": other.ports[0].protocol}
            one = [{"to": [E.peer(es, other, w.name, w.namespace)], "ports": [port]}]
            yield f("one_peer", one, peer=other.name)


def policy_faults(es: E.Estate, policy: dict[str, Any]) -> Iterator[Fault | None]:
    """A workload's policy as a whole: its types, its selector, gone, elsewhere."""
    w = es.app.by_name[policy["metadata"]["name"]]
    spec, meta = policy["spec"], policy["metadata"]
    types = spec.get("policyTypes") or []
    if len(types) == 2:
        for drop in types:
            rest = [t for t in types if t != drop]
            yield policy_fault("k8s.policy_types_wrong", f"no_{drop.lower()}", policy,
                               lambda s, rest=rest: s.__setitem__("policyTypes", rest),
                               w.role, dropped=drop)  # fmt: skip
    for variant, labels in (
        ("value", {"app": misspelt(w.name)[0]}),
        ("key", {E.SELECTOR.replace("name", "instance"): w.name}),
    ):
        yield policy_fault("k8s.policy_selector_wrong", variant, policy,
                           lambda s, labels=labels: s.__setitem__(
                               "podSelector", {"matchLabels": labels}),
                           w.role, selector=labels)  # fmt: skip
    component = f"networkpolicy/{meta['namespace']}/{meta['name']}"
    yield Fault("k8s.policy_missing", "deleted", w.role, meta["namespace"], component,
                ((key_of(policy), None),))  # fmt: skip
    if meta["namespace"] in es.app.namespaces:
        other = _other_namespace(es.app, meta["namespace"])
        moved = copy.deepcopy(policy)
        moved["metadata"]["namespace"] = other
        yield Fault(
            "k8s.policy_wrong_namespace", "moved", w.role, other,
            f"networkpolicy/{other}/{meta['name']}",
            ((key_of(policy), None), (key_of(moved), moved)),
            {"intended_namespace": meta["namespace"]},
        )  # fmt: skip


def namespace_faults(es: E.Estate, spec: ClusterSpec) -> Iterator[Fault]:
    objects = {key_of(o): o for o in spec.objects()}
    for ns in (*es.app.namespaces, MONITORING):
        tier = es.tier_of(ns)
        deny = next(p for p in spec.intended() if p["metadata"]["name"] == f"default-deny-{ns}")
        yield Fault("k8s.default_deny_missing", "deleted", tier, ns,
                    f"networkpolicy/{ns}/default-deny-{ns}", ((key_of(deny), None),))  # fmt: skip
        obj = objects[("Namespace", "", ns)]
        labels = obj["metadata"]["labels"]
        for variant, new in (
            ("removed", {k: v for k, v in labels.items() if k != E.TIER}),
            ("value", {**labels, E.TIER: f"{tier}s"}),
            ("key", {**{k: v for k, v in labels.items() if k != E.TIER}, "teir": tier}),
        ):
            changed = copy.deepcopy(obj)
            changed["metadata"]["labels"] = new
            yield Fault("k8s.ns_label_missing", variant, tier, ns, f"namespace/{ns}",
                        ((key_of(obj), changed),), {"labels": new})  # fmt: skip


def workload_faults(es: E.Estate, spec: ClusterSpec) -> Iterator[Fault]:
    """Pods' `app` labels and Services' targetPort and selector."""
    objects = {key_of(o): o for o in spec.objects()}
    pods = {
        o["metadata"]["labels"][E.SELECTOR]: o
        for o in objects.values()
        if o["kind"] == "Pod" and E.SELECTOR in o["metadata"]["labels"]
    }
    for w in es.app.workloads:
        if w.namespace not in (*es.app.namespaces, MONITORING):
            continue
        pod = pods[w.name]
        name = pod["metadata"]["name"]
        for variant, value in (("value", misspelt(w.name)[0]), ("removed", None)):
            changed = copy.deepcopy(pod)
            labels = changed["metadata"]["labels"]
            if value is None:
                del labels["app"]
            else:
                labels["app"] = value
            yield Fault("k8s.pod_label_drift", variant, w.role, w.namespace,
                        f"pod/{w.namespace}/{name}", ((key_of(pod), changed),),
                        {"app": value})  # fmt: skip
        svc = objects.get(("Service", w.namespace, w.name))
        if svc is None:
            continue
        yield from _service_faults(w, svc)


def _service_faults(w: Workload, svc: dict[str, Any]) -> Iterator[Fault]:
    port = w.ports[0]
    targets: dict[Any, str] = {}
    if w.service_port != port.number:
        targets[w.service_port] = "service_port"
    targets.setdefault(port.number + 1, "off_by_one")
    for other in w.ports[1:]:
        targets.setdefault(other.number, "other_port")
    for name in HTTP_NAMES:
        if name != port.name and name not in {p.name for p in w.ports}:
            targets.setdefault(name, "name")
            break
    component = f"service/{w.namespace}/{w.name}"
    for value, variant in targets.items():
        changed = copy.deepcopy(svc)
        changed["spec"]["ports"][0]["targetPort"] = value
        yield Fault("k8s.svc_targetport_mismatch", variant, w.role, w.namespace, component,
                    ((key_of(svc), changed),), {"target_port": value})  # fmt: skip
    for variant, selector in (
        ("value", {E.SELECTOR: misspelt(w.name)[0]}),
        ("key", {E.SELECTOR.replace("name", "instance"): w.name}),
        ("extra_label", {E.SELECTOR: w.name, "version": "v2"}),
    ):
        changed = copy.deepcopy(svc)
        changed["spec"]["selector"] = selector
        yield Fault("k8s.svc_selector_mismatch", variant, w.role, w.namespace, component,
                    ((key_of(svc), changed),), {"selector": selector})  # fmt: skip


def singles(spec: ClusterSpec) -> list[Fault]:
    """Every fault of the estate `spec`, in a fixed order, each once."""
    es = spec.estate
    found: list[Fault] = []
    seen: set[str] = set()

    def add(fault: Fault | None) -> None:
        if fault is not None and fault.id not in seen:
            seen.add(fault.id)
            found.append(fault)

    for policy in spec.intended():
        name, ns = policy["metadata"]["name"], policy["metadata"]["namespace"]
        if name not in es.app.by_name or ns not in (*es.app.namespaces, MONITORING):
            continue
        for fault in rule_faults(es, policy):
            add(fault)
        if policy["spec"].get("egress") == [{}]:
            for fault in lockdowns(es, policy):
                add(fault)
        for fault in policy_faults(es, policy):
            add(fault)
    for fault in namespace_faults(es, spec):
        add(fault)
    for fault in workload_faults(es, spec):
        add(fault)
    return found
