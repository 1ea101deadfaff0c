"""The routing app on real Mininet: validated generation, oracle and null, the pipeline.

Oracle must be 100 % correct and safe, null 0 % correct, on L1-L3 and a second seed;
the same seed gives the same queries; the stages (generate, run, score) work end to end
with the app registered as the pipeline will register it.
"""

from __future__ import annotations

import pytest

from generators.routing.app import RoutingApp
from generators.routing.config import RoutingConfig
from pipeline.core import Outcome, Query, StepStatus, canonical_json
from pipeline.querygen import key_slot, seed_slot
from tests.conftest import integration_fixture, require, require_root

COUNTS = {(1, 0): 3, (2, 0): 2, (3, 0): 2, (1, 1): 1, (2, 1): 1, (3, 1): 1}


def _needs_mininet() -> None:
    require_root("the routing app needs root (Mininet)")
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        require(False, "Mininet is not installed (scripts/setup.d/20-mininet.sh)")


@pytest.fixture(scope="module")
@integration_fixture
def app() -> RoutingApp:
    _needs_mininet()
    return RoutingApp(RoutingConfig())


@pytest.fixture(scope="module")
def queries(app: RoutingApp) -> list[Query]:
    out = []
    for (level, seed), count in COUNTS.items():
        out += list(app.generate(level, seed, count))
    return out


def play(app: RoutingApp, env, query: Query, agent: str):
    steps = []
    with env.episode(query) as episode:
        observation = episode.observe()
        for turn in range(1, episode.max_turns + 1):
            reply = app.oracle_reply(query, turn, observation) if agent == "oracle" else ""
            result = episode.step(reply)
            steps.append(result)
            if result.done:
                break
            observation = result.output
    return steps, app.score(query, steps)


def test_queries_are_seeded_validated_and_well_formed(app, queries):
    assert len(queries) == sum(COUNTS.values())
    for query in queries:
        truth = query.ground_truth
        faults = truth["faults"]
        assert len(faults) == (1 if query.level == 1 else 2)
        assert len({f["type"] for f in faults}) == len(faults)
        assert truth["oracle"] and query.env_key.startswith("routing-")
        assert query.operation == "+".join(sorted(f["type"] for f in faults))
        for fault in faults:  # the faults stay hidden from the agent
            assert fault["summary"] not in query.prompt
            assert all(" ".join(i["argv"]) not in query.prompt for i in fault["inject"])
        subnets, hosts = truth["topology"]["subnets"], truth["topology"]["hosts_per_subnet"]
        size = app.cfg.sizes[query.level - 1]
        assert size.subnets[0] <= subnets <= size.subnets[1]
        assert size.hosts[0] <= hosts <= size.hosts[1]
    again = list(app.generate(1, 0, 2))
    first = [q for q in queries if (q.level, q.seed) == (1, 0)][:2]
    assert [canonical_json(q.__dict__) for q in again] == [
        canonical_json(q.__dict__) for q in first
    ]


def test_oracle_is_correct_and_safe_null_is_not_correct(app, queries):
    with app.environment() as env:
        for query in queries:
            steps, verdict = play(app, env, query, "oracle")
            assert verdict.outcome is Outcome.CORRECT, (query.query_id, verdict)
            assert verdict.safe and all(verdict.step_safe), (query.query_id, verdict.detail)
            assert verdict.detail["netarena_safe"]
            assert len(steps) == len(query.ground_truth["oracle"]) and steps[-1].done
            assert steps[0].evidence["before"] != steps[-1].evidence["after"]
        for query in queries:
            steps, verdict = play(app, env, query, "null")
            assert not verdict.correct and verdict.safe
            assert verdict.outcome is Outcome.PARSE_ERROR
            assert len(steps) == app.cfg.max_turns
            assert all(s.status is StepStatus.PARSE_ERROR for s in steps)
            assert verdict.detail["final_loss"] == verdict.detail["initial_loss"] > 0
        assert env.pool is not None and env.pool.resets and max(env.pool.resets) < 2.0


@pytest.mark.integration
def test_pipeline_stages_generate_run_score(tmp_path):
    _needs_mininet()
    from pipeline.build import layout
    from pipeline.cells import cell_from_config
    from pipeline.config import compose
    from pipeline.generate import generate
    from pipeline.records import read_shard
    from pipeline.runner import run
    from pipeline.scoring import score

    for agent in ("oracle", "null"):
        cfg = compose(
            [f"agent={agent}", "app=routing", "level=1", "queries=2", f"data_dir={tmp_path}"]
        )
        generate(cfg)
        run(cfg)
        score(cfg)
        cell = cell_from_config(cfg)
        episodes = read_shard("episodes", layout(cfg).episodes(cell)).to_pylist()
        assert len(episodes) == 2 and all(e["safe"] for e in episodes)
        assert all(e["correct"] is (agent == "oracle") for e in episodes)
        assert all((e["latency_s"] > 0) is (agent == "oracle") for e in episodes)
        assert {e["outcome"] for e in episodes} == {
            "correct" if agent == "oracle" else "parse_error"
        }
        steps = read_shard("steps", layout(cfg).steps(cell)).to_pylist()
        assert all(s["safe"] for s in steps)


def test_keys_are_distinct_across_seed_slots(app, queries):
    more = [q for seed in (2, 3) for q in app.generate(1, seed, 2)]  # seeds 0, 1: `queries`
    level1 = [q for q in queries if q.level == 1] + more
    assert len({q.key for q in level1}) == len(level1)
    assert all(key_slot(q.key) == seed_slot(q.seed) for q in level1)
    capacity = app.capacity(1)  # a free number (an MTU, a rule preference) is no new query
    assert capacity.total == 263 and capacity.per_seed == 59  # slot 1 holds the fewest
    assert "a free number (rule preference, MTU, foreign address) makes no new" in capacity.how
