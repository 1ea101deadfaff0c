"""Protocol and egress faults (CPR, AE) of a generated application's policies; see hardened.py.

A workload whose egress is open (`egress: [{}]`, callgraph: outside `locked`) gets the
mistakes of locking it down: the lock-down itself where it was not meant to be, or one
that forgets DNS or a callee, breaks the DNS rule, names a callee's Service port, lets
only one peer through, or allows one protocol only.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

from generators.k8s.callgraph import MicroApp
from generators.k8s.manifests import DNS_PEER, NS_LABEL, locked_egress, peer
from generators.k8s.mistakes import Candidate, Policies, Spec, misspelt
from generators.k8s.rule_edits import (
    Where,
    covering,
    drop_rule,
    fault,
    in_list,
    in_peer,
    ip_block,
    is_dns,
    named_peer,
    rules,
    set_block,
    set_key,
    set_peer,
    set_ports,
)

OPEN: Where = ("egress", 0)
# DNS rules that do not reach the DNS pod, as people write them.
BROKEN_DNS = {
    "no_namespace_selector": [{"podSelector": DNS_PEER["podSelector"]}],
    "name_label": [{**DNS_PEER, "namespaceSelector": {"matchLabels": {"name": "kube-system"}}}],
    "namespace_only": [{"namespaceSelector": {"matchLabels": {NS_LABEL: "kube-system"}}}],
}


def _set_egress(rules_: list[dict[str, Any]]) -> Callable[[Spec], None]:
    def apply(spec: Spec) -> None:
        spec["egress"] = copy.deepcopy(rules_)

    return apply


# -- CPR -------------------------------------------------------------------------------------
def change_protocol(app: MicroApp, policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    for name in sorted(policies):
        spec = policies[name]["spec"]
        if spec.get("egress") == [{}]:
            f = functools.partial(fault, "change_protocol", policy=name, where=OPEN)
            for proto in ("UDP", "SCTP"):
                only = [{"ports": [{"protocol": proto}]}]
                out.append((f("egress_one_protocol", protocol=proto), _set_egress(only)))
        for where, rule in rules(spec):
            f = functools.partial(fault, "change_protocol", policy=name, where=where)
            if is_dns(rule):
                tcp = [{"port": 53, "protocol": "TCP"}]
                out.append((f("dns_tcp_only"), set_key(where, "ports", tcp)))
                continue
            for k, entry in enumerate(rule.get("ports") or []):
                proto, port = entry.get("protocol", "TCP"), entry.get("port")
                for new in ("TCP",) if proto == "UDP" else ("UDP", "SCTP"):
                    variant = "udp_as_tcp" if proto == "UDP" else "protocol"
                    change = set_ports(where, k, [{**entry, "protocol": new}])
                    out.append((f(variant, port=port, protocol=new), change))
                if proto == "TCP":
                    both = [{**entry, "protocol": "UDP"}, {**entry, "protocol": "SCTP"}]
                    change = set_ports(where, k, both)
                    out.append((f("udp_and_sctp", port=port, protocol="UDP+SCTP"), change))
    return out


# -- AE --------------------------------------------------------------------------------------
def _lockdowns(app: MicroApp, name: str) -> list[Candidate]:
    """The mistaken lock-downs of an open egress (the module docstring)."""
    w = app.by_name[name]
    locked = locked_egress(app, w)
    f = functools.partial(fault, "add_egress", policy=name, where=OPEN)
    out: list[Candidate] = [(f("locked_down"), _set_egress(locked))]
    for r, rule in enumerate(locked):
        rest = locked[:r] + locked[r + 1 :]
        if r == 0:
            out.append((f("lockdown_without_dns"), _set_egress(rest)))
            continue
        found = named_peer((rule.get("to") or [{}])[0])
        what = found[0] if found else "partner-api"
        out.append((f("lockdown_without_callee", peer=what), _set_egress(rest)))
        callee = app.by_name.get(what)
        if callee is not None and callee.service_port not in (None, callee.ports[0].number):
            wrong = {**rule, "ports": [{"port": callee.service_port, "protocol": "TCP"}]}
            fixed = [*locked[:r], wrong, *locked[r + 1 :]]
            out.append((f("lockdown_service_port", peer=what), _set_egress(fixed)))
    for variant, peers in BROKEN_DNS.items():
        broken = [{**locked[0], "to": peers}, *locked[1:]]
        out.append((f("lockdown_broken_dns", dns=variant), _set_egress(broken)))
    for other in app.app_workloads:
        if other.service_port is not None and other.name != name:
            port = {"port": other.ports[0].number, "protocol": other.ports[0].protocol}
            only = [{"to": [peer(other, w.namespace)], "ports": [port]}]
            out.append((f("one_peer", peer=other.name), _set_egress(only)))
    return out


def add_egress(app: MicroApp, policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    partner = app.by_name["partner-api"]
    for name in sorted(policies):
        if policies[name]["spec"].get("egress") == [{}]:
            out += _lockdowns(app, name)
            continue
        for where, rule in rules(policies[name]["spec"]):
            if where[0] != "egress":
                continue
            f = functools.partial(fault, "add_egress", policy=name, where=where)
            peers = rule.get("to") or []
            if is_dns(rule):
                out.append((f("no_dns"), drop_rule(where)))
                for variant, broken in BROKEN_DNS.items():
                    out.append((f("dns", dns=variant), set_key(where, "to", broken)))
                continue
            for j, p in enumerate(peers):
                named = named_peer(p)
                if named is not None:
                    target, peer_ns = named
                    out.append((f("missing_callee", peer=target), drop_rule(where)))
                    if peer_ns is not None:
                        plain = {"podSelector": p["podSelector"]}
                        change = set_peer(where, j, [plain])
                        out.append((f("callee_namespace_dropped", peer=target), change))
                        label = {**p, "namespaceSelector": {"matchLabels": {"name": peer_ns}}}
                        change = set_peer(where, j, [label])
                        out.append((f("callee_namespace_label", peer=target), change))
                    value = misspelt(target)[0]
                    wrong = {**p, "podSelector": {"matchLabels": {"app": value}}}
                    change = set_peer(where, j, [wrong])
                    out.append((f("callee_label", peer=target, value=value), change))
                block = p.get("ipBlock")
                if block and block.get("except"):
                    out.append((f("partner_rule_dropped"), drop_rule(where)))
                    excepted = [*block["except"], covering(partner.ip, block["cidr"], 28)]
                    change = set_block(where, j, ip_block(block["cidr"], excepted))
                    out.append((f("partner_excepted"), change))
                listed = in_list(p)
                for k, value in enumerate(listed or []):
                    rest = in_peer(listed[:k] + listed[k + 1 :])
                    change = set_peer(where, j, [rest])
                    out.append((f("scrape_namespace_missing", namespace=value), change))
    return out
