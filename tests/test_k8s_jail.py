"""k8s app, hostile: the operating-system layer of the kubectl sandbox on its own, and the
emulated API server under hostile writes.

The jail tests run commands straight through `Kubectl.run`, which does not check flags:
kubeconfigs with exec plugins, other servers, host files, profiles written to host paths.
Each must still touch nothing outside the jail; `tests.k8s_world` compares the host.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from emulators.k8s import enforce, netns, policy
from emulators.k8s.admission import Enforceable
from emulators.k8s.apiserver import ApiServer
from emulators.k8s.kubectl import JAIL_UID, Command
from emulators.k8s.store import Store
from generators.k8s import boutique
from pipeline.core import StepStatus
from pipeline.errors import EnvironmentFailure
from tests.k8s_world import VICTIM, hostile_world, kubeconfig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world():
    with hostile_world() as found:
        yield found


def _run(world, argv: list[str], stdin: str = "", **files: str):
    return world.env.cluster.client.run(Command(argv, stdin, files))


def test_exec_plugins_other_servers_and_host_files_are_out_of_reach(world):
    served = world.env.cluster.url.replace("http:", "https:")
    plugin = _run(world, ["--kubeconfig=kc", "get", "pods"], kc=kubeconfig(served, "/bin/sh"))
    assert plugin.status == "exec_error"
    assert "fork/exec /bin/sh: no such file or directory" in plugin.output
    neighbour = _run(world, ["--kubeconfig=kc", "get", "pods"], kc=kubeconfig(world.other.url))
    assert neighbour.status == "exec_error" and "connection refused" in neighbour.output
    loopback = f"http://127.0.0.1:{world.port}"
    host = _run(world, ["--kubeconfig=kc", "get", "pods"], kc=kubeconfig(loopback))
    assert host.status == "exec_error" and "connection refused" in host.output
    fetched = _run(world, ["apply", "-f", f"{loopback}/ns.yaml"])
    assert fetched.status == "exec_error"
    assert f"127.0.0.1:{world.port} was refused" in fetched.output
    other = _run(world, ["apply", "-f", f"{world.other.url}/api/v1/namespaces/default"])
    assert other.status == "exec_error" and "refused" in other.output
    for path in ("/etc/passwd", "/root", str(Path(__file__)), "/proc/1/environ", "/ngk/cache"):
        read = _run(world, ["apply", "-f", path])
        assert read.status == "exec_error", (path, read.output)
        assert "root:" not in read.output, read.output
        assert "does not exist" in read.output or "error reading" in read.output, read.output


def test_writes_land_in_the_jail_or_nowhere(world):
    profile = _run(world, ["get", "pods", "--profile=cpu", f"--profile-output={VICTIM}"])
    assert profile.status == "ok"  # written to the jail's own /tmp, gone with it
    for target in ("/ngk/kubeconfig", "/ngk/cache/x", "/ngk/work/x", "/ngk/bin/kubectl"):
        written = _run(world, ["get", "pods", "--profile=cpu", f"--profile-output={target}"])
        assert "read-only file system" in written.output, (target, written.output)
    kept = _run(world, ["edit", "netpol", "adservice"], "kind: NetworkPolicy\nbad: [\n")
    assert 'A copy of your changes has been stored to "/tmp/kubectl-edit-' in kept.output
    live = _run(world, ["get", "netpol", "adservice", "-o", "yaml"]).output
    edit = _run(world, ["edit", "netpol", "adservice"], live.replace("9555", "9556", 1))
    assert "edited" in edit.output, edit.output
    assert not list(Path("/tmp").glob("kubectl-edit-*"))  # both lived in the jail's /tmp


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def _kubectls(seen: dict[int, dict[str, str]]) -> int:
    return sum(1 for status in seen.values() if status["Name"] == "kubectl")


def test_kubectl_runs_unprivileged_and_nothing_it_starts_outlives_it(world):
    """An exec plugin that never returns (kubectl proxy): while it runs, every task of the
    command is uid 65534 without capabilities, in the API namespace and a mount namespace
    of its own; at the timeout all of them are gone."""
    client = world.env.cluster.client
    require_cgroup = client.cgroup is not None
    served = world.env.cluster.url.replace("http:", "https:")
    hang = kubeconfig(served, "/ngk/bin/kubectl", ["proxy", "--port=8001"])
    done: list = []
    client.timeout_s = 4.0
    runner = threading.Thread(
        target=lambda: done.append(_run(world, ["--kubeconfig=kc", "get", "pods"], kc=hang))
    )
    runner.start()
    try:
        seen: dict[int, dict[str, str]] = {}
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and _kubectls(seen) < 2:
            for pid in client.cgroup.pids() if require_cgroup else []:
                try:
                    seen[pid] = {**_status(pid), "net": os.readlink(f"/proc/{pid}/ns/net"),
                                 "mnt": os.readlink(f"/proc/{pid}/ns/mnt")}  # fmt: skip
                except OSError:
                    continue
            time.sleep(0.05)
    finally:
        runner.join()
        client.timeout_s = world.app.cfg.kubectl_timeout_s
    assert done[0].status in ("timeout", "exec_error")
    if not require_cgroup:
        return
    api_net = f"net:[{os.stat(world.env.cluster.api_netns).st_ino}]"
    jailed = [s for s in seen.values() if s["Name"] == "kubectl"]
    assert len(jailed) >= 2, seen  # the command and its plugin
    for status in jailed:
        assert status["Uid"].split() == [str(JAIL_UID)] * 4
        assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == "0" * 16
        assert status["NoNewPrivs"] == "1"
        assert status["net"] == api_net
        assert status["mnt"] != os.readlink("/proc/self/ns/mnt")
        assert len(status["NSpid"].split()) >= 2  # a pid namespace of its own
    assert client.cgroup.pids() == []


def test_the_api_server_checks_the_token(world):
    for cluster in (world.other, world.env.cluster):
        base = cluster.url.rsplit("/", 1)[0]
        fd = os.open(cluster.api_netns, os.O_RDONLY)
        try:
            for path in ("/wrong-token/api/v1/namespaces", "/api/v1/namespaces", "/version"):
                with netns.entered(fd, "api"), pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(base + path, timeout=5)
                assert refused.value.code == 401
                assert json.loads(refused.value.read())["reason"] == "Unauthorized"
            with netns.entered(fd, "api"):
                ok = urllib.request.urlopen(cluster.url + "/api/v1/namespaces", timeout=5)
            assert ok.status == 200
        finally:
            os.close(fd)


def test_a_bug_of_the_api_server_is_an_environment_failure_not_the_agents(world, monkeypatch):
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    server = world.env.cluster._server
    with world.env.episode(world.query()) as episode:
        monkeypatch.setattr(world.env.cluster.store, "list", broken)
        with pytest.raises(EnvironmentFailure, match="ZeroDivisionError: a bug"):
            episode.step('{"command": "kubectl get networkpolicies"}')
        monkeypatch.undo()
        assert server.internal_errors[-1].startswith("GET apis/networking.k8s.io/v1/")
        server.internal_errors.clear()
        assert episode.step('{"command": "kubectl get networkpolicies"}').status is StepStatus.OK


# -- the API server under hostile writes (no cluster needed) -----------------------------------
_ATOMS = [
    None, 0, -1, 1 << 70, 1.5, float("inf"), "", "x", "80", "80-90", "TCP", "ICMP", True, [],
    {}, [None], {"a": None}, "0.0.0.0/0", "10.0.0.0/33", "::/0", 65536, "a" * 300, "\u0000",
    {"$patch": "delete"}, {"$patch": "replace"}, {"$retainKeys": ["x"]}, "In", "Exists",
]  # fmt: skip
_KEYS = [
    "ingress", "egress", "from", "to", "ports", "port", "endPort", "protocol", "podSelector",
    "namespaceSelector", "ipBlock", "cidr", "except", "matchLabels", "matchExpressions", "key",
    "operator", "values", "policyTypes", "$patch", "$setElementOrder/ingress", "$retainKeys",
    "name", "namespace", "labels", "metadata", "spec", "kind", "apiVersion",
]  # fmt: skip
_PATHS = [
    "/spec/ingress/0", "/spec/ingress/-", "/spec/ingress/99", "/spec", "", "/",
    "/spec/ingress/0/ports/0/port", "/metadata/name", "/spec/ingress/-1", "/metadata",
]  # fmt: skip


def _value(rnd: random.Random, depth: int = 0) -> object:
    roll = rnd.random()
    if depth > 4 or roll < 0.4:
        return rnd.choice(_ATOMS)
    if roll < 0.7:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {rnd.choice(_KEYS): _value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}


def _request(rnd: random.Random) -> tuple[str, str, object, str]:
    base = "/tok/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
    name = rnd.choice(["adservice", "fz"])
    spec: dict = {"podSelector": {"matchLabels": {"app": "adservice"}}}
    for key in rnd.sample(["ingress", "egress", "policyTypes", "podSelector"], 2):
        spec[key] = _value(rnd)
    meta = {"name": name} if rnd.random() < 0.9 else _value(rnd)
    obj = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta}
    obj["spec"] = spec
    kind = rnd.choice(["POST", "PUT", "merge", "strategic", "json", "apply"])
    if kind == "POST":
        return "POST", f"{base}?fieldValidation=Strict", obj, "application/json"
    if kind == "PUT":
        return "PUT", f"{base}/{name}", obj, "application/json"
    if kind == "apply":
        return "PATCH", f"{base}/{name}?fieldManager=x", obj, "application/apply-patch+yaml"
    if kind == "json":
        ops = [{"op": rnd.choice(["add", "replace", "remove", "move", "copy", "test"]),
                "path": rnd.choice(_PATHS), "from": rnd.choice(_PATHS), "value": _value(rnd)}
               for _ in range(rnd.randint(1, 3))]  # fmt: skip
        return "PATCH", f"{base}/{name}", ops, "application/json-patch+json"
    body = {"spec": _value(rnd) if rnd.random() < 0.3 else spec}
    return "PATCH", f"{base}/{name}", body, f"application/{kind}-patch+json"


def test_hostile_writes_get_a_status_and_never_store_what_cannot_be_enforced():
    store = Store()
    store.load(boutique.cluster_objects(), hooks=False)
    store.load(boutique.intended_policies(), last_applied=True, hooks=False)
    store.validators.append(Enforceable())
    codes: dict[int, int] = {}
    with ApiServer(store, "tok") as server:
        port = int(server.url.split(":")[2].split("/")[0])
        for seed in range(1500):
            method, path, body, ctype = _request(random.Random(seed))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request(method, path, json.dumps(body), {"Content-Type": ctype})
            answer = conn.getresponse()
            status = json.loads(answer.read())
            conn.close()
            codes[answer.status] = codes.get(answer.status, 0) + 1
            if answer.status >= 300:
                assert status["kind"] == "Status" and status["message"], (seed, status)
            view = policy.view_from_objects(store.all_objects())
            enforce.compile_all(view)
            policy.matrix(view, policy.probe_pairs(view))
        assert server.internal_errors == []
    assert {200, 400, 422} <= set(codes), codes  # the writes reach every kind of answer
