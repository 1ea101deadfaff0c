"""k8s app, pure parts: NetworkPolicy semantics, selectors, patches, API validation wording,
the intended connectivity against the upstream policies, and seeded query generation."""

from __future__ import annotations

import contextlib
import copy
import json
import random
import re
import time

import pytest
import yaml

from emulators.k8s import enforce, patch, policy, schema
from emulators.k8s.resources import BY_KIND, ApiError
from emulators.k8s.selectors import SelectorError, parse
from generators.k8s import boutique
from generators.k8s.config import K8sConfig
from generators.k8s.faults import LEVELS
from generators.k8s.generator import K8sQueryGenerator
from generators.k8s.reply import MAX_REPLY_CHARS, ReplyError, _fences, parse_reply
from generators.k8s.scoring import score
from pipeline.config import compose
from pipeline.core import Outcome, StepResult, StepStatus
from pipeline.errors import ConfigError
from tests.conftest import SHARED_DATA, require

NETPOL = BY_KIND["NetworkPolicy"]


def _view(*policies):
    return policy.view_from_objects([*boutique.cluster_objects(), *policies])


def _pod(view, app):
    return next(p for p in view.pods.values() if p.labels.get("app") == app)


def _np(name, spec):
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def test_intended_matrix_is_the_communication_graph():
    view = _view(*boutique.intended_policies())
    allowed = {k for k, ok in policy.matrix(view, policy.probe_pairs(view)).items() if ok}
    assert "frontend>adservice:9555" in allowed
    assert "checkoutservice>emailservice:5000" in allowed
    assert "cartservice>redis-cart:6379" in allowed
    assert "loadgenerator>frontend:80" in allowed
    assert "frontend>emailservice:5000" not in allowed
    assert "adservice>cartservice:7070" not in allowed
    assert len(allowed) == 26


def test_upstream_policies_give_the_same_matrix():
    folder = SHARED_DATA / "online-boutique" / "network-policies"
    require(folder.is_dir(), f"the upstream Online Boutique policies are not in {folder}")
    upstream = []
    for path in sorted(folder.glob("network-policy-*.yaml")):
        obj = yaml.safe_load(path.read_text())
        obj["metadata"]["namespace"] = "default"
        upstream.append(obj)
    ours, theirs = _view(*boutique.intended_policies()), _view(*upstream)
    pairs = policy.probe_pairs(ours)
    assert policy.matrix(theirs, pairs) == policy.matrix(ours, pairs)


def test_named_ports_end_ports_ip_blocks_and_namespace_selectors():
    base = _view()
    front, ad = _pod(base, "frontend"), _pod(base, "adservice")
    named = _np(
        "a",
        {
            "podSelector": {"matchLabels": {"app": "adservice"}},
            "ingress": [{"ports": [{"port": "grpc", "protocol": "TCP"}]}],
        },
    )
    view = _view(named)
    assert policy.allowed(view, front, ad, 9555)
    assert not policy.allowed(view, front, ad, 9556)
    ranged = _np(
        "a", {"podSelector": {}, "ingress": [{"ports": [{"port": 9000, "endPort": 9600}]}]}
    )
    assert policy.allowed(_view(ranged), front, ad, 9555)
    block = _np(
        "a",
        {
            "podSelector": {"matchLabels": {"app": "adservice"}},
            "ingress": [
                {"from": [{"ipBlock": {"cidr": "10.244.0.0/24", "except": [f"{front.ip}/32"]}}]}
            ],
        },
    )
    assert not policy.allowed(_view(block), front, ad, 9555)
    assert policy.allowed(_view(block), _pod(base, "cartservice"), ad, 9555)
    other_ns = _np(
        "a",
        {
            "podSelector": {},
            "ingress": [
                {
                    "from": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                            }
                        }
                    ]
                }
            ],
        },
    )
    assert not policy.allowed(_view(other_ns), front, ad, 9555)
    egress_only = _np(
        "a",
        {
            "podSelector": {"matchLabels": {"app": "frontend"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"podSelector": {}}]}],
        },
    )
    view = _view(egress_only)
    assert policy.allowed(view, front, ad, 9555)  # same namespace only: DNS is in kube-system
    pair = next(p for p in policy.probe_pairs(view) if p.key == "frontend>adservice:9555")
    assert not policy.connects(view, pair)


def _random_policy(rnd: random.Random, name: str) -> dict:
    apps = ["frontend", "adservice", "cartservice", "redis-cart", "nothing"]

    def peer() -> dict:
        roll = rnd.random()
        if roll < 0.3:
            excepts = [f"10.0.{i}.0/24" for i in range(rnd.randint(0, 2))]
            return {"ipBlock": {"cidr": f"10.{rnd.randint(0, 255)}.0.0/16", "except": excepts}}
        if roll < 0.6:
            return {"podSelector": {"matchLabels": {"app": rnd.choice(apps)}}}
        return {"podSelector": {}} if roll < 0.8 else {"namespaceSelector": {}}

    def port() -> dict:
        roll = rnd.random()
        if roll < 0.2:
            return {"port": rnd.choice(["http", "grpc", "redis", "x"])}
        return {"protocol": "UDP"} if roll < 0.3 else {"port": rnd.randint(1, 9000)}

    spec: dict = {"podSelector": {} if rnd.random() < 0.3 else {"matchLabels": {"app": "frontend"}}}
    for direction, key in (("ingress", "from"), ("egress", "to")):
        spec[direction] = [
            {key: [peer() for _ in range(rnd.randint(0, 4))],
             "ports": [port() for _ in range(rnd.randint(0, 4))]}
            for _ in range(rnd.randint(0, 3))
        ]  # fmt: skip
    spec["policyTypes"] = rnd.choice([["Ingress"], ["Egress"], ["Ingress", "Egress"]])
    return _np(name, spec)


def test_rule_bound_bounds_what_the_compiler_writes():
    def lines(view: policy.View) -> int:
        return sum(script.count("\n") for script in enforce.compile_all(view).values())

    base = policy.view_from_objects(boutique.cluster_objects())
    fixed = lines(base) + 4 * len(base.pods)  # per pod: REJECTs of two isolated directions
    for seed in range(150):
        rnd = random.Random(seed)
        policies = [_random_policy(rnd, f"p{i}") for i in range(rnd.randint(1, 4))]
        view = _view(*policies)
        assert lines(view) - fixed <= enforce.rule_bound(view) - enforce.rule_bound(_view())
    huge = _np("huge", {"podSelector": {}, "ingress": [{
        "from": [{"ipBlock": {"cidr": f"10.{i}.0.0/16"}} for i in range(200)],
        "ports": [{"port": p} for p in range(1, 201)]}]})  # fmt: skip
    assert enforce.rule_bound(_view(huge)) > enforce.MAX_RULES  # 4 kB of YAML, 500,000 rules


def test_label_selector_strings():
    assert parse("app=frontend,tier!=db")({"app": "frontend"})
    assert parse("app in (a, b),!legacy")({"app": "b"})
    assert not parse("app notin (a),env")({"app": "c"})
    with pytest.raises(SelectorError):
        parse("app=(")


def test_patches():
    doc = {"spec": {"ingress": [{"ports": [{"port": 1}]}], "podSelector": {}}}
    out = patch.json_patch(
        doc, [{"op": "replace", "path": "/spec/ingress/0/ports/0/port", "value": 2}]
    )
    assert out["spec"]["ingress"][0]["ports"][0]["port"] == 2 and doc != out
    assert patch.merge_patch(doc, {"spec": {"ingress": None}}) == {"spec": {"podSelector": {}}}
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}
    merged = patch.strategic_merge_patch(
        pod,
        {"spec": {"containers": [{"name": "b", "image": "y"}], "$setElementOrder/containers": []}},
    )
    assert merged["spec"]["containers"] == [
        {"name": "a", "image": "x"},
        {"name": "b", "image": "y"},
    ]
    with pytest.raises(patch.PatchError):
        patch.json_patch(doc, [{"op": "remove", "path": "/spec/egress"}])


def test_validation_uses_the_api_servers_wording():
    obj = _np(
        "x", {"podSelector": {}, "ingress": [{"ports": [{"port": 70000, "protocol": "HTTP"}]}]}
    )
    schema.default_network_policy(obj)
    with pytest.raises(ApiError) as err:
        schema.validate_network_policy(NETPOL, obj)
    assert err.value.code == 422
    assert (
        'spec.ingress[0].ports[0].protocol: Unsupported value: "HTTP": supported values: '
        '"SCTP", "TCP", "UDP"' in err.value.message
    )
    assert "spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535" in (
        err.value.message
    )
    with pytest.raises(ApiError, match=r'strict decoding error: unknown field "spec.ingres"'):
        schema.decode(NETPOL, _np("x", {"ingres": []}), strict=True)
    defaulted = _np("x", {"egress": [{"ports": [{"port": 53}]}]})
    schema.default_network_policy(defaulted)
    assert defaulted["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert defaulted["spec"]["egress"][0]["ports"][0]["protocol"] == "TCP"


@pytest.fixture(scope="module")
def generator():
    return K8sQueryGenerator()


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_queries_are_seeded_and_validated(generator, level):
    first = [q.ground_truth_json() + q.prompt for q in generator.generate(level, 3, 12)]
    again = [q.ground_truth_json() + q.prompt for q in generator.generate(level, 3, 12)]
    assert first == again
    queries = list(generator.generate(level, 3, 12))
    combos = {"+".join(c) for c in LEVELS[level]}
    assert {q.operation for q in queries} == combos
    for q in queries:
        assert q.ground_truth["mismatches"], q.query_id
        assert len(q.ground_truth["faults"]) == len(LEVELS[level][0])
        key = q.ground_truth["mismatches"][0]
        assert key.replace(">", " → ") in q.prompt


def test_bad_level_and_config():
    with pytest.raises(ConfigError, match="level=6 is not defined for app kind 'k8s'"):
        compose(["app=k8s", "level=6"])  # the pipeline checks levels, once for all
    with pytest.raises(ConfigError, match=r"app\.max_turns"):
        K8sConfig(max_turns=0).validate()
    with pytest.raises(ConfigError, match=r"app\.faults .*'remove_egress' is not one"):
        K8sConfig(faults=["remove_egress"]).validate()
    with pytest.raises(ConfigError, match=r"app\.faults"):
        K8sConfig(faults=[]).validate()
    with pytest.raises(ConfigError, match=r"app\.size must be null or one of small, medium, large"):
        K8sConfig(size="huge").validate()


@pytest.mark.parametrize(
    ("reply", "command", "stdin"),
    [
        ('{"command": "kubectl get netpol"}', "kubectl get netpol", ""),
        (
            'Sure:\n```json\n{"command": "kubectl apply -f -", "stdin": "a: 1"}\n```',
            "kubectl apply -f -",
            "a: 1",
        ),
        (
            "Let me look.\n```bash\n$ kubectl get pods\nkubectl get svc\n```",
            "$ kubectl get pods",
            "",
        ),
        (
            "kubectl apply -f - <<EOF\nkind: X\nEOF\nthanks",
            "kubectl apply -f - <<EOF\nkind: X\nEOF",
            "",
        ),
    ],
)
def test_reply_formats(reply, command, stdin):
    parsed = parse_reply(reply)
    assert (parsed.command, parsed.stdin) == (command, stdin)


@pytest.mark.parametrize(
    "reply", ["", "I would fix it.", '{"command": 3}', "```python\nprint(1)\n```"]
)
def test_replies_without_a_command(reply):
    with pytest.raises(ReplyError):
        parse_reply(reply)


# The fenced-block expression `_fences` replaced: the same blocks, found in quadratic time.
_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)(?:```|\Z)", re.S)


def test_fenced_blocks_are_found_as_the_expression_found_them():
    pieces = ["```", "\n", " ", "\t", "sh", "bash", "x", "kubectl get po", "`", "json", "-"]
    for seed in range(3000):
        rnd = random.Random(seed)
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 30)))
        expected = [(m.group("lang"), m.group("body")) for m in _FENCE.finditer(text)]
        assert list(_fences(text)) == expected, text


@pytest.mark.parametrize(
    "text",
    [
        "```x" * (MAX_REPLY_CHARS // 4),  # openers with no line end (73 s with the expression)
        "```sh\n" * (MAX_REPLY_CHARS // 6),
        "{" * MAX_REPLY_CHARS,
        '{"a": "' * (MAX_REPLY_CHARS // 7),
        '{"command": ' + "[" * (MAX_REPLY_CHARS - 20),
        "kubectl get \\\n" * (MAX_REPLY_CHARS // 14),
        "kubectl apply -f - <<EOF\n" + "x\n" * (MAX_REPLY_CHARS // 2 - 20),
        "```\n" + "a\n" * (MAX_REPLY_CHARS // 2 - 10) + "kubectl get po",
        "x" * (2 << 20),  # 2 MB: refused by its length
    ],
    ids=[
        "openers",
        "sh-fences",
        "braces",
        "strings",
        "brackets",
        "continued",
        "heredoc",
        "late",
        "2M",
    ],
)
def test_reading_the_largest_replies_takes_linear_work(text):
    """A guard against quadratic reading (the openers took 73 s), not a speed claim: CPU
    time of this thread, which a loaded machine does not inflate, with a wide margin."""
    started = time.thread_time()
    with contextlib.suppress(ReplyError):
        parse_reply(text)
    assert time.thread_time() - started < 5.0


def test_scoring_from_evidence(generator):
    query = next(generator.generate(2, 0, 1))
    wrong = query.ground_truth["mismatches"]
    n = len(query.ground_truth["expected"])

    def step(after, status=StepStatus.OK):
        return StepResult("kubectl x", status, "", {"mismatches_after": after, "probed": n})

    fixed = score(query, [step(wrong[1:]), step([])])
    assert (fixed.outcome, fixed.correct, fixed.safe, fixed.step_safe) == (
        Outcome.CORRECT,
        True,
        True,
        [True, True],
    )
    broke = score(query, [step([*wrong, "zz>new:1"]), step([])])
    assert broke.correct and not broke.safe and broke.step_safe == [False, True]
    idle = score(query, [step(wrong, StepStatus.PARSE_ERROR)])
    assert (idle.outcome, idle.correct, idle.safe) == (Outcome.PARSE_ERROR, False, True)
    assert json.loads(json.dumps(broke.detail))["unsafe_steps"][0]["pairs"] == ["zz>new:1"]
    assert copy.deepcopy(query.ground_truth)["mismatches"] == wrong


def test_app_protocol_reply_format_and_few_shot():
    from generators.k8s.app import K8sApp
    from pipeline.core import App

    app = K8sApp(K8sConfig())
    assert isinstance(app, App) and app.name == "k8s"
    assert app.reply_format.check(app.reply_format.example) is None
    assert app.reply_format.check("no command here") is not None
    for _, reply in app.few_shot:
        assert app.reply_format.check(reply) is None
    query = next(app.generate(1, 0, 1))
    oracle = app.oracle_reply(query, 1, query.prompt)
    assert parse_reply(oracle).command == query.ground_truth["oracle"][0]
