"""k8s levels 6-8 (issue 28, WP-E), pure parts: the estates, every kind of the catalogue
observable alone, every widening of an estate's rules seen, masking proven per query, the
oracle correct and safe and doing nothing wrong by the app's own scorer, the answers of
detect and localize, the variety cap, and levels 4 and 5 drawing what they drew."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import re
from collections import Counter

import pytest

from emulators.k8s.policy import allowed
from generators.k8s import scoring
from generators.k8s.app import K8sApp
from generators.k8s.clusters import estate_cluster
from generators.k8s.compose import Estates, _without
from generators.k8s.config import K8sConfig
from generators.k8s.fixes import replay
from generators.k8s.generator import K8sQueryGenerator
from generators.k8s.generator6 import query_places
from generators.k8s.kinds import KINDS, vocabulary
from generators.k8s.overlay import key_of
from generators.k8s.tiers import TIERS
from pipeline.api import Outcome, StepResult, StepStatus
from pipeline.core import canonical_json
from tests.test_k8s_generated import _widenings

# sha256 of queries 0-11 of seed 1 at levels 4 and 5 as app version 4 (commit 41dcd2b) drew
# them: the levels before the tiers are what they were.
LEVELS_4_5 = {
    4: "3c684165481eb1b3ab878e7cd378374fc84e2733576a201b3c0952743ca4592a",
    5: "23bb3d0aa07fffaa1c3d8b44b4d4c78e9cd9b046f290fe91bdaffafb2e26902d",
}
COMPONENT = re.compile(
    r"^(networkpolicy/[a-z0-9-]+/[a-z0-9-]+|namespace/[a-z0-9-]+|pod/[a-z0-9-]+/[a-z0-9-]+|"
    r"service/[a-z0-9-]+/[a-z0-9-]+)$"
)


SHARED = Estates()  # every estate evaluated once for the module


@pytest.fixture(scope="module")
def estates():
    return SHARED


@pytest.fixture(scope="module")
def medium():
    return estate_cluster("medium", 1)


def test_levels_4_and_5_draw_what_they_drew():
    generator = K8sQueryGenerator()
    for level, digest in LEVELS_4_5.items():
        found = hashlib.sha256()
        for query in generator.generate(level, 1, 12):
            found.update(canonical_json(dataclasses.asdict(query)).encode())
        assert found.hexdigest() == digest, level


@pytest.mark.parametrize(
    ("size", "workloads", "namespaces"), [("medium", 11, 4), ("xlarge", 27, 7)]
)
def test_estates_are_seeded_and_labelled(size, workloads, namespaces):
    spec = estate_cluster(size, 0)
    es = spec.estate
    assert len(es.app.app_workloads) == workloads and len(es.app.namespaces) == namespaces
    assert estate_cluster(size, 0).env_key == spec.env_key  # the same every time
    pods = [o for o in spec.objects() if o["kind"] == "Pod"]
    assert all({"app", "app.kubernetes.io/name"} <= set(o["metadata"]["labels"]) for o in pods
               if o["metadata"]["namespace"] != "kube-system")  # fmt: skip
    text = canonical_json(spec.intended())
    assert '"tier"' in text and '"kubernetes.io/metadata.name"' in text  # both selector styles
    assert {"audit", "sandbox"} <= {o["metadata"]["name"] for o in spec.objects()
                                     if o["kind"] == "Namespace"}  # fmt: skip


@pytest.mark.parametrize(("size", "variant"), [("medium", 1), ("xlarge", 0)])
def test_every_kind_is_observable_alone_and_named_by_its_component(size, variant, estates):
    spec = estate_cluster(size, variant)
    kinds: Counter[str] = Counter()
    for fault in estates.faults(spec):
        assert COMPONENT.match(fault.component), fault.component
        assert fault.device == fault.component.split("/")[1], fault
        assert not {k[1] for k in fault.keys} & {"audit", "sandbox"}  # benign anomalies' own
        if estates.wrong(spec, fault):
            kinds[fault.kind] += 1
    missing = {k.id for k in KINDS if not k.strays} - set(kinds)
    assert missing <= ({"k8s.default_deny_missing"} if size == "medium" else set()), missing
    assert len(vocabulary().labels) == len(KINDS) - 1 == 20  # k8s.policy_extra: level 8


def test_the_incremental_evaluator_equals_a_fresh_one(medium, estates):
    """Overlays of several kinds at once: re-evaluating only what they can change gives the
    whole matrix evaluated afresh."""
    from emulators.k8s.policy import matrix, view_from_objects

    ev = estates.evaluator(medium)
    faults = [f for f in estates.faults(medium) if estates.wrong(medium, f)]
    by_kind: dict[str, list] = {}
    for f in faults:
        by_kind.setdefault(f.kind, []).append(f)
    for kinds in (
        ["k8s.pod_label_drift", "k8s.ns_label_missing", "k8s.svc_targetport_mismatch"],
        ["k8s.policy_wrong_namespace", "k8s.svc_selector_mismatch", "k8s.port_wrong"],
    ):
        overlay = {}
        for kind in kinds:
            overlay.update(by_kind[kind][len(overlay) % len(by_kind[kind])].overlay)
        objects = {key_of(o): o for o in [*medium.objects(), *medium.intended()]}
        objects.update(overlay)
        view = view_from_objects([o for o in objects.values() if o is not None])
        view.listens = ev.listens
        assert {**ev.expected, **ev.outcome(overlay)} == matrix(view, ev.pairs), kinds


def test_every_widened_rule_of_an_estate_that_opens_a_connection_is_seen(medium, estates):
    """As at levels 4 and 5: a repair wider than the intended rule that lets any pod connect
    where it could not shows on a probe, and only as opened probes."""
    ev = estates.evaluator(medium)
    pods = sorted(ev.view.pods.values(), key=lambda p: p.name)
    ports = sorted({n + d for p in pods for _, n, _ in p.ports for d in (-1, 0, 1)} | {8080, 53})
    opened = 0
    for policy in medium.intended():
        if not policy["spec"]["podSelector"]:
            continue
        selected = [p for p in pods if ev._selected(key_of(policy), policy) == {p.name}]
        if not selected:
            continue
        (pod,) = selected
        for direction, key in (("ingress", "from"), ("egress", "to")):
            for i, rule in enumerate(policy["spec"].get(direction) or []):
                for how, wider in _widenings(rule, key).items():
                    changed = copy.deepcopy(policy)
                    changed["spec"][direction][i] = wider
                    overlay = {key_of(policy): changed}
                    view = ev.view_of(overlay)
                    ends = [(o, pod) if direction == "ingress" else (pod, o)
                            for o in pods if o is not pod]  # fmt: skip
                    opens = any(
                        allowed(view, s, d, port, proto) and not allowed(ev.view, s, d, port, proto)
                        for s, d in ends for port in ports for proto in ("TCP", "UDP")
                    )  # fmt: skip
                    wrong = ev.mismatches({}, overlay)
                    assert all(ev.expected[k] is False for k in wrong), (policy, how, wrong)
                    if opens:
                        opened += 1
                        assert wrong, f"{policy['metadata']['name']} {how} opens unseen"
    assert opened >= 40


def _pure_steps(app: K8sApp, query) -> list[StepResult]:
    """The oracle's mitigate commands as steps, their evidence from the pure evaluator."""
    gt = query.ground_truth
    gen = app.tier_generator()
    spec = estate_cluster(gt["cluster"]["estate"], gt["cluster"]["variant"])
    ev = gen.estates.evaluator(spec)
    intent = {tuple(k): o for k, o in gt["benign_objects"]}
    state = {**ev.base, **{tuple(k): o for k, o in gt["objects"]}}
    expected = ev.expected_for(intent)
    steps, before = [], gt["mismatches"]
    for command in gt["oracle"]:
        replay(state, command)
        overlay = {k: o for k, o in state.items() if ev.base.get(k) != o or k in intent}
        after = ev.mismatches(intent, {**overlay, **intent}, expected)
        evidence = {"mismatches_before": before, "mismatches_after": after,
                    "probed": gt["probes"], "benign_touched": []}  # fmt: skip
        steps.append(StepResult(command["command"], StepStatus.OK, "", evidence))
        before = after
    return steps


_APPS: dict[int | None, K8sApp] = {}


def _app(estate: int | None) -> K8sApp:
    """One app per pinned estate for the module: estates are evaluated once."""
    if estate not in _APPS:
        _APPS[estate] = K8sApp(K8sConfig(estate=estate))
        _APPS[estate].tier_generator().estates = SHARED
    return _APPS[estate]


@pytest.mark.parametrize(
    ("level", "estate", "count"),
    [(6, 1, 4), (7, 1, 3), (8, 0, 2),
     pytest.param(7, None, 30, marks=pytest.mark.slow),
     pytest.param(8, None, 20, marks=pytest.mark.slow)],
)  # fmt: skip
def test_each_tier_validates_its_queries(level, estate, count):
    """Per tier: the draw's shape, each fault observable alone, masking proven, the oracle
    correct and safe by the app's own scorer, doing nothing wrong."""
    app = _app(estate)
    tier = TIERS[level]
    queries = list(app.generate(level, 3, count))
    for query in queries:
        gt = query.ground_truth
        assert query.size in tier.sizes and query.task == "mitigate"
        assert len(gt["faults"]) in tier.faults and len(gt["benign"]) in tier.benign
        assert len({c["device"] for c in gt["causes"]}) >= tier.min_namespaces
        assert len(gt["oracle"]) <= tier.turns // 2
        oracle = scoring.score(query, _pure_steps(app, query))
        assert (oracle.outcome, oracle.safe) == (Outcome.CORRECT, True), query.query_id
        assert not scoring.score(query, []).correct
        if tier.masking:
            a, b = gt["masking"]
            drawn = app.tier_generator().draw_of(query)
            ev = app.tier_generator().estates.evaluator(drawn.spec)
            every = set(ev.mismatches(drawn.intent, drawn.state))
            assert every == set(ev.mismatches(drawn.intent, _without(drawn, [b])))  # B hidden
            assert set(ev.mismatches(drawn.intent, _without(drawn, [a]))) != set(
                ev.mismatches(drawn.intent, _without(drawn, [a, b]))
            )  # repairing A reveals B
    again = [q.prompt + q.ground_truth_json() for q in app.generate(level, 3, len(queries))]
    assert again == [q.prompt + q.ground_truth_json() for q in queries]  # same seed, same bytes


def test_level_8_holds_no_size_kind_placement_in_over_a_tenth_of_its_queries():
    """The issue's variety bound on pure draws: over 100 level-8 queries (four faults each,
    one of them from the 12 size x kind x placement keys of faults that only open), no key
    is in more than 10 of them; uncapped, `peer_extra` at a `service` was in 22-24 %. The
    draw is not narrowed: every kind is drawn and every query keeps a fault that only
    opens what must stay closed. (Localize draws through the same code; detect is capped
    the same way, with fewer faults a query.)"""
    app = K8sApp(K8sConfig(task="mitigate"))
    gen = app.tier_generator()
    gen.estates = SHARED
    queries = list(app.generate(8, 0, 100))
    held = Counter(p for q in queries for p in query_places(q))
    top, count = held.most_common(1)[0]
    assert count <= 10, (top, count)
    assert len({f["kind"] for q in queries for f in q.ground_truth["faults"]}) == len(KINDS)
    for query in queries:
        drawn = gen.draw_of(query)
        assert any(SHARED.closed_only(drawn.spec, f) for f in drawn.faults), query.query_id
