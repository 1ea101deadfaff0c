"""The five fault families on a generated application's hardened policies (manifests.py).

Each `<kind>(app, policies)` lists, in a fixed order, every fault of that kind the given
policies admit, as (description, change of the policy's spec) pairs, like mistakes.py does
for Online Boutique. The mistakes are the ones multi-namespace policies invite:

  RI  a caller loses access: its peer is gone or misspelt, under another label key, lost
      its namespaceSelector (so it names a pod of the policy's own namespace), names the
      namespace by a `name:` label namespaces do not carry or names another namespace;
      a same-namespace peer gains a namespaceSelector; an ipBlock's `except` grows over
      a client, or its `cidr` shrinks past one; a namespace drops out of an `In` list.
  AI  something unintended is admitted: a peer that is not a caller; a cross-namespace
      peer split into two peers (namespaceSelector OR podSelector instead of AND) or
      stripped of its podSelector (the whole namespace); a peer `podSelector: {}`; an
      ipBlock that lost its `except` or grew to the pod CIDR; an `In` list opened to
      every namespace; the partner rule's egress `except` dropped.
  CP  a port is wrong: the Service port where the policy sees the container port (in
      ingress and, after DNAT, in egress), another service's port, off by one, a typo, a
      name the pod does not have or its other named port, a range that misses; DNS on
      5353, the partner on 8443, StatsD on 8126 or 9125, Prometheus' `metrics` port as
      9100 or `http-metrics`.
  CPR a protocol is wrong: TCP written UDP or SCTP (ingress, egress, a named port), the
      StatsD collector's UDP written TCP, DNS allowed over TCP only, an open egress
      narrowed to one protocol (hardened_egress.py).
  AE  an egress rule is missing or broken: a callee's rule dropped, its peer without the
      namespaceSelector or under a `name:` label, the DNS rule dropped or broken, the
      partner rule dropped or its `except` grown over the partner, the StatsD rule
      dropped, Prometheus' scrape list missing a namespace; an open egress locked down
      where it was not meant to be, or locked down without DNS or a callee, with a
      callee's Service port, or to one peer (hardened_egress.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from generators.k8s.callgraph import MicroApp, Workload
from generators.k8s.hardened_egress import add_egress, change_protocol
from generators.k8s.manifests import NS_LABEL, peer
from generators.k8s.mistakes import LABEL_KEYS, Candidate, Policies, misspelt, typos
from generators.k8s.rule_edits import (
    KEYS,
    POD_CIDR,
    covering,
    drop_rule,
    fault,
    in_list,
    in_peer,
    ip_block,
    is_dns,
    named_peer,
    other_namespace,
    port_owner,
    rules,
    set_block,
    set_key,
    set_peer,
    set_ports,
)


# -- RI --------------------------------------------------------------------------------------
def remove_ingress(app: MicroApp, policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    lb, partner = app.by_name["lb"], app.by_name["partner-api"]
    for name in sorted(policies):
        ns = policies[name]["metadata"]["namespace"]
        for where, rule in rules(policies[name]["spec"]):
            if where[0] != "ingress":
                continue
            f = functools.partial(fault, "remove_ingress", policy=name, where=where)
            peers = rule.get("from") or []
            if len(peers) > 1:
                out.append((f("rule"), drop_rule(where)))
            for j, p in enumerate(peers):
                named = named_peer(p)
                if named is not None:
                    target, peer_ns = named
                    out.append((f("peer", peer=target), set_peer(where, j, [])))
                    for key in LABEL_KEYS:
                        wrong = {**p, "podSelector": {"matchLabels": {key: target}}}
                        out.append(
                            (f("label_key", peer=target, key=key), set_peer(where, j, [wrong]))
                        )
                    for value in misspelt(target):
                        wrong = {**p, "podSelector": {"matchLabels": {"app": value}}}
                        out.append(
                            (
                                f("label_value", peer=target, value=value),
                                set_peer(where, j, [wrong]),
                            )
                        )
                    if peer_ns is not None:
                        plain = {"podSelector": p["podSelector"]}
                        out.append(
                            (f("namespace_dropped", peer=target), set_peer(where, j, [plain]))
                        )
                        for labels, variant in (
                            ({"name": peer_ns}, "namespace_label"),
                            ({NS_LABEL: other_namespace(app, peer_ns)}, "namespace_other"),
                        ):
                            wrong = {**p, "namespaceSelector": {"matchLabels": labels}}
                            out.append(
                                (
                                    f(variant, peer=target, namespace=labels),
                                    set_peer(where, j, [wrong]),
                                )
                            )
                    else:
                        other = {NS_LABEL: other_namespace(app, ns)}
                        wrong = {**p, "namespaceSelector": {"matchLabels": other}}
                        out.append(
                            (
                                f("namespace_added", peer=target, namespace=other),
                                set_peer(where, j, [wrong]),
                            )
                        )
                block = p.get("ipBlock")
                if block and block.get("except"):
                    for client in (lb, partner):
                        excepted = [*block["except"], covering(client.ip, block["cidr"], 28)]
                        out.append(
                            (
                                f("except_covers", peer=client.name),
                                set_block(where, j, ip_block(block["cidr"], excepted)),
                            )
                        )
                    narrow = ip_block(
                        covering(app.by_name["admin-host"].ip, block["cidr"], 28), block["except"]
                    )
                    out.append(
                        (f("cidr_narrowed", cidr=narrow["cidr"]), set_block(where, j, narrow))
                    )
                elif block:
                    host = ip_block(f"{app.by_name['admin-host'].ip.rsplit('.', 1)[0]}.249/32")
                    out.append((f("cidr_narrowed", cidr=host["cidr"]), set_block(where, j, host)))
                listed = in_list(p)
                if listed:
                    for k, value in enumerate(listed):
                        rest = listed[:k] + listed[k + 1 :]
                        out.append(
                            (
                                f("namespace_missing", namespace=value),
                                set_peer(where, j, [in_peer(rest)]),
                            )
                        )
                        typo = [*rest[:k], f"{value}-ns", *rest[k:]]
                        out.append(
                            (
                                f("namespace_misspelt", namespace=value),
                                set_peer(where, j, [in_peer(typo)]),
                            )
                        )
    return out


# -- AI --------------------------------------------------------------------------------------
def add_ingress(app: MicroApp, policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    for name in sorted(policies):
        ns = policies[name]["metadata"]["namespace"]
        for where, rule in rules(policies[name]["spec"]):
            key = KEYS[where[0]]
            f = functools.partial(fault, "add_ingress", policy=name, where=where)
            peers = rule.get(key) or []
            named = [named_peer(p) for p in peers]
            if where[0] == "ingress" and peers and all(named):
                listed = {n[0] for n in named if n}
                for other in app.app_workloads:
                    if other.name in listed or other.name == name:
                        continue
                    extra = [*peers, peer(other, ns)]
                    out.append((f("peer", peer=other.name), set_key(where, "from", extra)))
                all_pods = [*peers, {"podSelector": {}}]
                out.append((f("all_pods"), set_key(where, "from", all_pods)))
            for j, p in enumerate(peers):
                n = named[j]
                if where[0] == "ingress" and n is not None and n[1] is not None:
                    split = [
                        {"namespaceSelector": p["namespaceSelector"]},
                        {"podSelector": p["podSelector"]},
                    ]
                    out.append((f("split_peer", peer=n[0]), set_peer(where, j, split)))
                    whole = [{"namespaceSelector": p["namespaceSelector"]}]
                    out.append((f("namespace_only", peer=n[0]), set_peer(where, j, whole)))
                block = p.get("ipBlock")
                if block and block.get("except"):
                    out.append((f("except_dropped"), set_block(where, j, ip_block(block["cidr"]))))
                    if where[0] == "ingress":
                        wide = ip_block(POD_CIDR, block["except"])
                        out.append((f("cidr_widened", cidr=POD_CIDR), set_block(where, j, wide)))
                if where[0] == "ingress" and in_list(p):
                    out.append(
                        (f("all_namespaces"), set_peer(where, j, [{"namespaceSelector": {}}]))
                    )
    return out


# -- CP --------------------------------------------------------------------------------------
def _numbers(app: MicroApp, target: Workload | None, old: int) -> list[tuple[str, int]]:
    """(variant, number) of wrong port numbers people write for `old`: the Service's port,
    one off, a port of a workload `target` talks to, a typo."""
    found: dict[int, str] = {}
    if target is not None and target.service_port not in (None, old):
        found[target.service_port] = "service_port"
    for n in (old + 1, old - 1):
        found.setdefault(n, "off_by_one")
    if target is not None:
        near = {c.target for c in target.calls} | {w.name for w in app.callers(target.name)}
        for w in (app.by_name[n] for n in sorted(near)):
            if w.ports and w.service_port is not None:
                found.setdefault(w.ports[0].number, "other_service")
    for n in sorted(typos(old)):
        found.setdefault(n, "typo")
    return sorted((v, n) for n, v in found.items() if n != old and 1 <= n <= 65535)


WRONG_NAMES = ("grpc", "http", "metrics", "http-metrics", "web", "tcp")
SPECIAL_PORTS = {
    53: (5353,),
    443: (8443, 80),
    8125: (8126, 9125),
    "metrics": (9100, "http-metrics"),
}


def _wrong_ports(app: MicroApp, target: Workload | None, old: Any) -> list[tuple[str, Any]]:
    """(variant, wrong value) people write for the port entry `old` of a rule whose ports
    are `target`'s (a name or a number)."""
    out = [("well_known", new) for new in SPECIAL_PORTS.get(old, ())]
    names = {p.name: p.number for p in target.ports} if target else {}
    if isinstance(old, str):
        number = names.get(old)
        out += _numbers(app, target, number) if number else []
        out += [("other_name" if n in names else "name", n) for n in WRONG_NAMES if n != old]
        return out
    out += _numbers(app, target, old)
    if target is not None:
        out += [("name", n) for n in WRONG_NAMES if names.get(n) != old]
    return out


def change_port(app: MicroApp, policies: Policies) -> list[Candidate]:
    out: list[Candidate] = []
    for name in sorted(policies):
        for where, rule in rules(policies[name]["spec"]):
            target = port_owner(app, where, rule, name)
            for k, entry in enumerate(rule.get("ports") or []):
                old, proto = entry.get("port"), entry.get("protocol", "TCP")
                if old is None or entry.get("endPort") is not None:
                    continue
                f = functools.partial(fault, "change_port", policy=name, where=where, port=old)
                # DNS's 53 is only ever 5353 here: the other numbers are not mistakes.
                wrong = _wrong_ports(app, None if is_dns(rule) else target, old)
                if is_dns(rule):
                    wrong = wrong[: len(SPECIAL_PORTS[53])]
                for variant, new in wrong:
                    value = {"port": new, "protocol": proto}
                    out.append((f(variant, new_port=new), set_ports(where, k, [value])))
                if isinstance(old, int) and not is_dns(rule):
                    for low, high in ((old + 1, old + 10), (old - 10, old - 1)):
                        if low >= 1 and high <= 65535:
                            value = {"port": low, "endPort": high, "protocol": proto}
                            fault_ = f("range", new_port=low, end_port=high)
                            out.append((fault_, set_ports(where, k, [value])))
    return out


FAMILIES: dict[str, Callable[[MicroApp, Policies], list[Candidate]]] = {  # by fault type
    "remove_ingress": remove_ingress,
    "add_ingress": add_ingress,
    "change_port": change_port,
    "change_protocol": change_protocol,
    "add_egress": add_egress,
}
