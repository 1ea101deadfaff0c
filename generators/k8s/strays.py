"""Policies the intent does not have, at level 8: faults that open what must stay closed
(`k8s.policy_extra`) and decoys of the same shape that change nothing.

NetworkPolicies add up, so a policy beside the intended ones can only admit more. Each one
here stands in a target workload T's namespace, selects pods by the label Deployments and
Services select (`app.kubernetes.io/name`), and admits one of T's intended callers C as
the intent admits it, written as another team writes it. Whether it opens anything is
not in the policy: it is decided by the pods it selects, their container ports' names and
the namespaces' labels, so telling a fault from a decoy takes the policy and the pods it
resolves on:

  fault  named_port_other   C admitted on T's other port, by name (`metrics`: 9090 on T,
                            meant for Prometheus only)
  fault  selector_wider     podSelector `In [T, U]`, C on T's port name: redundant on T;
                            U (same namespace) has a port of that name, so C reaches U
  fault  all_ports          C admitted with no `ports` (every port of T)
  decoy  duplicate          C on T's port name: what T's own policy admits already
  decoy  unresolved_port    `In [T, U]` as above, but U has no port of that name: a named
                            port that a pod lacks admits nothing on it
  decoy  retired            selects the retired `T-v1` pods (none run) and admits every pod
  decoy  pod_ip             C by its pod's address (ipBlock /32) on T's port name
  fault  pod_ip_other       another pod's address, one the intent does not let reach T
  decoy  block_except       the /29 around C's pod, every other pod's address in `except`
  fault  block_except_short the same with one of those addresses missing from `except`

Pods' addresses are in no policy and not in the intent: `kubectl get pods -A -o wide`
says whose they are.

A decoy is not a cause and may stay (or go: it changes no connection); the prompt says
both (generator6.py). Only faults some probe sees and decoys no probe sees are offered
(compose.Estates checks each with the pure evaluator).
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterator
from typing import Any

from generators.k8s import estate as E
from generators.k8s.benign import Benign
from generators.k8s.callgraph import Workload
from generators.k8s.catalogue import Fault
from generators.k8s.manifests import NS_LABEL
from generators.k8s.overlay import key_of

KIND = "k8s.policy_extra"
SUFFIXES = ("canary", "hotfix", "migration", "ops-window", "perf-test")


def _pick(*parts: str) -> int:
    return int(hashlib.sha256("/".join(parts).encode()).hexdigest()[:8], 16)


def _name(target: str, caller: str, variant: str) -> str:
    """A name another team would give it (never one the intent uses)."""
    n = _pick(target, caller, variant)
    if n % 2:
        return f"allow-{caller}-to-{target}"
    return f"{target}-{SUFFIXES[(n >> 1) % len(SUFFIXES)]}"


def _peer(es: E.Estate, caller: Workload, namespace: str) -> dict[str, Any]:
    """`caller` as another team selects it: by its Deployment's label, its namespace by
    name or tier (whichever names it alone)."""
    out: dict[str, Any] = {"podSelector": {"matchLabels": {E.SELECTOR: caller.name}}}
    if caller.namespace != namespace:
        tier = es.tier_of(caller.namespace)
        alone = sum(es.tier_of(ns) == tier for ns in es.app.namespaces) == 1
        by_tier = alone and _pick(caller.name, namespace) % 2 == 0
        labels = {E.TIER: tier} if by_tier else {NS_LABEL: caller.namespace}
        out["namespaceSelector"] = {"matchLabels": labels}
    return out


def _policy(name: str, namespace: str, selector: dict[str, Any], rule: dict[str, Any]):
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podSelector": selector, "ingress": [rule], "policyTypes": ["Ingress"]},
    }


def _one(w: Workload) -> dict[str, Any]:
    return {"matchLabels": {E.SELECTOR: w.name}}


def _pair(t: Workload, u: Workload) -> dict[str, Any]:
    names = sorted((t.name, u.name))
    return {"matchExpressions": [{"key": E.SELECTOR, "operator": "In", "values": names}]}


Made = tuple[str, str, str, Workload, dict[str, Any]]


def _made(kind: str, variant: str, t: Workload, c: Workload, selector: dict, rule: dict,
          role: str) -> Made:  # fmt: skip
    policy = _policy(_name(t.name, c.name, variant), t.namespace, selector, rule)
    return kind, variant, role, t, policy


def _blocks(t: Workload, c: Workload, named: dict, ips: dict[str, Workload]) -> Iterator[Made]:
    """The ipBlock shapes for caller `c` of `t` (`ips`: every pod's address -> workload)."""
    callers = {w.name for w in ips.values() if any(k.target == t.name for k in w.calls)}
    ports = named["ports"]
    one = {"from": [{"ipBlock": {"cidr": f"{c.ip}/32"}}], "ports": ports}
    yield _made("decoy", "pod_ip", t, c, _one(t), one, t.role)
    others = sorted((w for w in ips.values() if w.name not in callers and w.role != "external"),
                    key=lambda w: _pick(t.name, c.name, w.name))  # fmt: skip
    for x in others[:2]:
        rule = {"from": [{"ipBlock": {"cidr": f"{x.ip}/32"}}], "ports": ports}
        yield _made("fault", "pod_ip_other", t, c, _one(t), rule, t.role)
    net = ipaddress.ip_network(f"{c.ip}/29", strict=False)
    near = [w for ip, w in ips.items() if ipaddress.ip_address(ip) in net]
    inside = sorted((w for w in near if w.name not in callers),
                    key=lambda w: ipaddress.ip_address(w.ip))  # fmt: skip
    if not inside:
        return
    block = {"cidr": str(net), "except": [f"{w.ip}/32" for w in inside]}
    whole = {"from": [{"ipBlock": block}], "ports": ports}
    yield _made("decoy", "block_except", t, c, _one(t), whole, t.role)
    for w in sorted(inside, key=lambda w: _pick(t.name, c.name, w.name, "short"))[:2]:
        short = {**block, "except": [e for e in block["except"] if e != f"{w.ip}/32"]}
        rule = {"from": [{"ipBlock": short}], "ports": ports}
        yield _made("fault", "block_except_short", t, c, _one(t), rule, t.role)


def _shapes(es: E.Estate) -> Iterator[Made]:
    """(fault or decoy, variant, placement role, target, policy) of every stray shape."""
    app = es.app
    ips = {w.ip: w for w in app.workloads if w.ip}
    for t in app.app_workloads:
        if not t.ports or t.role == "worker":
            continue
        port = t.ports[0]
        callers = sorted(app.callers(t.name), key=lambda c: _pick(t.name, c.name))
        for c in callers[:2]:
            rule = {"from": [_peer(es, c, t.namespace)]}
            named = {**rule, "ports": [{"port": port.name, "protocol": port.protocol}]}
            yield _made("decoy", "duplicate", t, c, _one(t), named, t.role)
            yield _made("fault", "all_ports", t, c, _one(t), rule, t.role)
            yield from _blocks(t, c, named, ips)
            for other in t.ports[1:]:
                ports = [{"port": other.name, "protocol": other.protocol}]
                yield _made("fault", "named_port_other", t, c, _one(t), {**rule, "ports": ports},
                            t.role)  # fmt: skip
            mates = [u for u in app.app_workloads if u.namespace == t.namespace and u is not t]
            for u in sorted(mates, key=lambda u: _pick(t.name, c.name, u.name))[:2]:
                if any(p.name == port.name and p.protocol == port.protocol for p in u.ports):
                    yield _made("fault", "selector_wider", t, c, _pair(t, u), named, u.role)
                else:
                    yield _made("decoy", "unresolved_port", t, c, _pair(t, u), named, t.role)
        everyone = {"from": [{"namespaceSelector": {}, "podSelector": {}}]}
        name = f"{t.name}-v1-{SUFFIXES[_pick(t.name) % len(SUFFIXES)]}"
        retired = {"matchLabels": {E.SELECTOR: f"{t.name}-v1"}}
        yield "decoy", "retired", t.role, t, _policy(name, t.namespace, retired, everyone)


def stray_faults(es: E.Estate) -> Iterator[Fault]:
    """Every `k8s.policy_extra` fault of an estate, in order (observable or not)."""
    for kind, variant, role, t, policy in _shapes(es):
        if kind == "fault":
            ns, name = policy["metadata"]["namespace"], policy["metadata"]["name"]
            yield Fault(KIND, variant, role, ns, f"networkpolicy/{ns}/{name}",
                        ((key_of(policy), policy),), {"target": t.name})  # fmt: skip


def decoys(es: E.Estate) -> list[Benign]:
    """Every decoy of an estate, in order (those some probe sees left out by the caller)."""
    out = []
    for kind, variant, role, _, policy in _shapes(es):
        if kind == "decoy":
            out.append(Benign(f"decoy.{variant}", role, "", ((key_of(policy), policy),)))
    return out
