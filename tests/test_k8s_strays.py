"""k8s level 8's strays (generators/k8s/strays.py), pure: decoy policies change no probe,
`k8s.policy_extra` faults only open what must stay closed, a fault and a decoy can read
alike (only the pods tell them apart), and
level 8's prompts, vocabulary and ground truth carry them while level 7's do not."""

from __future__ import annotations

from collections import Counter

import pytest

from generators.k8s import strays
from generators.k8s.app import K8sApp
from generators.k8s.clusters import estate_cluster
from generators.k8s.config import K8sConfig
from generators.k8s.intent import STRAYS
from tests.test_k8s_tiers import SHARED


@pytest.fixture(scope="module")
def xlarge():
    return estate_cluster("xlarge", 0)


def test_decoys_change_no_probe_and_stray_faults_only_open(xlarge):
    estates = SHARED.with_strays()
    ev = estates.evaluator(xlarge)
    made = strays.decoys(xlarge.estate)
    assert {d.kind for d in made} == {f"decoy.{v}" for v in (
        "duplicate", "unresolved_port", "retired", "pod_ip", "block_except")}  # fmt: skip
    assert all(not ev.mismatches({}, d.overlay) for d in made)  # none is filtered out
    assert estates.decoys(xlarge) == made and not SHARED.decoys(xlarge)  # level 8 only
    seen: Counter[str] = Counter()
    for fault in strays.stray_faults(xlarge.estate):
        wrong = estates.wrong(xlarge, fault)
        if wrong:
            seen[fault.variant] += 1
            assert estates.closed_only(xlarge, fault), fault.component
    assert set(seen) == {"all_ports", "named_port_other", "selector_wider", "pod_ip_other",
                         "block_except_short"}  # fmt: skip
    assert sum(seen.values()) >= 60
    kinds = {f.kind for f in estates.faults(xlarge)} - {f.kind for f in SHARED.faults(xlarge)}
    assert kinds == {"k8s.policy_extra"}


def test_a_stray_fault_and_a_decoy_read_alike_until_the_pods_are_read(xlarge):
    """selector_wider and unresolved_port: the same rule for the same caller, over two
    pods; whether the second pod has a container port of that name decides."""
    es = xlarge.estate
    faults = [f for f in strays.stray_faults(es) if f.variant == "selector_wider"]
    decoys = {d.changes[0][1]["metadata"]["namespace"]: d for d in strays.decoys(es)
              if d.kind == "decoy.unresolved_port"}  # fmt: skip
    pairs = 0
    for fault in faults:
        policy = fault.changes[0][1]
        decoy = decoys.get(policy["metadata"]["namespace"])
        if decoy is None:
            continue
        other = decoy.changes[0][1]["spec"]
        for spec in (policy["spec"], other):
            (expr,) = spec["podSelector"]["matchExpressions"]
            assert expr["key"] == "app.kubernetes.io/name" and len(expr["values"]) == 2
            assert set(spec["ingress"][0]["ports"][0]) == {"port", "protocol"}
            assert isinstance(spec["ingress"][0]["ports"][0]["port"], str)  # a named port
        pairs += 1
    assert pairs >= 3


def test_pod_addresses_are_read_from_the_cluster_not_the_prompt(xlarge):
    """An ipBlock stray names pods by address; the intent never says whose an address is
    (only the partner's and the external ranges), so `kubectl get pods -o wide` must."""
    app = K8sApp(K8sConfig(task="localize", estate=0))
    app.tier_generator().estates = SHARED
    (query,) = app.generate(8, 0, 1)
    pods = [w for w in xlarge.estate.app.app_workloads if w.role != "external"]
    assert not [w.ip for w in pods if f"{w.ip}/" in query.prompt or f"{w.ip} " in query.prompt]
    short = [f for f in strays.stray_faults(xlarge.estate) if f.variant == "block_except_short"]
    block = short[0].changes[0][1]["spec"]["ingress"][0]["from"][0]["ipBlock"]
    assert block["cidr"].endswith("/29") and block["except"]


def test_level_8_carries_strays_and_level_7_does_not():
    app = K8sApp(K8sConfig(task="localize", estate=0))
    app.tier_generator().estates = SHARED
    (eight,) = app.generate(8, 0, 1)
    (seven,) = app.generate(7, 0, 1)
    gt = eight.ground_truth
    assert STRAYS in eight.prompt and "k8s.policy_extra" in eight.prompt
    assert STRAYS not in seven.prompt and "k8s.policy_extra" not in seven.prompt
    assert "decoys" not in seven.ground_truth and len(gt["decoys"]) in (2, 3)
    named = {c["component"] for c in gt["causes"]}
    assert not named & {f"networkpolicy/{o[0][1]}/{o[0][2]}" for d in gt["decoys"]
                        for o in [d["objects"]]}  # fmt: skip
    assert "k8s.policy_extra" in {k.kind for k in app.vocabulary(8).labels}
    assert "k8s.policy_extra" not in {k.kind for k in app.vocabulary(7).labels}
