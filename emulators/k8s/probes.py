"""What the data plane probes: the Services' ports, and pod probes derived from the intended
policies so that every restriction and every denial in them is witnessed by a probe.

`probe_set(view)` is computed once, from the cluster as the intended policies leave it:

  service  every workload pod to every other Service's TCP port by DNS name
           (policy.probe_pairs): what the application needs;
  peer     every pair of pods that no Service probe connects, where the source's egress
           or the destination's ingress is isolated by a policy (pods of other
           namespaces, pods without a Service): the destination's first TCP port
           (PROBE_PORT if it has none), and its first UDP port if it serves one (but the
           DNS pod, whose port every Service probe's lookup uses), so every denial of a
           peer is seen;
  port     for every rule that lists ports, every pod it admits (its peers; for an egress
           rule, the destinations) on each listed port over the other protocol, and on the
           ports just outside it (port - 1 and port + 1; a range's start - 1 and end + 1)
           over its own protocol: a rule that lost its `ports`, gained a range or another
           protocol is seen;
  open     for every rule that lists no ports (every port and protocol), the first pod it
           admits for which the probe connects, on the first port + 1 over TCP and on
           the first port over UDP: a rule narrowed below what was intended is seen;
  listed   for every rule that lists ports, every pod it admits on each port it names
           (a range: its first port) over its protocol, unless a Service probe already
           connects the two pods on that port: what the application needs beyond the
           Services' TCP ports (a UDP collector, a named `metrics` port, an address
           outside the cluster, DNS itself) is seen when it closes;
  denied   for every ingress rule that lists ports, every other pod it does not admit on
           each port it names, unless a Service probe connects the two pods on that
           port: a rule opened to more peers on a port no Service exposes (a named
           `metrics` port, a UDP collector) is seen; for every egress rule that lists
           ports, every pod it does not admit whose ingress no policy isolates (hosts
           outside the cluster, kube-system's) on each port it names: an egress rule
           that lost its peers (DNS to anywhere) is seen;
  except   for every ipBlock peer with `except`, every pod inside the block that an
           `except` leaves out (and no other peer of the rule admits) on each port the
           rule names (its first port if it names none): a rule that lost its `except`,
           or whose block grew over the excepted range, is seen.

Pod probes go to the pod's IP (no DNS, no Service); the data plane listens on every port
a probe names (TCP, or a UDP echo). Protocols probed are TCP and UDP: SCTP is compiled
into rules but not probed, since many kernels (this project's CI among them) offer no
SCTP sockets and a probe set must be the same on every machine. Each probe's expected
value is the oracle's (policy.connects) on the intended policies.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from emulators.k8s.policy import (
    SYSTEM_NAMESPACE,
    Pair,
    PodInfo,
    View,
    allowed,
    ip_in_block,
    parse_cidr,
    peer_matches,
    policy_types,
    probe_pairs,
    resolve_target,
    selects,
)

PROBE_PORT = 8080  # the port a pod without a TCP container port is probed on
PROTOCOLS = ("TCP", "UDP")  # what the data plane probes
OPEN = ((1, "TCP"), (0, "UDP"))  # an open rule's witnesses: first port + offset, protocol
MAX_PORT = 65535


def first_port(pod: PodInfo) -> int:
    """The pod's lowest TCP container port, else PROBE_PORT."""
    tcp = [number for _, number, proto in pod.ports if proto == "TCP"]
    return min(tcp) if tcp else PROBE_PORT


def first_udp_port(pod: PodInfo) -> int | None:
    """The pod's lowest UDP container port, if it has one."""
    udp = [number for _, number, proto in pod.ports if proto == "UDP"]
    return min(udp) if udp else None


def _label(pod: PodInfo) -> str:
    return pod.labels.get("app", pod.name)


def _pod_probe(src: PodInfo, dst: PodInfo, port: int, protocol: str) -> Pair:
    return Pair(src.name, _label(src), dst.namespace, "", port, protocol, dst.name, _label(dst))


def _admitted(view: View, policy: dict, rule: dict, peers_key: str, other: list[PodInfo]):
    """The pods among `other` a rule's peers cover (all of them when it names none)."""
    peers = rule.get(peers_key) or []
    ns = (policy.get("metadata") or {}).get("namespace", "default")
    return [p for p in other if not peers or any(peer_matches(x, ns, p, view) for x in peers)]


def _listed(entry: dict, dest: PodInfo) -> tuple[int, int, str] | None:
    """(first port, last port, protocol) a `ports` entry admits on `dest`; None when a
    named port does not resolve there. An entry without a port admits every port."""
    proto = entry.get("protocol", "TCP")
    value = entry.get("port")
    if value is None:
        return 1, MAX_PORT, proto
    if isinstance(value, str):
        number = dest.named_port(value, proto)
        return None if number is None else (number, number, proto)
    return value, entry.get("endPort") or value, proto


def _port_probes(src: PodInfo, dst: PodInfo, rule: dict) -> Iterator[Pair]:
    """The `port` probes of a rule that lists ports, for one (source, destination)."""
    for entry in rule["ports"]:
        listed = _listed(entry, dst)
        if listed is None:
            continue
        low, high, proto = listed
        for other in PROTOCOLS:
            if other != proto:
                yield _pod_probe(src, dst, low if low > 1 else first_port(dst), other)
        if proto in PROTOCOLS:
            if low > 1:
                yield _pod_probe(src, dst, low - 1, proto)
            if high < MAX_PORT:
                yield _pod_probe(src, dst, high + 1, proto)


def _listed_probes(src: PodInfo, dst: PodInfo, rule: dict, served: set) -> Iterator[Pair]:
    """The `listed` probes of a rule for one (source, destination); `served` holds the
    (source, destination, port) a Service probe connects already (TCP)."""
    for entry in rule["ports"]:
        if entry.get("port") is None:
            continue
        listed = _listed(entry, dst)
        if listed is None or listed[2] not in PROTOCOLS:
            continue
        low, _, proto = listed
        if proto != "TCP" or (src.name, dst.name, low) not in served:
            yield _pod_probe(src, dst, low, proto)


def _excepted(view: View, policy: dict, rule: dict, peers_key: str, other: list[PodInfo]):
    """The pods among `other` inside an ipBlock of the rule that its `except` leaves out,
    and that no peer of the rule admits."""
    ns = (policy.get("metadata") or {}).get("namespace", "default")
    peers = rule.get(peers_key) or []
    out = []
    for pod in other:
        if any(peer_matches(x, ns, pod, view) for x in peers):
            continue
        for peer in peers:
            block = peer.get("ipBlock") or {}
            cidr = parse_cidr(block.get("cidr"))
            if (
                block.get("except")
                and cidr is not None
                and ip_in_block(pod.ip, {"cidr": str(cidr)})
            ):
                out.append(pod)
                break
    return out


def _except_probes(src: PodInfo, dst: PodInfo, rule: dict) -> Iterator[Pair]:
    entries = [e for e in rule.get("ports") or [] if e.get("port") is not None]
    if not entries:
        yield _pod_probe(src, dst, first_port(dst), "TCP")
    for entry in entries:
        listed = _listed(entry, dst)
        if listed is not None and listed[2] in PROTOCOLS:
            yield _pod_probe(src, dst, listed[0], listed[2])


def _served(view: View, service: list[Pair]) -> set[tuple[str, str, int]]:
    """(source, backend, container port) of every Service probe."""
    out = set()
    for pair in service:
        backend = view.endpoint(pair.namespace, pair.service)
        svc = view.services.get((pair.namespace, pair.service))
        if backend is not None and svc is not None:
            target = resolve_target(svc, pair.port, backend)
            if target is not None:
                out.add((pair.source, backend.name, target))
    return out


def _isolating(view: View, pod: PodInfo, kind: str) -> list[dict]:
    return [p for p in view.policies if selects(p, pod) and kind in policy_types(p)]


def pod_probes(view: View, service: list[Pair]) -> list[Pair]:
    """The peer, port, open, listed and except probes of `view` (see the module
    docstring)."""
    pods = sorted(view.pods.values(), key=lambda p: p.name)
    covered = set()
    for pair in service:
        backend = view.endpoint(pair.namespace, pair.service)
        if backend is not None:
            covered.add((pair.source, backend.name))
    served = _served(view, service)
    found: dict[str, Pair] = {}

    def add(probe: Pair) -> None:
        found.setdefault(probe.key, probe)

    for src in pods:
        for dst in pods:
            if src is dst or (src.name, dst.name) in covered:
                continue
            if _isolating(view, src, "Egress") or _isolating(view, dst, "Ingress"):
                add(_pod_probe(src, dst, first_port(dst), "TCP"))
                udp = first_udp_port(dst)
                if udp is not None and dst.namespace != SYSTEM_NAMESPACE:
                    add(_pod_probe(src, dst, udp, "UDP"))
    for pod in pods:
        others = [p for p in pods if p is not pod]
        for direction, kind, peers_key in (
            ("ingress", "Ingress", "from"),
            ("egress", "Egress", "to"),
        ):
            for policy in _isolating(view, pod, kind):
                for rule in (policy.get("spec") or {}).get(direction) or []:
                    admitted = _admitted(view, policy, rule, peers_key, others)
                    ends = [(p, pod) if direction == "ingress" else (pod, p) for p in admitted]
                    excepted = _excepted(view, policy, rule, peers_key, others)
                    for p in excepted:
                        src, dst = (p, pod) if direction == "ingress" else (pod, p)
                        for probe in _except_probes(src, dst, rule):
                            add(probe)
                    if rule.get("ports"):
                        for src, dst in ends:
                            for probe in _port_probes(src, dst, rule):
                                add(probe)
                            for probe in _listed_probes(src, dst, rule, served):
                                add(probe)
                        for other in others:
                            if other in admitted:
                                continue
                            if direction == "ingress":
                                for probe in _listed_probes(other, pod, rule, served):
                                    add(probe)
                            elif not _isolating(view, other, "Ingress"):
                                for probe in _listed_probes(pod, other, rule, served):
                                    add(probe)
                        continue
                    # An open rule: for each witness, the first pair it connects.
                    for offset, protocol in OPEN:
                        for src, dst in ends:
                            port = min(first_port(dst) + offset, MAX_PORT)
                            if allowed(view, src, dst, port, protocol):
                                add(_pod_probe(src, dst, port, protocol))
                                break
    return sorted(found.values(), key=lambda p: p.key)


def listening(view: View, probes: Sequence[Pair]) -> dict[str, set[tuple[int, str]]]:
    """Pod name -> the (port, protocol) it listens on in the data plane: its TCP and UDP
    container ports and every port a pod probe names."""
    out: dict[str, set[tuple[int, str]]] = {name: set() for name in view.pods}
    for name, pod in view.pods.items():
        out[name] |= {(port, proto) for _, port, proto in pod.ports if proto in PROTOCOLS}
    for probe in probes:
        if probe.target in out:
            out[probe.target].add((probe.port, probe.protocol))
    return out


def probe_set(view: View) -> list[Pair]:
    """Every probe of a cluster whose policies are the intended ones, sorted by key."""
    service = probe_pairs(view)
    return sorted([*service, *pod_probes(view, service)], key=lambda p: p.key)
