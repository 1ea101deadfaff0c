"""NetworkPolicies and Services compiled to one `iptables-restore` script per pod.

Each pod's namespace gets its own rules (so one policy change rewrites only the pods it
selects): Service ClusterIPs are DNATed to the first ready endpoint in `nat OUTPUT`
(kube-proxy's translation done at the source, as socket-level load balancers do; the
filter chains then see the real destination, as policies require); established and
related packets pass; `NGK-INGRESS` / `NGK-EGRESS` accept everything for a direction no
policy isolates, else hold one ACCEPT per peer x port x protocol and end in REJECT. An
ipBlock with `except` gets its own chain whose first rules RETURN the excepted ranges.

The data plane is IPv4 (pods have IPv4 addresses): an IPv6 ipBlock, which the API accepts,
can match no peer and compiles to no rule, as on an IPv4-only cluster. Only canonical
text reaches a script (`str(IPv4Network)`, `str(IPv4Address)`, port numbers, our own
chain names), and every line is checked against the characters rules are made of.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from emulators.k8s.policy import (
    PodInfo,
    View,
    ip_in_block,
    parse_cidr,
    peer_matches,
    policy_types,
    resolve_target,
    selects,
)

PROTOCOLS = {"TCP": "tcp", "UDP": "udp", "SCTP": "sctp"}
# Every line of a script: what the rules above are made of, and no newline, quote, '#' or
# other character iptables-restore's line grammar gives a meaning.
_LINE = re.compile(r"[A-Za-z0-9 *:\[\]/.,_-]+")
# Filter rules the data plane takes across all pods. Peers x ports x selected pods lets a
# policy of a few kB ask for millions, which would hold the runner's memory and the
# kernel's; the intended policies of the boutique need about a hundred.
MAX_RULES = 50_000


def _ports(
    entries: list[Mapping[str, Any]] | None, dests: list[PodInfo] | None
) -> list[tuple[str, str | None, str | None]]:
    """(iptables protocol, --dport value or None, destination IP or None) per allowed port;
    named ports expand to one entry per destination pod that names that port. An empty
    list means every port; [] of a rule whose named ports resolve nowhere means none."""
    if not entries:
        return [("", None, None)]
    out: list[tuple[str, str | None, str | None]] = []
    for entry in entries:
        proto = entry.get("protocol", "TCP")
        value, end = entry.get("port"), entry.get("endPort")
        if value is None:
            out.append((PROTOCOLS[proto], None, None))
        elif isinstance(value, str):
            for pod in dests or []:
                number = pod.named_port(value, proto)
                if number is not None:
                    out.append((PROTOCOLS[proto], _port(number), pod.ip))
        else:
            dport = f"{_port(value)}:{_port(end)}" if end else _port(value)
            out.append((PROTOCOLS[proto], dport, None))
    return out


def rule_bound(view: View) -> int:
    """An upper bound of the lines policies add to `compile_all`'s scripts, counted without
    writing them: the sum of `policy_bound` over the policies."""
    return sum(policy_bound(view, policy) for policy in view.policies)


def policy_bound(view: View, policy: Mapping[str, Any]) -> int:
    """One policy's share of `rule_bound`: per selected pod, per rule, peers (an ipBlock's
    chain, jump and excepts; the pods a selector matches) times port entries (a named port
    may resolve on any pod). It depends on the policy and the pods, namespaces and
    Services only, never on the other policies."""
    pods = list(view.pods.values())
    selected = sum(1 for pod in pods if selects(policy, pod))
    if not selected:
        return 0
    ns = (policy.get("metadata") or {}).get("namespace", "default")
    per_pod = 0
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for rule in (policy.get("spec") or {}).get(direction) or []:
            entries = rule.get("ports") or []
            width = max(1, sum(len(pods) if isinstance(e.get("port"), str) else 1 for e in entries))
            peers = rule.get(peers_key) or []
            if not peers:
                per_pod += width
            for peer in peers:
                block = peer.get("ipBlock")
                if block is not None:
                    per_pod += 2 + len(block.get("except") or []) + width  # chain, jump
                else:
                    matched = sum(1 for other in pods if peer_matches(peer, ns, other, view))
                    per_pod += matched * width
    return selected * per_pod


def check_policy(view: View, policy: Mapping[str, Any]) -> None:
    """Compile one policy's rules for every pod it selects, as `compile_all` would, and
    check their characters; raises what compiling it raises. A pod's script is its
    policies' rules one after another, each policy's independent of the others'."""
    others = sorted(view.pods.values(), key=lambda p: p.ip)
    for pod in view.pods.values():
        if not selects(policy, pod):
            continue
        for direction, kind in (("ingress", "Ingress"), ("egress", "Egress")):
            if kind in policy_types(policy):
                rules = _policy_rules(view, pod, policy, direction, "NGK-CHECK", [], others)
                _check_lines(rules)


def _v4_cidr(text: Any) -> str | None:
    """The canonical text of an IPv4 CIDR, None for an IPv6 one (pods have IPv4 addresses
    only, so an IPv6 block matches no peer and compiles to no rule). Nothing but this text
    of an ipBlock reaches a script; anything policy.parse_cidr refuses is a ValueError."""
    net = parse_cidr(text)
    if net is None:
        raise ValueError(f"not a CIDR: {str(text)[:60]!r}")
    return str(net) if isinstance(net, ipaddress.IPv4Network) else None


def _host(ip: Any) -> str:
    """A pod's or Service's address as a /32 match (canonical, or ValueError)."""
    return f"{ipaddress.IPv4Address(ip)}/32"


def _port(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValueError(f"not a port number: {str(value)[:60]!r}")
    return str(value)


def _match(proto: str, dport: str | None) -> str:
    if not proto:
        return ""
    return f" -p {proto}" + (f" -m {proto} --dport {dport}" if dport else "")


def _direction(view: View, pod: PodInfo, direction: str, chain: str, extra: list[str]) -> list[str]:
    kind = "Ingress" if direction == "ingress" else "Egress"
    policies = [p for p in view.policies if selects(p, pod) and kind in policy_types(p)]
    if not policies:
        return [f"-A {chain} -j ACCEPT"]
    rules: list[str] = []
    others = sorted(view.pods.values(), key=lambda p: p.ip)
    for policy in policies:
        rules += _policy_rules(view, pod, policy, direction, chain, extra, others)
    # REJECT, not DROP: a blocked connect fails at once instead of timing out, so the probe
    # tells "blocked" from "slow" on a loaded machine (connectivity is the same either way).
    return [
        *rules,
        f"-A {chain} -p tcp -j REJECT --reject-with tcp-reset",
        f"-A {chain} -j REJECT --reject-with icmp-port-unreachable",
    ]


def _policy_rules(
    view: View,
    pod: PodInfo,
    policy: Mapping[str, Any],
    direction: str,
    chain: str,
    extra: list[str],
    others: list[PodInfo],
) -> list[str]:
    """One policy's rules of `pod`'s `chain` for `direction` (sub-chains named in `extra`;
    `others`: every pod, by address)."""
    flag = "-s" if direction == "ingress" else "-d"
    peers_key = "from" if direction == "ingress" else "to"
    rules: list[str] = []
    ns = (policy.get("metadata") or {}).get("namespace", "default")
    for rule in (policy.get("spec") or {}).get(direction) or []:
        peers = rule.get(peers_key) or []
        if direction == "ingress":
            dests: list[PodInfo] | None = [pod]
        else:
            dests = others
        if not peers:
            for proto, dport, dest in _ports(rule.get("ports"), dests):
                where = f" -d {_host(dest)}" if dest and direction == "egress" else ""
                rules.append(f"-A {chain}{where}{_match(proto, dport)} -j ACCEPT")
            continue
        for peer in peers:
            block = peer.get("ipBlock")
            if block is not None:
                cidr = _v4_cidr(block.get("cidr"))
                excepts = [_v4_cidr(e) for e in block.get("except") or []]
                if cidr is None:
                    continue  # an IPv6 block: no pod is in it
                sub = f"{chain}-{len(extra)}"
                extra.append(sub)
                rules.append(f"-A {chain} -j {sub}")
                for excepted in excepts:
                    rules.append(f"-A {sub} {flag} {excepted} -j RETURN")
                for proto, dport, dest in _ports(rule.get("ports"), dests):
                    if dest and direction == "egress":
                        if ip_in_block(dest, block):
                            rules.append(
                                f"-A {sub} -d {_host(dest)}{_match(proto, dport)} -j ACCEPT"
                            )
                    else:
                        rules.append(f"-A {sub} {flag} {cidr}{_match(proto, dport)} -j ACCEPT")
                continue
            for other in others:
                if not peer_matches(peer, ns, other, view):
                    continue
                targets = [other] if direction == "egress" else dests
                for proto, dport, dest in _ports(rule.get("ports"), targets):
                    if dest and dest != (other.ip if direction == "egress" else pod.ip):
                        continue
                    rules.append(
                        f"-A {chain} {flag} {_host(other.ip)}{_match(proto, dport)} -j ACCEPT"
                    )
    return rules


def _nat(view: View) -> tuple[list[str], list[str]]:
    """DNAT rules of every Service port, and REJECT rules for ports without endpoints."""
    dnat, reject = [], []
    for (ns, name), svc in sorted(view.services.items()):
        backend = view.endpoint(ns, name)
        for port, _, proto in svc.ports:
            p = PROTOCOLS.get(proto, "tcp")
            target = resolve_target(svc, port, backend) if backend else None
            if backend is None or target is None:
                reject.append(
                    f"-A OUTPUT -d {_host(svc.cluster_ip)} -p {p} -m {p} --dport {_port(port)} "
                    "-j REJECT --reject-with icmp-port-unreachable"
                )
            else:
                to = f"{ipaddress.IPv4Address(backend.ip)}:{_port(target)}"
                dnat.append(
                    f"-A OUTPUT -d {_host(svc.cluster_ip)} -p {p} -m {p} --dport {_port(port)} "
                    f"-j DNAT --to-destination {to}"
                )
    return dnat, reject


def compile_pod(view: View, pod: PodInfo, nat: tuple[list[str], list[str]] | None = None) -> str:
    """The iptables-restore script of one pod's namespace."""
    dnat, reject = nat if nat is not None else _nat(view)
    extra: list[str] = []
    ingress = _direction(view, pod, "ingress", "NGK-INGRESS", extra)
    egress = _direction(view, pod, "egress", "NGK-EGRESS", extra)
    lines = [
        "*nat",
        ":PREROUTING ACCEPT [0:0]",
        ":INPUT ACCEPT [0:0]",
        ":OUTPUT ACCEPT [0:0]",
        ":POSTROUTING ACCEPT [0:0]",
        *dnat,
        "COMMIT",
        "*filter",
        ":INPUT ACCEPT [0:0]",
        ":FORWARD ACCEPT [0:0]",
        ":OUTPUT ACCEPT [0:0]",
        ":NGK-INGRESS - [0:0]",
        ":NGK-EGRESS - [0:0]",
        *(f":{chain} - [0:0]" for chain in extra),
        # Only the reply direction rides on conntrack: a new probe whose source port
        # matches a live entry of an earlier flow (UDP DNS keeps its entry 30-120 s) must
        # still pass the policy chains, as the first packet of any flow does.
        "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED --ctdir REPLY -j ACCEPT",
        "-A INPUT -i lo -j ACCEPT",
        "-A INPUT -j NGK-INGRESS",
        "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED --ctdir REPLY -j ACCEPT",
        "-A OUTPUT -o lo -j ACCEPT",
        *reject,
        "-A OUTPUT -j NGK-EGRESS",
        *ingress,
        *egress,
        "COMMIT",
    ]
    _check_lines(lines)
    return "\n".join(lines) + "\n"


def _check_lines(lines: list[str]) -> None:
    for line in lines:
        if not _LINE.fullmatch(line):
            raise ValueError(
                f"a rule holds characters iptables-restore must not see: {line!r:.120}"
            )


def compile_all(view: View) -> dict[str, str]:
    """Pod name -> its iptables-restore script."""
    nat = _nat(view)
    return {name: compile_pod(view, pod, nat) for name, pod in sorted(view.pods.items())}
