"""k8s API server, in process (no cluster, no root): what an agent's body can make the
store, the patch code and the data plane's compiler do.

Every write an agent can send ends as an answer of the API server: the object, or a 4xx
Status with a reason, never an exception of ours (which the server answers with 500).
Seeded random bodies of every patch type and verb probe the whole class; the red team's
findings are pinned one by one.
"""

from __future__ import annotations

import copy
import json
import random
import threading
import time

import pytest

from emulators.k8s import enforce, patch, policy, tables, writes
from emulators.k8s.admission import Enforceable
from emulators.k8s.apiserver import PATCH_TYPES, _Handler
from emulators.k8s.resources import BY_KIND, RESOURCES, ApiError
from emulators.k8s.store import MAX_OBJECT_BYTES, Store
from generators.k8s import boutique

NP, POD, SVC, NS = (BY_KIND[k] for k in ("NetworkPolicy", "Pod", "Service", "Namespace"))
POD_NAME = next(
    o["metadata"]["name"]
    for o in boutique.cluster_objects()
    if o["kind"] == "Pod" and o["metadata"].get("namespace") == "default"
)
CTYPES = {kind: ctype for ctype, kind in reversed(PATCH_TYPES.items())}  # apply: +yaml


def _store() -> Store:
    store = Store()
    store.load(boutique.cluster_objects(), hooks=False)
    store.load(boutique.intended_policies(), last_applied=True, hooks=False)
    store.validators.append(Enforceable())
    return store


def _np(name: str = "x", spec: dict | None = None, **meta: object) -> dict:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, **meta},
        "spec": {"podSelector": {}} if spec is None else spec,
    }


def _send(store: Store, verb: str, res, name: str | None, body: object, ctype: str = ""):
    """One request as the server's handler runs it: the raw body decoded, then the store."""
    if verb == "apply" and ctype.endswith("yaml") and isinstance(body, str):
        raw = body.encode()
    else:
        raw = json.dumps(body).encode()
    decoded = _Handler._body(raw, ctype or "application/json")
    if verb == "create":
        return store.create(res, "default", decoded, strict=False, warnings=[])
    if verb == "update":
        return store.update(res, "default", name, decoded, strict=False, warnings=[])
    return store.patch(res, "default", name, verb, decoded, strict=False, manager="m", warnings=[])


def _serves_every_read(store: Store) -> None:
    for res in RESOURCES:
        json.dumps(tables.table(res, store.list(res, None), "Object", "1"), allow_nan=False)
    view = policy.view_from_objects(store.all_objects())
    enforce.compile_all(view)


# -- the red team's replies, one by one --------------------------------------------------------
RED_TEAM = [
    ("json add path 5", NP, "adservice", "json", [{"op": "add", "path": 5, "value": 1}], 422),
    (
        "json copy from 5",
        NP,
        "adservice",
        "json",
        [{"op": "copy", "from": 5, "path": "/metadata/labels"}],
        422,
    ),
    (
        "json test superscript index",
        NP,
        "adservice",
        "json",
        [{"op": "test", "path": "/spec/policyTypes/²", "value": 1}],
        422,
    ),
    (
        "strategic deleteFromPrimitiveList number",
        NP,
        "adservice",
        "strategic",
        {"spec": {"$deleteFromPrimitiveList/policyTypes": 5}},
        400,
    ),
    (
        "strategic replace directive beside a number",
        POD,
        POD_NAME,
        "strategic",
        {"spec": {"containers": [{"$patch": "replace"}, 1]}},
        422,
    ),
    (
        "server-side apply containers [x]",
        POD,
        POD_NAME,
        "apply",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD_NAME},
         "spec": {"containers": ["x"]}},
        422,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "res", "name", "kind", "body", "code"), RED_TEAM, ids=[r[0] for r in RED_TEAM]
)
def test_red_team_patches_are_answered_with_a_4xx(case, res, name, kind, body, code):
    store = _store()
    with pytest.raises(ApiError) as err:
        _send(store, kind, res, name, body, CTYPES[kind])
    assert err.value.code == code, err.value.message
    assert err.value.message
    _serves_every_read(store)


# -- the class: seeded random bodies of every verb and patch type ------------------------------
_ATOMS = [
    None, 0, 1, -1, 2, 10**30, 1.5, True, False, "", "x", "-", "~", "~0", "~1", "/", "²", "٣",
    "01", "9" * 30, "TCP", "Ingress", "10.0.0.0/8", "::/0", "2001:db8::/32", "fe80::%x/64",
    "1.2.3.4/255.0.0.0", "a\nb", "2024-01-01T00:00:00+02:00", "2024-01-01T00:00:00.5Z", [],
    {}, [None], [1, "x"], {"a": None}, {"$patch": "delete"}, {"$patch": "replace"},
    {"$patch": "merge"}, {"$patch": 5}, {"$retainKeys": ["x"]}, {"$retainKeys": 5},
]  # fmt: skip
_KEYS = [
    "spec", "metadata", "ingress", "egress", "from", "to", "ports", "port", "endPort",
    "protocol", "podSelector", "namespaceSelector", "ipBlock", "cidr", "except", "matchLabels",
    "policyTypes", "labels", "annotations", "name", "containers", "containerPort", "uid",
    "creationTimestamp", "generation", "resourceVersion", "deletionTimestamp", "managedFields",
    "finalizers", "ownerReferences", "$patch", "$retainKeys", "$setElementOrder/containers",
    "$deleteFromPrimitiveList/policyTypes", "$deleteFromPrimitiveList/finalizers", "a",
]  # fmt: skip
_POINTERS = [
    "", "/", "/spec", "/metadata", "/metadata/labels", "/metadata/labels/a", "/spec/ingress",
    "/spec/ingress/0", "/spec/ingress/-", "/spec/ingress/01", "/spec/ingress/99999999999",
    "/spec/ingress/²", "/spec/policyTypes/0", "/spec/policyTypes/-1", "/spec/podSelector/a",
    "/spec/containers/0/name", "/metadata/name", "/metadata/creationTimestamp", "spec", "/~2",
    "/spec/ingress/0/ports/0/port", "/a~1b", "/status",
]  # fmt: skip


def _value(rnd: random.Random, depth: int = 0) -> object:
    roll = rnd.random()
    if depth > 5 or roll < 0.45:
        return copy.deepcopy(rnd.choice(_ATOMS))
    if roll < 0.7:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {rnd.choice(_KEYS): _value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}


def _op(rnd: random.Random) -> object:
    if rnd.random() < 0.05:
        return _value(rnd)
    op: dict = {"op": rnd.choice(["add", "remove", "replace", "move", "copy", "test", 5, None])}
    for field in ("path", "from", "value"):
        if rnd.random() < 0.85:
            op[field] = rnd.choice(_POINTERS) if rnd.random() < 0.8 else _value(rnd)
    return op


def _container_list(rnd: random.Random) -> list:
    items = []
    for _ in range(rnd.randint(0, 4)):
        item = {"name": rnd.choice(["server", "x", 5, None])} if rnd.random() < 0.7 else {}
        if rnd.random() < 0.3:
            item["$patch"] = rnd.choice(["delete", "replace", "merge", 7])
        if rnd.random() < 0.3:
            item["ports"] = [{"containerPort": rnd.choice([80, "80", None])}, _value(rnd)]
        items.append(item if rnd.random() < 0.9 else _value(rnd))
    return items


def _request(rnd: random.Random) -> tuple[str, object, str | None, object]:
    verb = rnd.choice(["create", "update", "json", "merge", "strategic", "apply"])
    res = rnd.choice([NP, NP, NP, POD, SVC])
    name = {NP: rnd.choice(["adservice", "fz"]), POD: POD_NAME, SVC: "frontend"}[res]
    if verb == "json":
        ops = [_op(rnd) for _ in range(rnd.randint(1, 4))]
        return verb, res, name, ops if rnd.random() < 0.95 else _value(rnd)
    body: dict = {"apiVersion": res.api_version, "kind": res.kind}
    body["metadata"] = {"name": name} if rnd.random() < 0.8 else _value(rnd)
    if isinstance(body["metadata"], dict) and rnd.random() < 0.5:
        body["metadata"].update({rnd.choice(_KEYS): _value(rnd) for _ in range(2)})
    if res is POD:
        body["spec"] = {"containers": _container_list(rnd)}
    else:
        body["spec"] = {rnd.choice(_KEYS): _value(rnd) for _ in range(rnd.randint(0, 3))}
    if rnd.random() < 0.2:
        body[rnd.choice(_KEYS)] = _value(rnd)
    if verb in ("merge", "strategic") and rnd.random() < 0.1:
        return verb, res, name, _value(rnd)
    return verb, res, name, body


def test_random_writes_are_answered_with_the_object_or_a_4xx():
    store = _store()
    codes: dict[int, int] = {}
    for seed in range(1500):
        verb, res, name, body = _request(random.Random(seed))
        ctype = CTYPES.get(verb, "application/json")
        try:
            _send(store, verb, res, name, body, ctype)
            codes[200] = codes.get(200, 0) + 1
        except ApiError as err:
            assert 400 <= err.code < 500, (seed, err.code, err.message)
            assert err.message, seed
            codes[err.code] = codes.get(err.code, 0) + 1
        _serves_every_read(store)
    assert {200, 400, 403, 404, 422} <= set(codes), codes


def test_yaml_bodies_are_json_values():
    store = _store()
    alias_bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\n"
    with pytest.raises(ApiError, match="aliases") as err:
        _send(store, "apply", NP, "adservice", alias_bomb, CTYPES["apply"])
    assert err.value.code == 400
    for text in ("a: .nan\n", "a: !!binary aGk=\n", "a: !!set {x}\n"):
        with pytest.raises(ApiError) as err:
            _send(store, "apply", NP, "adservice", text, CTYPES["apply"])
        assert err.value.code == 400
    # Timestamps stay strings and keys become strings, as sigs.k8s.io/yaml reads them.
    body = _Handler._body(b"1: 2024-01-01\n~: x\n", CTYPES["apply"])
    assert body == {"1": "2024-01-01", "null": "x"}


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "[1e400]"])
def test_json_bodies_without_a_float64_are_refused(text):
    with pytest.raises(ApiError) as err:
        _Handler._body(text.encode(), "application/json")
    assert err.value.code == 400


# -- JSON patch bounds and the store lock --------------------------------------------------------
def test_copy_bombs_and_deep_nesting_are_refused_before_they_grow():
    store = _store()
    doubling = [{"op": "copy", "from": "/spec", "path": f"/spec/x{i}"} for i in range(40)]
    with pytest.raises(ApiError, match="accumulated size increase of copy") as err:
        _send(store, "json", NP, "adservice", doubling, CTYPES["json"])
    assert err.value.code == 422
    deeper = [{"op": "copy", "from": "/spec/podSelector", "path": "/spec/podSelector/a"}] * 100
    with pytest.raises(ApiError, match="nested deeper than 64") as err:
        _send(store, "json", NP, "adservice", deeper, CTYPES["json"])
    walls = [{"op": "add", "path": "/spec" + "/a" * i, "value": {"a": {}}} for i in range(70)]
    with pytest.raises(ApiError, match="nested deeper than 64"):
        _send(store, "json", NP, "adservice", walls, CTYPES["json"])
    too_many = [{"op": "test", "path": "/kind", "value": "NetworkPolicy"}] * 10_001
    with pytest.raises(ApiError, match="maximum operations") as err:
        _send(store, "json", NP, "adservice", too_many, CTYPES["json"])
    assert err.value.code == 413
    _serves_every_read(store)


def test_an_object_past_what_etcd_stores_is_refused():
    store = _store()
    big = {"metadata": {"annotations": {"a": "x" * MAX_OBJECT_BYTES}}}
    with pytest.raises(ApiError, match="request is too large") as err:
        _send(store, "merge", NP, "adservice", big, CTYPES["merge"])
    assert err.value.code == 413


def test_a_patch_is_computed_without_the_store_lock(monkeypatch):
    store = _store()
    held = []
    real = patch.json_patch

    def watched(doc, ops):
        free = store.lock.acquire(blocking=False) and threading.Thread(
            target=lambda: held.append(store.lock.acquire(timeout=1) and store.lock.release())
        )
        if free:
            store.lock.release()
            free.start()
            free.join()
        held.append(bool(free))
        return real(doc, ops)

    monkeypatch.setattr(patch, "json_patch", watched)
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
    _send(store, "json", NP, "adservice", ops, CTYPES["json"])
    assert held and all(h is not False for h in held), held


def test_a_patch_is_recomputed_on_a_write_it_raced():
    store = _store()
    real, calls = writes.patched, []

    def racing(old, kind, body):
        calls.append(body)
        if len(calls) == 1:  # another request writes while this one computes
            store.patch(NP, "default", "adservice", "merge", {"metadata": {"labels": {"b": "2"}}})
        return real(old, kind, body)

    writes.patched = racing
    try:
        out = store.patch(NP, "default", "adservice", "merge", {"metadata": {"labels": {"a": "1"}}})
    finally:
        writes.patched = real
    mine = {"metadata": {"labels": {"a": "1"}}}
    assert [c == mine for c in calls] == [True, False, True]  # computed again on the new one
    assert out["metadata"]["labels"] == {"a": "1", "b": "2"}


# -- metadata the server owns -------------------------------------------------------------------
@pytest.mark.parametrize(
    "stamp", ["2024-01-01T00:00:00+02:00", "2024-01-01T00:00:00.123Z", "garbage", "2024-02-30"]
)
def test_the_server_sets_creation_metadata_whatever_the_client_sent(stamp):
    store = _store()
    sent = _np(
        "fresh",
        creationTimestamp=stamp,
        uid="00000000-0000-0000-0000-000000000000",
        generation=99,
        deletionTimestamp="2020-01-01T00:00:00Z",
        deletionGracePeriodSeconds=0,
        selfLink="/x",
        managedFields=[{"manager": "evil"}],
    )
    meta = _send(store, "create", NP, None, sent)["metadata"]
    assert meta["creationTimestamp"] != stamp and tables.parse_time(meta["creationTimestamp"])
    assert meta["uid"] != sent["metadata"]["uid"] and meta["generation"] == 1
    for gone in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"):
        assert gone not in meta
    row = tables.table(NP, store.list(NP, "default"), "None", "1")["rows"]
    assert all(r["cells"][2] != "<unknown>" for r in row)
    with pytest.raises(ApiError, match="resourceVersion should not be set"):
        _send(store, "create", NP, None, _np("other", resourceVersion="1"))


def test_an_update_keeps_the_servers_metadata_and_refuses_changing_it():
    store = _store()
    before = store.get(NP, "default", "adservice")["metadata"]
    body = _np("adservice", {"podSelector": {}}, creationTimestamp="2001-01-01T00:00:00Z")
    body["metadata"]["generation"] = 42
    after = _send(store, "update", NP, "adservice", body)["metadata"]
    assert after["creationTimestamp"] == before["creationTimestamp"]
    assert after["uid"] == before["uid"] and after["generation"] == before["generation"] + 1
    for field, value in (("uid", "other"), ("deletionTimestamp", "2020-01-01T00:00:00Z")):
        with pytest.raises(ApiError, match="immutable") as err:
            _send(store, "merge", NP, "adservice", {"metadata": {field: value}}, CTYPES["merge"])
        assert err.value.code == 422


@pytest.mark.parametrize(
    ("stamp", "known"),
    [
        ("2024-01-01T00:00:00Z", True),
        ("2024-01-01T00:00:00+02:00", True),
        ("2024-01-01T00:00:00.123456789-07:30", True),
        ("2024-01-01t00:00:00z", True),
        ("2024-02-30T00:00:00Z", False),
        ("2024-01-01", False),
        ("", False),
        (5, False),
        (None, False),
    ],
)
def test_age_reads_any_rfc3339_time(stamp, known):
    shown = tables.age({"metadata": {"creationTimestamp": stamp}})
    assert (shown != "<unknown>") is known


# -- what reaches iptables-restore ---------------------------------------------------------------
def _block(cidr: object, excepts: list | None = None) -> dict:
    block: dict = {"cidr": cidr}
    if excepts is not None:
        block["except"] = excepts
    return _np("blocks", {"podSelector": {}, "ingress": [{"from": [{"ipBlock": block}]}]})


@pytest.mark.parametrize("cidr", ["2001:db8::/32", "::/0", "2001:db8::1/128"])
def test_an_ipv6_block_is_stored_and_matches_no_pod(cidr):
    store = _store()
    inside = "2001:db8::/48" if cidr != "2001:db8::1/128" else None
    _send(store, "create", NP, None, _block(cidr, [inside] if inside else None))
    view = policy.view_from_objects(store.all_objects())
    scripts = enforce.compile_all(view)
    assert not any(":" in line.split()[-3] for s in scripts.values() for line in s.splitlines()
                   if line.startswith("-A NGK-INGRESS-"))  # fmt: skip
    pod = next(iter(view.pods.values()))
    assert not policy.ip_in_block(pod.ip, {"cidr": cidr})


@pytest.mark.parametrize(
    "cidr",
    [
        "fe80::%x\n-A NGK-INGRESS -j ACCEPT\nCOMMIT\n#/64",
        "fe80::1%eth0/64",
        "10.0.0.0/255.0.0.0",
        "10.0.0.0/0.255.255.255",
        " 10.0.0.0/8",
        "10.0.0.0/8 ",
        "١٠.0.0.0/8",
        "10.0.0.0/０８",
        "010.0.0.0/8",
        "10.0.0.0",
    ],
)
def test_a_cidr_go_would_not_parse_is_refused(cidr):
    store = _store()
    for body in (_block(cidr), _block("10.0.0.0/8", [cidr])):
        with pytest.raises(ApiError, match="valid CIDR") as err:
            _send(store, "create", NP, None, body)
        assert err.value.code == 422 and "\n" not in err.value.message


def test_the_compiler_emits_only_canonical_text():
    view = policy.view_from_objects(_store().all_objects())
    view.policies.append(_block("10.1.2.3/8", ["10.1.0.0/16"]))
    view.policies[-1]["metadata"]["namespace"] = "default"
    text = "".join(enforce.compile_all(view).values())
    assert "10.0.0.0/8" in text and "10.1.2.3" not in text
    for bad in ("10.0.0.0/8\n-A X -j ACCEPT", "fe80::%x\n#/64", "10.0.0.0/255.0.0.0"):
        view.policies[-1] = _block(bad)
        view.policies[-1]["metadata"]["namespace"] = "default"
        with pytest.raises(ValueError, match="not a CIDR"):
            enforce.compile_all(view)


def test_a_write_the_data_plane_refuses_is_undone():
    store = _store()
    refused = []

    def hook(res):
        if any(o["metadata"]["name"] == "poison" for o in store.objects.values()):
            refused.append(res.kind)
            raise ApiError(500, "InternalError", "enforcement failed: iptables-restore said no")

    store.hooks.append(hook)
    revision = store.revision
    with pytest.raises(ApiError, match="cannot enforce this change") as err:
        _send(store, "create", NP, None, _np("poison"))
    assert err.value.code == 422 and refused == ["NetworkPolicy"]
    assert all(o["metadata"]["name"] != "poison" for o in store.objects.values())
    assert store.revision > revision
    _send(store, "create", NP, None, _np("fine"))  # the next write goes through


def test_work_of_a_patch_is_bounded_by_its_size():
    """Merging is linear: 100,000 containers merged by key do not scan the list each."""
    pod = {"spec": {"containers": [{"name": f"c{i}"} for i in range(100_000)]}}
    body = {"spec": {"containers": [{"name": f"c{i}", "image": "x"} for i in range(100_000)]}}
    started = time.process_time()
    out = patch.strategic_merge_patch(pod, body)
    assert len(out["spec"]["containers"]) == 100_000
    assert time.process_time() - started < 30  # quadratic: 10^10 comparisons, hours
