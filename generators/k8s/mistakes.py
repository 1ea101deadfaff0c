"""The five families of NetworkPolicy mistakes the k8s faults are drawn from.

Each `<kind>(policies)` lists, in a fixed order, every fault of that kind the current
policies admit, as (description, change of the policy's spec) pairs; faults.py draws
from these lists and capacity.py walks them. Operands are read from the policies as they
are (earlier faults of the same query included), from Online Boutique's call graph
(boutique.SERVICES) and from its pod and Service addresses.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

from generators.k8s.boutique import BY_NAME, NAMESPACE, SERVICES, cluster_objects

Policies = dict[str, dict[str, Any]]  # policy name -> object
Fault = dict[str, Any]
Spec = dict[str, Any]
# One candidate fault: its description (ground truth) and how it changes its policy's spec.
Candidate = tuple[Fault, Callable[[Spec], None]]

NS_LABEL = "kubernetes.io/metadata.name"
LABEL_KEYS = ("name", "app.kubernetes.io/name", "k8s-app")  # the peer's label under another key
WRONG_NAMESPACES = ({"name": NAMESPACE}, {NS_LABEL: "kube-system"}, {NS_LABEL: "boutique"})
PORT_NAMES = ("grpc", "http", "redis", "dns", "metrics", "web")
OTHER_PROTOCOLS = ("UDP", "SCTP")
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/12"  # ClusterIPs: what policies never see (they see pod IPs)
DNS_PEER = {
    "namespaceSelector": {"matchLabels": {NS_LABEL: "kube-system"}},
    "podSelector": {"matchLabels": {"app": "kube-dns"}},
}
DNS_PORTS = [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
DNS_RULE = {"to": [DNS_PEER], "ports": DNS_PORTS}
# A DNS egress rule that does not reach the DNS pod, as people write it.
BROKEN_DNS = {
    "no_namespace_selector": {"to": [{"podSelector": DNS_PEER["podSelector"]}], "ports": DNS_PORTS},
    "tcp_only": {"to": [DNS_PEER], "ports": [{"port": 53, "protocol": "TCP"}]},
    "name_label": {
        "to": [{**DNS_PEER, "namespaceSelector": {"matchLabels": {"name": "kube-system"}}}],
        "ports": DNS_PORTS,
    },
}


@functools.cache
def addresses() -> tuple[dict[str, str], dict[str, str]]:
    """(pod IP, Service ClusterIP) by workload name, read from the cluster objects."""
    pods, services = {}, {}
    for obj in cluster_objects():
        meta = obj["metadata"]
        app = (meta.get("labels") or {}).get("app")
        if obj["kind"] == "Pod" and app in BY_NAME:
            pods[app] = obj["status"]["podIP"]
        elif obj["kind"] == "Service" and app in BY_NAME:
            services[app] = obj["spec"]["clusterIP"]
    return pods, services


def _sel(app: str) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {"app": app}}}


def _app(peer: dict[str, Any]) -> str | None:
    """The workload a plain podSelector peer names (None for any other peer)."""
    if set(peer) != {"podSelector"}:
        return None
    labels = (peer.get("podSelector") or {}).get("matchLabels") or {}
    return labels.get("app") if set(labels) == {"app"} else None


def misspelt(app: str) -> list[str]:
    """Label values people write for `app` that no workload carries."""
    if app.endswith("service"):
        stem = app.removesuffix("service")
        return [stem, f"{stem}-service"]
    return [app.capitalize(), f"{app}-v1"]


def targets(name: str) -> list[str]:
    """The workloads `name` is meant to reach (it calls them, or they admit everyone)."""
    return [
        w.name
        for w in SERVICES
        if w.target is not None and w.name != name and (name in w.callers or w.callers == ("*",))
    ]


def _egress_rule(app: str, service_port: bool = False, protocol: str = "TCP") -> dict[str, Any]:
    w = BY_NAME[app]
    port = w.port if service_port else w.target
    return {"to": [_sel(app)], "ports": [{"port": port, "protocol": protocol}]}


def _fault(kind: str, variant: str, policy: str, **operands: Any) -> Fault:
    return {"fault": kind, "variant": variant, "policy": policy, **operands}


def typos(port: int) -> set[int]:
    """The port with two adjacent digits swapped or one digit dropped (valid ports only)."""
    text = str(port)
    swapped = {text[:i] + text[i + 1] + text[i] + text[i + 2 :] for i in range(len(text) - 1)}
    dropped = {text[:i] + text[i + 1 :] for i in range(len(text))}
    found = {int(t) for t in swapped | dropped if t and not t.startswith("0")}
    return {n for n in found if 1 <= n <= 65535 and n != port}


def _port_entries(spec: Spec) -> list[tuple[int, int, dict[str, Any]]]:
    """(rule, entry, port) of every single numeric port of an ingress rule."""
    return [
        (i, k, port)
        for i, rule in enumerate(spec.get("ingress") or [])
        for k, port in enumerate(rule.get("ports") or [])
        if isinstance(port.get("port"), int) and port.get("endPort") is None
    ]


# -- RI ----------------------------------------------------------------------------------
def _drop_peer(i: int, j: int) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        rule = spec["ingress"][i]
        del rule["from"][j]
        if not rule["from"]:
            del spec["ingress"][i]

    return apply


def _drop_rule(i: int) -> Callable[[Spec], None]:
    return lambda spec: spec["ingress"].pop(i)


def _set_peer(i: int, j: int, peer: dict[str, Any]) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        spec["ingress"][i]["from"][j] = copy.deepcopy(peer)

    return apply


def _set_from(i: int, peers: list[dict[str, Any]]) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        spec["ingress"][i]["from"] = copy.deepcopy(peers)

    return apply


def remove_ingress(policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    _, service_ips = addresses()
    for name in sorted(policies):
        for i, rule in enumerate(policies[name]["spec"].get("ingress") or []):
            peers = rule.get("from") or []
            f = functools.partial(_fault, "remove_ingress", policy=name, rule=i)
            if not peers:  # an allow-all rule (frontend's)
                out.append((f("rule"), _drop_rule(i)))
                for w in SERVICES:
                    if w.name != name:
                        out.append((f("admit_one", peer=w.name), _set_from(i, [_sel(w.name)])))
                ns = {"namespaceSelector": {"matchLabels": {"name": NAMESPACE}}}
                out.append((f("namespace_label", peer="*"), _set_from(i, [ns])))
                continue
            if len(peers) > 1:
                out.append((f("rule"), _drop_rule(i)))
            for j, peer in enumerate(peers):
                app = _app(peer)
                if app is None:
                    continue
                out.append((f("peer", peer=app), _drop_peer(i, j)))
                for key in LABEL_KEYS:
                    wrong = {"podSelector": {"matchLabels": {key: app}}}
                    out.append((f("label_key", peer=app, key=key), _set_peer(i, j, wrong)))
                for value in misspelt(app):
                    wrong = _sel(value)
                    out.append((f("label_value", peer=app, value=value), _set_peer(i, j, wrong)))
                for labels in WRONG_NAMESPACES:
                    wrong = {**_sel(app), "namespaceSelector": {"matchLabels": labels}}
                    fault = f("namespace", peer=app, namespace=labels)
                    out.append((fault, _set_peer(i, j, wrong)))
                if app in service_ips:
                    block = {"ipBlock": {"cidr": f"{service_ips[app]}/32"}}
                    out.append((f("service_ip", peer=app), _set_peer(i, j, block)))
                block = {"ipBlock": {"cidr": SERVICE_CIDR}}
                out.append((f("service_cidr", peer=app), _set_peer(i, j, block)))
    return out


# -- AI ----------------------------------------------------------------------------------
def _add_peer(i: int | None, peer: dict[str, Any], port: int) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        if i is None:
            rule = {"from": [], "ports": [{"port": port, "protocol": "TCP"}]}
            spec.setdefault("ingress", []).append(rule)
        else:
            rule = spec["ingress"][i]
        rule["from"].append(copy.deepcopy(peer))

    return apply


def add_ingress(policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    pod_ips, _ = addresses()
    for name in sorted(policies):
        w = BY_NAME.get(name)
        rules = policies[name]["spec"].get("ingress") or []
        if w is None or w.target is None or any(not r.get("from") for r in rules):
            continue  # no Service to reach, or everyone is admitted already
        allowed = {_app(p) for r in rules for p in r["from"]}
        first = 0 if rules else None
        f = functools.partial(_fault, "add_ingress", policy=name)
        plain = first is not None and all(_app(p) for p in rules[0]["from"])
        for other in SERVICES:
            if other.name in allowed or other.name == name:
                continue
            peer = other.name
            out.append((f("peer", peer=peer), _add_peer(first, _sel(peer), w.target)))
            block = {"ipBlock": {"cidr": f"{pod_ips[peer]}/32"}}
            out.append((f("pod_ip", peer=peer), _add_peer(first, block, w.target)))
            if plain:
                listed = sorted({_app(p) for p in rules[0]["from"]} | {peer})
                expr = {"key": "app", "operator": "In", "values": listed}
                new = [{"podSelector": {"matchExpressions": [expr]}}]
                out.append((f("match_expressions", peer=peer), _set_from(0, new)))
        broad = {
            "all_pods": {"podSelector": {}},
            "all_namespaces": {"namespaceSelector": {}},
            "pod_cidr": {"ipBlock": {"cidr": POD_CIDR}},
            "app_exists": {
                "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
            },
            "namespace": {"namespaceSelector": {"matchLabels": {NS_LABEL: NAMESPACE}}},
        }
        for variant, peer in broad.items():
            out.append((f(variant, peer="*"), _add_peer(first, peer, w.target)))
    return out


# -- CP ----------------------------------------------------------------------------------
def _set_port(i: int, k: int, entry: dict[str, Any]) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        spec["ingress"][i]["ports"][k] = dict(entry)

    return apply


def change_port(policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    service_targets = {w.target for w in SERVICES if w.target is not None}
    for name in sorted(policies):
        w = BY_NAME.get(name)
        for i, k, port in _port_entries(policies[name]["spec"]):
            old, proto = port["port"], port.get("protocol", "TCP")
            f = functools.partial(_fault, "change_port", policy=name, rule=i, port=old)
            numbers = service_targets | {old + 1, old - 1}
            if w is not None and w.port is not None and w.target == old:
                numbers.add(w.port)  # the Service port instead of the container port
            for new in sorted(n for n in numbers - {old} if 1 <= n <= 65535):
                entry = {"port": new, "protocol": proto}
                out.append((f("number", new_port=new), _set_port(i, k, entry)))
            for new in sorted(typos(old) - numbers):
                entry = {"port": new, "protocol": proto}
                out.append((f("typo", new_port=new), _set_port(i, k, entry)))
            for new in PORT_NAMES:
                if w is None or new != w.port_name:
                    entry = {"port": new, "protocol": proto}
                    out.append((f("name", new_port=new), _set_port(i, k, entry)))
            for low, high in ((old + 1, old + 10), (old + 1, old + 100), (old - 10, old - 1)):
                if low >= 1 and high <= 65535:
                    entry = {"port": low, "endPort": high, "protocol": proto}
                    fault = f("range", new_port=low, end_port=high)
                    out.append((fault, _set_port(i, k, entry)))
            if old - 100 >= 1:
                entry = {"port": old - 100, "endPort": old - 1, "protocol": proto}
                fault = f("range", new_port=old - 100, end_port=old - 1)
                out.append((fault, _set_port(i, k, entry)))
    return out


# -- CPR ---------------------------------------------------------------------------------
def _set_ports(i: int, k: int, entries: list[dict[str, Any]]) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        spec["ingress"][i]["ports"][k : k + 1] = copy.deepcopy(entries)

    return apply


def _split_rule(i: int, j: int, k: int, proto: str) -> Callable[[Spec], None]:
    """Rule i written as one rule per peer, peer j's port entry k with `proto`."""

    def apply(spec: Spec) -> None:
        rule = spec["ingress"][i]
        split = []
        for n, peer in enumerate(rule["from"]):
            one = {**copy.deepcopy(rule), "from": [copy.deepcopy(peer)]}
            if n == j:
                one["ports"][k]["protocol"] = proto
            split.append(one)
        spec["ingress"][i : i + 1] = split

    return apply


def _set_rule(direction: str, i: int, rule: dict[str, Any]) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        spec[direction][i] = copy.deepcopy(rule)

    return apply


def change_protocol(policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    for name in sorted(policies):
        w = BY_NAME.get(name)
        spec = policies[name]["spec"]
        f = functools.partial(_fault, "change_protocol", policy=name)
        for i, k, port in _port_entries(spec):
            if port.get("protocol", "TCP") != "TCP":
                continue
            number = port["port"]
            g = functools.partial(f, rule=i, port=number)
            for proto in OTHER_PROTOCOLS:
                entry = [{"port": number, "protocol": proto}]
                out.append((g("protocol", protocol=proto), _set_ports(i, k, entry)))
                if w is not None and w.target == number:
                    entry = [{"port": w.port_name, "protocol": proto}]
                    fault = g("named_port", protocol=proto, port_name=w.port_name)
                    out.append((fault, _set_ports(i, k, entry)))
                entry = [{"port": 1024, "endPort": 65535, "protocol": proto}]
                out.append((g("high_range", protocol=proto), _set_ports(i, k, entry)))
            pair = [{"port": number, "protocol": p} for p in OTHER_PROTOCOLS]
            out.append((g("udp_and_sctp", protocol="UDP+SCTP"), _set_ports(i, k, pair)))
            peers = spec["ingress"][i].get("from") or []
            if len(peers) > 1 and all(_app(p) for p in peers):
                for j, peer in enumerate(peers):
                    for proto in OTHER_PROTOCOLS:
                        fault = g("one_caller", protocol=proto, peer=_app(peer))
                        out.append((fault, _split_rule(i, j, k, proto)))
        for i, rule in enumerate(spec.get("ingress") or []):
            if rule or w is None or w.target is None:
                continue  # only an allow-all rule (frontend's)
            for proto in OTHER_PROTOCOLS:
                for port in (None, w.target, w.port_name):
                    entry = (
                        {"protocol": proto} if port is None else {"port": port, "protocol": proto}
                    )
                    fault = f("allow_all", rule=i, protocol=proto, port=port)
                    out.append((fault, _set_rule("ingress", i, {"ports": [entry]})))
        if (spec.get("egress") or []) == [{}]:
            for proto in OTHER_PROTOCOLS:
                rule = {"ports": [{"protocol": proto}]}
                out.append((f("egress", protocol=proto), _set_rule("egress", 0, rule)))
                # Egress locked down to DNS and the callees, one callee's rule not on TCP.
                callees = targets(name)
                for t in callees:
                    rules = [
                        DNS_RULE,
                        *(_egress_rule(c, protocol=proto if c == t else "TCP") for c in callees),
                    ]
                    fault = f("egress_callee", protocol=proto, peer=t)
                    out.append((fault, _set_egress(rules)))
    return out


# -- AE ----------------------------------------------------------------------------------
def _set_egress(rules: list[dict[str, Any]]) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        spec["egress"] = copy.deepcopy(rules)
        if "Egress" not in spec.get("policyTypes", []):
            spec.setdefault("policyTypes", ["Ingress"]).append("Egress")

    return apply


def add_egress(policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    for name in sorted(policies):
        if (policies[name]["spec"].get("egress") or []) != [{}]:
            continue
        f = functools.partial(_fault, "add_egress", policy=name)
        callees = targets(name)
        for w in SERVICES:
            if w.target is not None and w.name != name:
                fault = f("one_peer", peer=w.name, port=w.target)
                out.append((fault, _set_egress([_egress_rule(w.name)])))
        allowed = [_egress_rule(t) for t in callees]
        out.append((f("no_dns", peer="*"), _set_egress(allowed)))
        for t in callees:
            rest = [_egress_rule(c) for c in callees if c != t]
            out.append((f("missing_callee", peer=t), _set_egress([DNS_RULE, *rest])))
            if BY_NAME[t].port != BY_NAME[t].target:
                ports = [_egress_rule(c, service_port=c == t) for c in callees]
                fault = f("service_port", peer=t, port=BY_NAME[t].port)
                out.append((fault, _set_egress([DNS_RULE, *ports])))
        for variant, rule in BROKEN_DNS.items():
            out.append((f("dns", peer="*", dns=variant), _set_egress([rule, *allowed])))
    return out
