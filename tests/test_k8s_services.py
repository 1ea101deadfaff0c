"""Services written by clients where a cluster allows it (levels 6-8), and the read-only
store of detect and localize episodes, on the API server's store alone: defaulting and
validation worded as kube-apiserver words them, the ClusterIP allocated and kept,
Endpoints as the endpoints controller derives them."""

from __future__ import annotations

import copy

import pytest

from emulators.k8s.resources import BY_KIND, BY_PLURAL, ApiError
from emulators.k8s.store import Store
from generators.k8s.clusters import estate_cluster

SVC = BY_KIND["Service"]
EP = BY_PLURAL["endpoints"]


@pytest.fixture
def store():
    spec = estate_cluster("medium", 0)
    found = Store(writable=("NetworkPolicy", "Service"))
    found.load(spec.objects())
    found.load(spec.intended(), last_applied=True)
    return found


def _service(store: Store) -> dict:
    return next(o for o in store.objects.values() if o["kind"] == "Service"
                and o["metadata"]["namespace"] == "data")  # fmt: skip


def _patch(store: Store, svc: dict, ops: list) -> dict:
    return store.patch(SVC, "data", svc["metadata"]["name"], "json", ops)


def test_a_targetport_patch_is_what_endpoints_show(store):
    svc = _service(store)
    name, number = svc["metadata"]["name"], svc["spec"]["ports"][0]["targetPort"]
    _patch(store, svc, [{"op": "replace", "path": "/spec/ports/0/targetPort", "value": number + 1}])
    (ep,) = [e for e in store.list(EP, "data") if e["metadata"]["name"] == name]
    assert ep["subsets"][0]["ports"][0]["port"] == number + 1
    _patch(store, svc, [{"op": "replace", "path": "/spec/ports/0/targetPort", "value": "nope"}])
    (ep,) = [e for e in store.list(EP, "data") if e["metadata"]["name"] == name]
    assert ep["subsets"] == []  # the pod has no port of that name: left out, as kube does


@pytest.mark.parametrize(
    ("ops", "needle"),
    [
        ([{"op": "replace", "path": "/spec/ports/0/targetPort", "value": 70000}], "65535"),
        (
            [{"op": "replace", "path": "/spec/ports/0/targetPort", "value": "Bad_Name"}],
            "alpha-numeric",
        ),
        ([{"op": "replace", "path": "/spec/ports/0/port", "value": 0}], "spec.ports[0].port"),
        (
            [{"op": "replace", "path": "/spec/ports/0/protocol", "value": "ICMP"}],
            "Unsupported value",
        ),
        ([{"op": "replace", "path": "/spec/type", "value": "NodePort"}], "ClusterIP Services only"),
        ([{"op": "replace", "path": "/spec/type", "value": "Magic"}], "Unsupported value"),
        (
            [{"op": "replace", "path": "/spec/clusterIP", "value": "10.96.9.9"}],
            "may not change once set",
        ),
        ([{"op": "replace", "path": "/spec/ports", "value": []}], "spec.ports: Required value"),
        (
            [{"op": "add", "path": "/spec/ports/-", "value": {"port": 1, "targetPort": 1}}],
            "spec.ports[1].name: Required value",
        ),
        ([{"op": "replace", "path": "/spec/selector", "value": {"a": "b c"}}], "spec.selector"),
        ([{"op": "add", "path": "/spec/bogus", "value": 1}], "unknown field"),
    ],
)
def test_invalid_service_writes_are_refused_as_kube_apiserver_refuses_them(store, ops, needle):
    svc = _service(store)
    before = copy.deepcopy(svc)
    with pytest.raises(ApiError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        store.patch(SVC, "data", svc["metadata"]["name"], "json", ops, strict=True)
    assert _service(store)["spec"] == before["spec"]


def test_a_write_without_a_clusterip_keeps_it_and_a_create_gets_one(store):
    svc = _service(store)
    spec = {"selector": svc["spec"]["selector"], "ports": svc["spec"]["ports"]}
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc["metadata"]["name"]},
            "spec": spec}  # fmt: skip
    kept = store.update(SVC, "data", svc["metadata"]["name"], body)
    assert kept["spec"]["clusterIP"] == svc["spec"]["clusterIP"]
    made = store.create(SVC, "data", {**body, "metadata": {"name": "extra"}})
    assert made["spec"]["clusterIP"] == "10.96.128.1" and made["spec"]["type"] == "ClusterIP"
    again = store.create(SVC, "data", {**body, "metadata": {"name": "extra2"}})
    assert again["spec"]["clusterIP"] == "10.96.128.2"
    with pytest.raises(ApiError, match="already allocated"):
        taken = {**spec, "clusterIP": "10.96.128.1"}
        store.create(SVC, "data", {**body, "metadata": {"name": "x"}, "spec": taken})
    store.delete(SVC, "data", "extra")


def test_services_stay_label_only_where_a_cluster_does_not_allow_more():
    spec = estate_cluster("medium", 0)
    plain = Store()
    plain.load(spec.objects())
    svc = next(o for o in plain.objects.values() if o["kind"] == "Service")
    ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
    with pytest.raises(ApiError, match="may change only labels"):
        plain.patch(SVC, ns, name, "json", [{"op": "replace", "path": "/spec/ports/0/port",
                                             "value": 1}])  # fmt: skip
    with pytest.raises(ApiError, match="cannot delete"):
        plain.delete(SVC, ns, name)


def test_a_read_only_store_refuses_every_write_but_dry_runs(store):
    svc = _service(store)
    ns, name = "data", svc["metadata"]["name"]
    store.read_only = True
    ops = [{"op": "replace", "path": "/spec/ports/0/targetPort", "value": 1}]
    with pytest.raises(ApiError, match="may only look"):
        store.patch(SVC, ns, name, "json", ops)
    with pytest.raises(ApiError, match="may only look"):
        store.delete(BY_KIND["NetworkPolicy"], ns, f"default-deny-{ns}")
    with pytest.raises(ApiError, match="may only look"):
        store.patch(BY_KIND["Namespace"], "", ns, "merge", {"metadata": {"labels": {"x": "y"}}})
    dry = store.patch(SVC, ns, name, "json", ops, dry_run=True)
    assert dry["spec"]["ports"][0]["targetPort"] == 1
    assert _service(store)["spec"] == svc["spec"]
