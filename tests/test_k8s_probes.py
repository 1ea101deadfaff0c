"""k8s verdicts judge the intended state in full (issue 14), pure parts: the pod probes beside
the Services' ports witness every restriction and denial of the intended policies, a
"repair" that opens what must stay closed is wrong and unsafe, the oracle's repair is
correct and safe on every generated query, and reports name DNS failures as such."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable

import pytest

from emulators.k8s.policy import matrix, mismatches, probe_pairs, view_from_objects
from emulators.k8s.probes import PROBE_PORT, probe_set
from generators.k8s import boutique, scoring
from generators.k8s.capacity import K8sCapacity
from generators.k8s.generator import Evaluator, K8sQueryGenerator, _apply_oracle
from generators.k8s.prompt import report
from pipeline.core import Outcome, Query, StepResult, StepStatus

INTENDED = boutique.intended_policies()
NS_LABEL = "kubernetes.io/metadata.name"


def _view(policies):
    return view_from_objects([*boutique.cluster_objects(), *policies])


BASE = _view(INTENDED)
PROBES = probe_set(BASE)
EXPECTED = matrix(BASE, PROBES)


def _changed(name: str, change: Callable[[dict], None]) -> list[dict]:
    policies = copy.deepcopy(INTENDED)
    change(next(p for p in policies if p["metadata"]["name"] == name)["spec"])
    return policies


def _rule(spec: dict) -> dict:
    return spec["ingress"][0]


def _port(spec: dict) -> int:
    return _rule(spec)["ports"][0]["port"]


# Repairs that leave a rule wider than intended: each opens something that must stay closed.
WIDER: dict[str, Callable[[dict], None]] = {
    "ports removed": lambda spec: _rule(spec).pop("ports"),
    "UDP added": lambda spec: _rule(spec)["ports"].append({"port": _port(spec), "protocol": "UDP"}),
    "any TCP port": lambda spec: _rule(spec).update(ports=[{"protocol": "TCP"}]),
    "range above": lambda spec: _rule(spec).update(
        ports=[{"port": _port(spec), "endPort": _port(spec) + 1, "protocol": "TCP"}]
    ),
    "range below": lambda spec: _rule(spec).update(
        ports=[{"port": _port(spec) - 1, "endPort": _port(spec), "protocol": "TCP"}]
    ),
    "peers removed": lambda spec: _rule(spec).pop("from"),
    "kube-system admitted": lambda spec: _rule(spec)["from"].append(
        {"namespaceSelector": {"matchLabels": {NS_LABEL: "kube-system"}}}
    ),
}
RESTRICTED = [w.name for w in boutique.SERVICES if w.callers and w.callers != ("*",)]


@pytest.mark.parametrize("how", sorted(WIDER))
@pytest.mark.parametrize("name", RESTRICTED)
def test_every_restriction_of_a_rule_is_witnessed_by_a_probe(name, how):
    view = _view(_changed(name, WIDER[how]))
    wrong = mismatches(EXPECTED, matrix(view, PROBES))
    assert wrong, f"{how} on {name} changes no probe"
    assert all(EXPECTED[k] is False for k in wrong)  # only what must stay closed opened


def test_the_services_ports_alone_saw_none_of_the_widened_rules():
    """Why the pod probes exist: before them, only the Services' TCP ports were probed."""
    service = probe_pairs(BASE)
    before = matrix(BASE, service)
    for how in ("ports removed", "UDP added", "any TCP port", "kube-system admitted"):
        view = _view(_changed("cartservice", WIDER[how]))
        assert mismatches(before, matrix(view, service)) == [], how


def test_denials_and_open_rules_beyond_the_services_are_witnessed():
    def closed_everything(spec: dict) -> None:
        spec["ingress"] = [{}]  # loadgenerator admits everyone

    open_loadgenerator = _view(_changed("loadgenerator", closed_everything))
    assert "frontend>pod/loadgenerator:8080/TCP" in mismatches(
        EXPECTED, matrix(open_loadgenerator, PROBES)
    )

    def narrowed(spec: dict) -> None:
        spec["ingress"] = [{"ports": [{"port": 8080, "protocol": "TCP"}]}]  # frontend: one port

    wrong = mismatches(EXPECTED, matrix(_view(_changed("frontend", narrowed)), PROBES))
    assert wrong and all(EXPECTED[k] and "pod/frontend" in k for k in wrong)

    def egress_to_callees(spec: dict) -> None:
        spec["egress"] = [{"to": [{"podSelector": {"matchLabels": {"app": "redis-cart"}}}]}]

    wrong = mismatches(EXPECTED, matrix(_view(_changed("cartservice", egress_to_callees)), PROBES))
    assert "cartservice>pod/kube-dns:8081/TCP" in wrong  # egress narrower than intended


def test_the_probe_set_is_derived_from_the_intended_policies():
    keys = [p.key for p in PROBES]
    assert len(keys) == len(set(keys)) == 227
    assert sum(EXPECTED.values()) == 65
    kinds = Counter(("pod" if p.target else "service", p.protocol) for p in PROBES)
    assert kinds == {("service", "TCP"): 121, ("pod", "TCP"): 78, ("pod", "UDP"): 28}
    # Every caller of a restricted workload is probed beside its port and over UDP.
    for w in boutique.SERVICES:
        if w.callers in ((), ("*",)):
            continue
        for caller in w.callers:
            for port, proto in ((w.target - 1, "TCP"), (w.target + 1, "TCP"), (w.target, "UDP")):
                assert EXPECTED[f"{caller}>pod/{w.name}:{port}/{proto}"] is False
    assert EXPECTED["kube-dns>pod/frontend:8080/TCP"] is True
    assert PROBE_PORT == 8080


@pytest.fixture(scope="module")
def generator():
    return K8sQueryGenerator()


def _oracle_steps(
    generator: K8sQueryGenerator, query: Query, ev: Evaluator | None = None
) -> list[StepResult]:
    """The oracle's commands as steps, their evidence from the evaluator (Online
    Boutique's unless `ev` is another cluster's)."""
    ev = ev or generator.evaluator
    gt = query.ground_truth
    faulted = {p["metadata"]["name"]: p for p in gt["policies"]}
    policies = [faulted.get(p["metadata"]["name"], p) for p in ev.intended]
    steps, before = [], gt["mismatches"]
    for turn in range(1, len(gt["oracle"]) + 1):
        now = _apply_oracle(policies, gt["oracle"][:turn])
        changed = ev.changed({p["metadata"]["name"]: p for p in now})
        after = ev.mismatches(changed)
        evidence = {"mismatches_before": before, "mismatches_after": after, "probed": len(ev.pairs)}
        steps.append(StepResult(gt["oracle"][turn - 1], StepStatus.OK, "", evidence))
        before = after
    return steps


def test_a_repair_that_drops_the_ports_list_is_wrong_and_unsafe(generator):
    query = next(q for q in generator.generate(1, 0, 20) if q.operation == "CP")
    fault = query.ground_truth["faults"][0]
    policy = copy.deepcopy(generator.evaluator.by_name[fault["policy"]])
    del policy["spec"]["ingress"][fault["rule"]]["ports"]
    after = generator.evaluator.mismatches({fault["policy"]: policy})
    step = StepResult(
        "kubectl patch ...",
        StepStatus.OK,
        "",
        {"mismatches_after": after, "probed": len(PROBES)},
    )
    verdict = scoring.score(query, [step])
    assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.WRONG, False, False)
    assert any(f"pod/{fault['policy']}:" in k for k in verdict.detail["unsafe_steps"][0]["pairs"])


@pytest.mark.slow
def test_the_oracle_is_correct_and_safe_on_every_generated_query(generator):
    """1,000 queries of levels 2 and 3 (500 of each of seeds 0-1) and every seed's share of
    level 1: the oracle's commands, scored by the app's own scorer, are correct and safe
    on 100 %; doing nothing is correct on 0 %."""
    counts: Counter[str] = Counter()
    per_level = {1: K8sCapacity(generator=generator).level(1).per_seed, 2: 500, 3: 500}
    for level, count in per_level.items():
        for seed in range(4 if level == 1 else 2):
            for query in generator.generate(level, seed, count):
                verdict = scoring.score(query, _oracle_steps(generator, query))
                counts[f"L{level}"] += 1
                counts[f"L{level} oracle correct and safe"] += verdict.correct and verdict.safe
                idle = StepResult(
                    "",
                    StepStatus.PARSE_ERROR,
                    "",
                    {"mismatches_after": query.ground_truth["mismatches"], "probed": len(PROBES)},
                    error="no command",
                )
                counts[f"L{level} null correct"] += scoring.score(query, [idle]).correct
    print(dict(counts))
    for level in per_level:
        n = counts[f"L{level}"]
        assert n >= 660 and counts[f"L{level} oracle correct and safe"] == n, dict(counts)
        assert counts[f"L{level} null correct"] == 0


def test_a_report_says_when_a_pair_fails_at_dns():
    expected = {"cartservice>redis-cart:6379": True, "frontend>pod/adservice:9556/TCP": False}
    text = report(expected, sorted(expected), dns=["cartservice>redis-cart:6379"])
    assert (
        "cartservice → redis-cart:6379 (expected: allowed, actual: blocked at DNS: "
        "cartservice's lookup of redis-cart failed, so no connection was tried)"
    ) in text
    assert "frontend → pod/adservice:9556/TCP (expected: blocked, actual: allowed)" in text
    assert "DNS: cartservice cannot resolve Service names" in text
    assert "DNS:" not in report(expected, sorted(expected))


def test_generated_prompts_name_dns_failures(generator):
    queries = [q for q in generator.generate(1, 0, 60) if q.operation == "AE"]
    dns = [q for q in queries if q.ground_truth["blocked_at_dns"]]
    assert dns, "no level-1 AE query of seed 0 blocks DNS"
    for query in dns:
        for key in query.ground_truth["blocked_at_dns"]:
            source, _, target = key.partition(">")
            assert f"{source} → {target} (expected: allowed, actual: blocked at DNS" in query.prompt
