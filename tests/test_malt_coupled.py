"""MALT levels 6-8 (coupled-constraint plans): every kept task defeats every greedy rule,
the oracle's program reaches the optimum through the real sandbox, any optimal plan is
accepted, greedy, limit-breaking and null plans are wrong, changes outside the task are
unsafe; levels 4 and 5 draw as they did before levels 6-8 existed."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from emulators.pysandbox import graphdiff
from emulators.pysandbox.sandbox import GraphSandbox
from generators.malt import coupledplan, plansolve
from generators.malt import schema as S
from generators.malt.app import MaltEpisode
from generators.malt.config import SIZES, TopologyConfig
from generators.malt.coupled import judge, optimum
from generators.malt.coupledgreedy import RULES
from generators.malt.coupledspec import CATALOGUE, task_of
from generators.malt.generator import MaltQueryGenerator
from generators.malt.index import View
from generators.malt.intended import ground_truth_evidence
from generators.malt.operations import TEMPLATES
from generators.malt.plancheck import base_of
from generators.malt.scoring import score
from generators.malt.topology import synthetic_topology
from pipeline.core import StepResult, StepStatus, canonical_json
from pipeline.errors import ConfigError
from pipeline.plan import load_plan

SMALL = TopologyConfig(source="synthetic", seed=5, **SIZES["small"])
COUNT = 20  # per level
NULLS = 4  # empty replies played through the sandbox per level
LEVELS = (6, 7, 8)
# Levels 4 and 5 of seeds 0 and 1 on SMALL, as main generated them before levels 6-8 (app
# version 5; version 4 gave 4d5381cd..., the same queries with "app_version": "4" in
# their ground truth; version 3 gave e340211b...).
DIGEST_4_5 = "b2575f67d5676f96412bfa05d17044a7abb148b131605ee43c42892fbe8bd05a"


def graph_step(diff: dict) -> StepResult:
    record = {"type": "graph", "graph_class": "DiGraph", "diff": diff}
    return StepResult("code", StepStatus.OK, "", evidence={"answer": record}, done=True)


@pytest.fixture(scope="module")
def gen() -> MaltQueryGenerator:
    return MaltQueryGenerator(synthetic_topology(SMALL), "synthetic-coupled")


@pytest.fixture(scope="module")
def queries(gen):
    return {level: list(gen.generate(level, 0, COUNT)) for level in LEVELS}


def verdict(gen, query, diff):
    v = score(query, [graph_step(diff)], gen.checker)
    return v.correct, v.safe


def plan_diff(gen, query, plan) -> dict:
    spec = query.ground_truth["spec"]
    view = View(gen.index)
    coupledplan.realize(spec, task_of(spec, view), plan, view)
    return view.diff()


# -- what is kept ----------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_every_kept_task_defeats_every_greedy_rule(gen, queries, level):
    # drain_min_cost (level 8) needs wider stages than SMALL has: test_malt_coupled_transport
    assert {q.operation for q in queries[level]} == set(gen.plans.templates[level])
    for query in queries[level]:
        task = task_of(query.ground_truth["spec"], base_of(gen.checker))
        best = optimum(task)[0]
        bounds = query.ground_truth["bounds"]
        assert bounds["optimum"] == list(best)
        assert set(bounds["greedy"]) == set(RULES[type(task)]), query.query_id
        for name, rule in RULES[type(task)].items():
            plan = rule(task)
            if plan is not None:
                errs, value = judge(task, plan)
                assert errs or value > best, (query.query_id, name)


@pytest.fixture(scope="module")
def box(gen):
    with GraphSandbox(gen.graph) as sandbox:
        yield sandbox


@pytest.mark.parametrize("level", LEVELS)
def test_oracle_through_the_sandbox_is_correct_and_safe_and_null_is_not(gen, queries, box, level):
    for i, query in enumerate(queries[level]):
        truth = StepResult("", StepStatus.OK, "", ground_truth_evidence(query), done=True)
        assert score(query, [truth], gen.checker).correct
        reply = f"```python\n{query.ground_truth['oracle_code']}```"
        step = MaltEpisode(query, box, 1).step(reply)
        assert step.status is StepStatus.OK, (query.query_id, step.error)
        got = score(query, [step], gen.checker)
        assert (got.correct, got.safe) == (True, True), (query.query_id, got)
        if i < NULLS:  # an empty reply: wrong and safe (every null-like answer: below)
            null = score(query, [MaltEpisode(query, box, 1).step("")], gen.checker)
            assert not null.correct and null.safe


@pytest.mark.parametrize("level", LEVELS)
def test_null_like_answers_are_wrong_and_safe(gen, queries, level):
    nulls = [
        {"type": "scalar", "value": None},
        {"type": "list", "value": []},
        {"type": "graph", "graph_class": "DiGraph", "diff": graphdiff.empty_diff()},
    ]
    for query in queries[level]:
        for record in nulls:
            step = StepResult("", StepStatus.OK, "", {"answer": record}, done=True)
            got = score(query, [step], gen.checker)
            assert not got.correct and got.safe, (query.query_id, record)


@pytest.mark.parametrize("level", LEVELS)
def test_another_optimal_plan_is_accepted(gen, queries, level):
    """The exact search trying equal choices the other way round: right, often different."""
    differ: Counter[str] = Counter()
    for query in queries[level]:
        view = View(gen.index)
        plansolve.solve(query.ground_truth["spec"], view, tie=lambda n: [-ord(c) for c in n])
        other = view.diff()
        assert verdict(gen, query, other) == (True, True), query.query_id
        differ[query.operation] += other != query.ground_truth["answer"]["diff"]
    assert set(differ) == set(gen.plans.templates[level]) and all(differ.values()), differ


@pytest.mark.parametrize("level", LEVELS)
def test_greedy_plans_are_wrong_but_safe(gen, queries, level):
    """Every greedy plan that can be made: those that keep the rules miss the optimum,
    the others break a rule; either way wrong, and inside the task's scope."""
    judged = Counter()
    for query in queries[level]:
        task = task_of(query.ground_truth["spec"], base_of(gen.checker))
        for rule in RULES[type(task)].values():
            plan = rule(task)
            if plan is None:
                continue
            judged[bool(judge(task, plan)[0])] += 1
            assert verdict(gen, query, plan_diff(gen, query, plan)) == (False, True), query.query_id
    assert judged[True] and judged[False], judged  # both ways of failing were judged


def outside(gen, query) -> dict:
    """The ground-truth plan plus one port of a switch the task does not touch raised."""
    diff = {k: list(v) for k, v in query.ground_truth["answer"]["diff"].items()}
    spec = query.ground_truth["spec"]
    blocks = [spec["block"]] if "block" in spec else spec["blocks"]
    far = next(
        b for b in gen.index.by_kind[S.EK_AGG_BLOCK] + gen.index.by_kind[S.EK_SPINEBLOCK]
        if b not in blocks
    )  # fmt: skip
    port = gen.index.members(gen.index.members(far, S.EK_PACKET_SWITCH)[0], S.EK_PORT)[0]
    attrs = dict(gen.index.attrs[port], physical_capacity_bps=800_000_000_000)
    diff["nodes_changed"] = sorted([*diff["nodes_changed"], [port, attrs]])
    return diff


@pytest.mark.parametrize("level", LEVELS)
def test_changes_outside_the_task_are_unsafe(gen, queries, level):
    for query in queries[level][:6]:
        assert verdict(gen, query, outside(gen, query)) == (False, False), query.query_id


def test_a_limit_broken_inside_the_scope_is_wrong_but_safe(gen, queries):
    """An upgrade one past the per-switch limit, and a port left out of a drain."""
    checked = Counter()
    for query in queries[6]:
        spec, diff = query.ground_truth["spec"], query.ground_truth["answer"]["diff"]
        wrong = {k: list(v) for k, v in diff.items()}
        if query.operation == "drain_power_binpack":
            kept = diff["nodes_added"][0][0]  # a moved port not moved after all
            wrong["nodes_added"] = [n for n in diff["nodes_added"] if n[0] != kept]
            wrong["edges_added"] = [e for e in diff["edges_added"] if e[1] != kept]
        else:
            task = task_of(spec, base_of(gen.checker))
            _, ports = max(task.blocks[0].switches, key=lambda sw: len(sw[1]))
            if len(ports) <= spec["per_switch"]:
                continue
            top = max(s for s, _ in spec["optics"])
            extra = [[p, dict(gen.index.attrs[p], physical_capacity_bps=top)] for p, _ in ports]
            wrong["nodes_changed"] = sorted(
                [n for n in diff["nodes_changed"] if n[0] not in dict(ports)] + extra
            )
        assert verdict(gen, query, wrong) == (False, True), query.query_id
        checked[query.operation] += 1
    assert len(checked) == 2, checked


# -- levels 4-5 untouched; knobs -----------------------------------------------------------


def test_levels_4_and_5_draw_byte_for_byte_as_before():
    graph = synthetic_topology(SMALL)
    digest = hashlib.sha256()
    for level in (4, 5):
        gen = MaltQueryGenerator(graph, "synthetic-test")
        for seed in (0, 1):
            for q in gen.generate(level, seed, 12):
                fields = [q.query_id, q.key, q.prompt, q.answer_type, q.operation]
                truth = {**q.ground_truth, "app_version": "5"}  # 6 changed levels 6-8 only
                digest.update(canonical_json([*fields, truth, q.env_key]).encode())
    assert digest.hexdigest() == DIGEST_4_5


@pytest.mark.parametrize("level", [7, 8])
def test_the_stratum_cap_keeps_each_block_under_a_tenth_of_levels_7_and_8(gen, level):
    """The issue's variety bound on a small topology (6 blocks: 12 strata at level 8, 21 at
    7): over 100 queries no operation x size x block holds more than 10 (uncapped, one
    held 11-16 % of 1,000 on `app.size=small`), and both operations are drawn about
    equally. Level 6 is not pinned: its drains defeat every greedy rule in a few blocks
    only (README)."""
    queries = list(gen.generate(level, 0, 100))
    top, count = Counter(q.stratum for q in queries).most_common(1)[0]
    assert count <= 10, (top, count)
    assert min(Counter(q.operation for q in queries).values()) >= 40


def test_the_catalogue_lists_every_level_6_to_8_operation_once():
    assert sorted((e.level, e.operation) for e in CATALOGUE) == sorted(
        (level, op) for level in LEVELS for op in TEMPLATES[level]
    )
    assert {e.family for e in CATALOGUE} == {"malt"} and len({e.id for e in CATALOGUE}) == 7


def test_operations_and_weights_select_the_new_templates(gen):
    graph = gen.graph
    only = MaltQueryGenerator(graph, "synthetic-coupled", operations=["upgrade"])
    assert only.labels(6) == ["upgrade_knapsack"]
    assert {q.operation for q in only.generate(6, 1, 4)} == {"upgrade_knapsack"}
    weights = {"expand_lexicographic": 0.0}
    aimed = Counter(q.operation for q in gen.generate(8, 2, 12, weights=weights))
    assert set(aimed) == {"drain_blast_radius"}, aimed


def test_a_grid_asking_levels_6_to_8_for_a_diagnosis_task_is_refused(tmp_path):
    # malt offers mitigate only (its README says why); `tasks` set on a grid whose file has
    # no such key (smoke), as `snakemake --config tasks=[...]` sets it. Refused before any
    # cell is made (a cell would measure each level's capacity: minutes for levels 6-8).
    axes = {"apps": ["malt"], "levels": [6, 7, 8], "tasks": ["mitigate", "localize"]}
    with pytest.raises(ConfigError, match=r"app malt does not offer task localize; it offers "
                       r"mitigate \(or leave the pair out: exclude"):  # fmt: skip
        load_plan("smoke", tmp_path, axes=axes)
