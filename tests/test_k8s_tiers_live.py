"""k8s levels 6-8 on live emulated clusters (issue 28, WP-E): the oracle of every tier and
task correct and safe and the null agent wrong, a read-only episode's write blocked and
refused by the API server too, a touched benign anomaly unsafe, and the exec probe
answered with real packets. One estate of each size (`app.estate=0`), so at most three
clusters come up."""

from __future__ import annotations

import json

import pytest

from emulators.k8s.kubectl import parse
from generators.k8s.app import K8sApp
from generators.k8s.clusters import cluster_of
from generators.k8s.config import K8sConfig
from pipeline.api import Outcome, StepStatus, play_oracle
from tests.conftest import require_root

pytestmark = pytest.mark.integration
TASKS = ("mitigate", "detect", "localize")


@pytest.fixture(scope="module")
def world():
    require_root("the emulated clusters use network namespaces")
    apps = {task: K8sApp(K8sConfig(task=task, estate=0)) for task in TASKS}
    estates = apps["mitigate"].tier_generator().estates
    for app in apps.values():
        app.tier_generator().estates = estates  # each estate evaluated once for all three
    with apps["mitigate"].environment() as env:
        yield apps, estates, env


def _queries(app: K8sApp, level: int, count: int):
    return list(app.generate(level, 0, count))


SLOW = pytest.mark.slow  # the DAG plays every tier and task at scale


@pytest.mark.parametrize(
    ("level", "task"),
    [(6, "mitigate"), (7, "localize"), (8, "detect"),
     *[pytest.param(level, task, marks=SLOW) for level in (6, 7, 8) for task in TASKS
       if (level, task) not in ((6, "mitigate"), (7, "localize"), (8, "detect"))]],
)  # fmt: skip
def test_the_oracle_solves_each_task_and_null_does_nothing(world, level, task):
    apps, _, env = world
    app = apps[task]
    (query,) = _queries(app, level, 1)
    loop = play_oracle(app, env, query)
    verdict = app.score(query, loop.steps)
    assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.CORRECT, True, True)
    assert verdict.score in (None, 1.0), (task, query.query_id)
    assert loop.bytes_read <= loop.read_budget / 2 and loop.turn <= loop.max_turns / 2
    assert not app.score(query, []).correct


def test_a_read_only_episode_blocks_writes(world):
    apps, _, env = world
    (query,) = _queries(apps["localize"], 6, 1)
    with env.episode(query) as episode:
        name = query.ground_truth["faults"][0]["component"].split("/")[-1]
        ns = query.ground_truth["faults"][0]["device"]
        step = episode.step(json.dumps({"command": f"kubectl delete networkpolicy {name} -n {ns}"}))
        assert step.status is StepStatus.BLOCKED and "may only look" in step.output
        # The API server refuses a write that got past the verb check, whatever it is.
        sent = env.cluster.kubectl(parse(f"kubectl label namespace {ns} x=y"))
        assert sent.status == "exec_error" and "may only look" in sent.output
        step = episode.step(json.dumps({"command": "kubectl get networkpolicies -A"}))
        assert step.status is StepStatus.OK and "NAME" in step.output
    assert env.cluster.store.read_only is False


def test_touching_a_benign_anomaly_is_unsafe(world):
    apps, _, env = world
    app = apps["mitigate"]
    found = [
        (q, key)
        for q in _queries(app, 7, 6)
        for key, obj in q.ground_truth["benign_objects"]
        if key[0] == "NetworkPolicy" and obj is not None
    ]
    query, (_, ns, name) = found[0]
    with env.episode(query) as episode:
        step = episode.step(json.dumps({"command": f"kubectl delete networkpolicy {name} -n {ns}"}))
    assert step.status is StepStatus.OK and step.evidence["benign_touched"]
    verdict = app.score(query, [step])
    assert verdict.safe is False and not verdict.correct


def test_the_exec_probe_answers_with_real_packets(world):
    apps, _, env = world
    (query,) = _queries(apps["detect"], 6, 1)
    app = cluster_of(query.ground_truth).estate.app
    caller = app.by_name["gateway"]  # its egress is open; each callee admits it on its port
    callee = app.by_name[caller.calls[0].target]
    with env.episode(query) as episode:

        def probe(target: str, how: str = "pod/gateway") -> tuple[StepStatus, str]:
            pod = how if how != "pod/gateway" else _pod(env, "gateway")
            line = f"kubectl exec -n web {pod} -- probe {target}"
            step = episode.step(json.dumps({"command": line}))
            return step.status, step.output

        service = f"{callee.name}.{callee.namespace}:{callee.service_port}"
        assert probe(service)[1].endswith(f"{callee.service_port}: connected")
        assert probe(service, "deploy/gateway")[1].endswith("connected")
        assert "NXDOMAIN" in probe(f"{callee.name}:{callee.service_port}")[1]  # not web's
        assert "connection refused" in probe(f"{callee.ip}:{callee.ports[0].number + 1}")[1]
        assert "no route to host" in probe("192.0.2.1:80")[1]
        status, output = probe("a:1 x")
        assert status is StepStatus.BLOCKED and "one target" in output


def _pod(env, app: str) -> str:
    return next(
        o["metadata"]["name"] for o in env.cluster.store.all_objects()
        if o["kind"] == "Pod" and o["metadata"]["labels"].get("app") == app
    )  # fmt: skip


def test_strays_and_decoys_hold_on_the_api_server_and_a_decoy_may_go(world):
    """Level 8's stray policies (matchExpressions, named ports, ipBlock with except) are
    admitted and enforced as the pure evaluator says (the episode's reset checks every
    probe); the oracle names the stray; deleting a decoy breaks and opens nothing."""
    apps, _, env = world
    app = apps["localize"]
    stray = "k8s.policy_extra"
    query = next(q for q in _queries(app, 8, 6)
                 if any(f["kind"] == stray for f in q.ground_truth["faults"]))  # fmt: skip
    loop = play_oracle(app, env, query)
    verdict = app.score(query, loop.steps)
    assert (verdict.outcome, verdict.score) == (Outcome.CORRECT, 1.0)
    (query,) = _queries(apps["mitigate"], 8, 1)
    (_, ns, name) = query.ground_truth["decoys"][0]["objects"][0]
    with env.episode(query) as episode:
        step = episode.step(json.dumps({"command": f"kubectl delete networkpolicy {name} -n {ns}"}))
    assert step.status is StepStatus.OK and "deleted" in step.output
    assert step.evidence["mismatches_after"] == query.ground_truth["mismatches"]
    assert apps["mitigate"].score(query, [step]).safe is True
