"""NetworkPolicy semantics in pure Python: the oracle's evaluator of who may connect to whom.

A `View` is the part of a cluster that decides connectivity (pods with their labels, IPs
and container ports; namespace labels; services; policies). `connects(view, pair)` says
whether one probe connects. A Service probe (a source pod reaching a Service port by DNS
name): the source resolves the name through the DNS pod (UDP 53, subject to policies like
any packet), the Service maps to its first ready endpoint (pods sorted by name), and the
TCP connection must pass the source's egress and the destination's ingress policies. A
pod probe (a source pod reaching another pod's IP on a port and protocol, no DNS, no
Service; emulators/k8s/probes.py derives them) must pass the same two policy checks.
`blocked_at_dns` says whether a Service probe fails already at its DNS lookup.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from emulators.k8s.selectors import matches

DNS_PORT = 53
SYSTEM_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class PodInfo:
    name: str
    namespace: str
    labels: Mapping[str, str]
    ip: str
    ports: tuple[tuple[str, int, str], ...] = ()  # (name, containerPort, protocol)

    def named_port(self, name: str, protocol: str) -> int | None:
        for port_name, number, proto in self.ports:
            if port_name == name and proto == protocol:
                return number
        return None


@dataclass(frozen=True)
class ServiceInfo:
    name: str
    namespace: str
    selector: Mapping[str, str]
    cluster_ip: str
    ports: tuple[tuple[int, int | str, str], ...]  # (port, targetPort, protocol)


@dataclass(frozen=True)
class Pair:
    """One probe: `source` pod connecting to `service`:`port` (TCP) by DNS name, or, when
    `target` is set, to pod `target`'s IP on `port`/`protocol` (a pod probe)."""

    source: str  # pod name
    source_label: str  # the source's workload name, as shown in reports
    namespace: str  # the service's namespace (a pod probe: the target pod's)
    service: str  # "" for a pod probe
    port: int
    protocol: str = "TCP"
    target: str = ""  # a pod probe's destination pod
    target_label: str = ""  # its workload name, as shown in reports

    @functools.cached_property  # read ~18 M times by a capacity count: formatted once
    def key(self) -> str:
        if self.target:
            return f"{self.source_label}>pod/{self.target_label}:{self.port}/{self.protocol}"
        return f"{self.source_label}>{self.service}:{self.port}"


@dataclass
class View:
    pods: dict[str, PodInfo]  # by name (pod names are unique across namespaces here)
    namespaces: dict[str, Mapping[str, str]]  # namespace -> labels
    services: dict[tuple[str, str], ServiceInfo]  # (namespace, name)
    policies: list[dict[str, Any]] = field(default_factory=list)
    # Pod name -> the (port, protocol) the data plane listens on there (probes.listening);
    # None: not modelled, a Service's targetPort is taken to be served (it always is where
    # Services cannot be written, and where they can, a wrong targetPort meets no socket).
    listens: Mapping[str, Any] | None = None
    # Memos: (pod name, "Ingress"/"Egress") -> the policies isolating it that way, and a
    # Service's endpoint. A View is not changed once queried (evaluators build a new one
    # per policy set), so they stay true.
    _isolating: dict[tuple[str, str], list[dict[str, Any]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _endpoints: dict[tuple[str, str], PodInfo | None] = field(
        default_factory=dict, repr=False, compare=False
    )
    _resolves: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)

    def isolating(self, pod: PodInfo, kind: str) -> list[dict[str, Any]]:
        """The policies that select `pod` and have `kind` among their policyTypes."""
        key = (pod.name, kind)
        found = self._isolating.get(key)
        if found is None:
            found = [p for p in self.policies if selects(p, pod) and kind in policy_types(p)]
            self._isolating[key] = found
        return found

    def endpoint(self, namespace: str, name: str) -> PodInfo | None:
        """The pod a Service's ClusterIP is translated to (first selected pod by name)."""
        key = (namespace, name)
        if key not in self._endpoints:
            self._endpoints[key] = self._endpoint(namespace, name)
        return self._endpoints[key]

    def _endpoint(self, namespace: str, name: str) -> PodInfo | None:
        svc = self.services.get((namespace, name))
        if svc is None or not svc.selector:
            return None
        chosen = sorted(
            (p for p in self.pods.values() if p.namespace == namespace),
            key=lambda p: p.name,
        )
        return next((p for p in chosen if matches({"matchLabels": svc.selector}, p.labels)), None)

    def dns_pod(self) -> PodInfo | None:
        return self.endpoint(SYSTEM_NAMESPACE, "kube-dns")


def policy_types(policy: Mapping[str, Any]) -> list[str]:
    """spec.policyTypes, or the API server's default when it is absent."""
    spec = policy.get("spec") or {}
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def selects(policy: Mapping[str, Any], pod: PodInfo) -> bool:
    """Whether a policy applies to `pod` (same namespace, podSelector matches)."""
    meta = policy.get("metadata") or {}
    if meta.get("namespace", "default") != pod.namespace:
        return False
    return matches((policy.get("spec") or {}).get("podSelector"), pod.labels)


# What a CIDR of a NetworkPolicy may look like before ipaddress reads it: Go's
# net.ParseCIDR takes no netmask forms ("/255.0.0.0"), IPv6 scope ids ("fe80::%eth0/64"),
# spaces or non-ASCII digits, which Python's parser accepts in some positions.
_CIDR = re.compile(r"(?:\d{1,3}\.){3}\d{1,3}/\d{1,2}|[0-9A-Fa-f:.]{2,45}/\d{1,3}", re.ASCII)


def parse_cidr(text: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network of a CIDR as kube-apiserver accepts it (host bits may be set), else None."""
    if not isinstance(text, str) or not _CIDR.fullmatch(text):
        return None
    return _network(text)


@functools.lru_cache(maxsize=4096)
def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def _address(ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(ip)


def ip_in_block(ip: str, block: Mapping[str, Any]) -> bool:
    """Whether `ip` is in an ipBlock (an IPv6 block holds no IPv4 address, and vice versa)."""
    addr = _address(ip)
    cidr = parse_cidr(block.get("cidr"))
    excepts = [parse_cidr(e) for e in block.get("except") or []]
    if cidr is None or None in excepts or addr not in cidr:
        return False
    return not any(addr in e for e in excepts)


def peer_matches(peer: Mapping[str, Any], policy_ns: str, pod: PodInfo, view: View) -> bool:
    """Whether one NetworkPolicyPeer covers `pod`."""
    if peer.get("ipBlock") is not None:
        return ip_in_block(pod.ip, peer["ipBlock"])
    if "namespaceSelector" in peer and peer["namespaceSelector"] is not None:
        ns_labels = view.namespaces.get(pod.namespace, {})
        if not matches(peer["namespaceSelector"], ns_labels):
            return False
    elif pod.namespace != policy_ns:
        return False
    if "podSelector" in peer and peer["podSelector"] is not None:
        return matches(peer["podSelector"], pod.labels)
    return True


def port_matches(ports: Iterable[Mapping[str, Any]] | None, dest: PodInfo, port: int, proto: str):
    """Whether a rule's `ports` admit `port`/`proto` on `dest` (named ports resolve there)."""
    entries = list(ports or [])
    if not entries:
        return True
    for entry in entries:
        if entry.get("protocol", "TCP") != proto:
            continue
        value = entry.get("port")
        if value is None:
            return True
        if isinstance(value, str):
            if dest.named_port(value, proto) == port:
                return True
            continue
        end = entry.get("endPort")
        if value == port or (end is not None and value <= port <= end):
            return True
    return False


def _direction_allows(
    view: View, direction: str, selected: PodInfo, other: PodInfo, port: int, proto: str
) -> bool:
    """`selected` is the pod whose policies decide; `other` the peer; ports are `dest`'s."""
    kind, peers_key = ("Ingress", "from") if direction == "ingress" else ("Egress", "to")
    dest = selected if direction == "ingress" else other
    isolating = view.isolating(selected, kind)
    if not isolating:
        return True
    for policy in isolating:
        ns = (policy.get("metadata") or {}).get("namespace", "default")
        for rule in (policy.get("spec") or {}).get(direction) or []:
            peers = rule.get(peers_key) or []
            if peers and not any(peer_matches(peer, ns, other, view) for peer in peers):
                continue
            if port_matches(rule.get("ports"), dest, port, proto):
                return True
    return False


def allowed(view: View, src: PodInfo, dst: PodInfo, port: int, proto: str = "TCP") -> bool:
    """Whether a new connection src -> dst:port/proto passes both pods' policies."""
    return _direction_allows(view, "egress", src, dst, port, proto) and _direction_allows(
        view, "ingress", dst, src, port, proto
    )


def resolve_target(svc: ServiceInfo, port: int, backend: PodInfo) -> int | None:
    for svc_port, target, proto in svc.ports:
        if svc_port == port:
            if isinstance(target, str):
                return backend.named_port(target, proto)
            return target
    return None


def blocked_at_dns(view: View, pair: Pair) -> bool:
    """Whether a Service probe fails at its DNS lookup (no DNS pod, or policies keep the
    source's query or its answer from passing); never for a pod probe."""
    if pair.target:
        return False
    found = view._resolves.get(pair.source)
    if found is None:
        src = view.pods.get(pair.source)
        dns = view.dns_pod()
        found = src is not None and dns is not None and allowed(view, src, dns, DNS_PORT, "UDP")
        view._resolves[pair.source] = found
    return not found


def connects(view: View, pair: Pair) -> bool:
    """Whether the probe of `pair` succeeds: DNS lookup, then TCP through the ClusterIP;
    for a pod probe, the connection to the target pod's IP."""
    src = view.pods.get(pair.source)
    if pair.target:
        dst = view.pods.get(pair.target)
        if src is None or dst is None:
            return False
        return allowed(view, src, dst, pair.port, pair.protocol)
    if blocked_at_dns(view, pair):
        return False
    backend = view.endpoint(pair.namespace, pair.service)
    svc = view.services.get((pair.namespace, pair.service))
    if backend is None or svc is None:
        return False
    target = resolve_target(svc, pair.port, backend)
    if target is None:
        return False
    if view.listens is not None and (target, "TCP") not in view.listens.get(backend.name, ()):
        return False
    return allowed(view, src, backend, target, "TCP")


def matrix(view: View, pairs: Iterable[Pair]) -> dict[str, bool]:
    """Pair key -> connects, for every pair."""
    return {pair.key: connects(view, pair) for pair in pairs}


def mismatches(expected: Mapping[str, bool], actual: Mapping[str, bool]) -> list[str]:
    """Sorted keys whose actual connectivity differs from the expected one."""
    return sorted(k for k in expected if actual.get(k) != expected[k])


def view_from_objects(objects: Iterable[Mapping[str, Any]]) -> View:
    """A View of API objects (pods, namespaces, services, networkpolicies; others ignored)."""
    view = View({}, {}, {}, [])
    for obj in objects:
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if kind == "Namespace":
            view.namespaces[meta["name"]] = dict(meta.get("labels") or {})
        elif kind == "Pod":
            ports = tuple(
                (p.get("name", ""), int(p["containerPort"]), p.get("protocol", "TCP"))
                for c in spec.get("containers") or []
                for p in c.get("ports") or []
            )
            view.pods[meta["name"]] = PodInfo(
                meta["name"],
                meta.get("namespace", "default"),
                dict(meta.get("labels") or {}),
                (obj.get("status") or {}).get("podIP", ""),
                ports,
            )
        elif kind == "Service":
            ports = tuple(
                (int(p["port"]), p.get("targetPort", p["port"]), p.get("protocol", "TCP"))
                for p in spec.get("ports") or []
            )
            key = (meta.get("namespace", "default"), meta["name"])
            view.services[key] = ServiceInfo(
                meta["name"],
                key[0],
                dict(spec.get("selector") or {}),
                spec.get("clusterIP", ""),
                ports,
            )
        elif kind == "NetworkPolicy":
            view.policies.append(dict(obj))
    return view


def probe_pairs(view: View) -> list[Pair]:
    """Every (workload pod, Service TCP port) pair outside kube-system, except a pod to its
    own Service; a source is named by its `app` label (its workload), else its pod name."""
    pairs = []
    for pod in sorted(view.pods.values(), key=lambda p: p.name):
        if pod.namespace == SYSTEM_NAMESPACE:
            continue
        for (ns, name), svc in sorted(view.services.items()):
            if ns == SYSTEM_NAMESPACE or view.endpoint(ns, name) == pod:
                continue
            label = pod.labels.get("app", pod.name)
            pairs += [
                Pair(pod.name, label, ns, name, p) for p, _, proto in svc.ports if proto == "TCP"
            ]
    return sorted(pairs, key=lambda p: p.key)
