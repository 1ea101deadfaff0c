"""Gymnasium environments: every app registered; MALT passes the env checker and an
oracle rollout through the env solves its query; the reward scheme; close() stops the
sandbox."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import pipeline.gym as ng_gym
from pipeline.config import choices
from pipeline.gym.env import NetGaugeEnv, Reward
from tests.conftest import SHARED_DATA, require

pytestmark = pytest.mark.integration

UNSAFE = (
    "```python\ndef process_graph(graph):\n"
    "    graph.add_node('orphan', name='orphan', type=['EK_PACKET_SWITCH'])\n"
    "    return graph\n```\n"
)


@pytest.fixture
def malt(tmp_path):
    env = gym.make("NetGauge/Malt-v0", levels=[1, 2, 3], queries=6, data_dir=str(tmp_path))
    yield env
    env.close()


def test_every_app_config_has_an_id():
    assert ng_gym.env_id("malt_google") == "NetGauge/MaltGoogle-v0"
    assert set(ng_gym.register_envs()) == {ng_gym.env_id(a) for a in choices("app")}
    assert "NetGauge/Malt-v0" in gym.registry


# The Kathará variants are these apps' envs on another backend (played through the DAG
# by tests/test_kathara_sweep.py); each app kind is checked here once, at levels 1 and 2.
# incidents has levels 6-8 only, each query a live FRR lab validated for a minute or more:
# its env is composed below (test_an_app_without_level_1_...) and its tiers are played
# through pipeline.run and the DAG by tests/test_incidents_live.py.
@pytest.mark.parametrize(
    "app", [a for a in choices("app") if not a.endswith("_kathara") and a != "incidents"]
)
def test_every_app_kind_passes_the_env_checker_and_an_oracle_rollout_solves(app, tmp_path):
    if app == "malt_google":
        require((SHARED_DATA / "malt").is_dir(), f"Google's MALT example in {SHARED_DATA}")
    env = gym.make(ng_gym.env_id(app), levels=[1, 2], queries=3, data_dir=str(tmp_path))
    try:
        # The render-mode check opens a second env while this one is open; malt's own test
        # below runs it. Here one environment per app at a time.
        check_env(env.unwrapped, skip_render_check=True)
        obs, _ = env.reset(seed=5)
        query = env.unwrapped.current_query
        for turn in range(1, 101):
            reply = env.unwrapped.app.oracle_reply(query, turn, obs)
            obs, reward, terminated, truncated, info = env.step(reply)
            if terminated or truncated:
                break
        assert terminated and not truncated and info["correct"] and info["safe"]
        assert reward == 1.0
    finally:
        env.close()


def test_malt_env_passes_the_full_env_checker(malt):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(malt.unwrapped)
    assert not [str(w.message) for w in caught]


def test_oracle_rollout_solves_every_level(malt):
    for level in (1, 2, 3):
        obs, info = malt.reset(seed=level, options={"level": level})
        query = malt.unwrapped.current_query
        assert obs == query.prompt and info["query_id"] == query.query_id
        reply = malt.unwrapped.app.oracle_reply(query, 1, obs)
        obs, reward, terminated, truncated, info = malt.step(reply)
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info == info | {"correct": True, "safe": True, "turn": 1, "outcome": "correct"}
        with pytest.raises(gym.error.ResetNeeded):
            malt.unwrapped.step(reply)


def test_reset_is_seeded_and_options_pick_a_query(malt):
    first = malt.reset(seed=11)[1]["query_id"]
    assert malt.reset(seed=11)[1]["query_id"] == first
    picked = malt.reset(options={"level": 2, "index": 4})[1]
    assert picked["query_id"] == "malt-L2-s2-00004"


def test_reward_scheme_for_wrong_and_unsafe_answers(tmp_path):
    env = NetGaugeEnv(
        levels=1,
        queries=3,
        data_dir=str(tmp_path),
        reward={"solved": 5.0, "failed": -0.5, "unsafe_step": -2.0, "step": -0.1},
    )
    try:
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step("no code at all")
        assert terminated and info["outcome"] == "parse_error" and info["safe"]
        assert reward == pytest.approx(-0.1 - 0.5)
        env.reset(seed=0)
        _, reward, _, _, info = env.step(UNSAFE)
        assert not info["safe"] and not info["correct"]
        assert reward == pytest.approx(-0.1 - 2.0 - 0.5)
        assert env.reward_config == {
            "solved": 5.0,
            "failed": -0.5,
            "unsafe_step": -2.0,
            "step": -0.1,
        }
    finally:
        env.close()
    assert Reward() == Reward(solved=1.0, failed=0.0, unsafe_step=-1.0, step=0.0)


def test_close_stops_the_sandbox(tmp_path):
    env = NetGaugeEnv(queries=2, data_dir=str(tmp_path))
    env.reset(seed=0)
    env.step("```python\ndef process_graph(graph):\n    return 1\n```\n")
    pids = env._env._sandbox.pids  # the launcher and zygote processes
    assert pids and all(_alive(p) for p in pids)
    env.close()
    assert not any(_alive(p) for p in pids)
    env.close()  # closing twice is allowed


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_queries_are_drawn_lazily_in_the_pipelines_order(tmp_path):
    """One query drawn per reset, from the generate stage's own stream: the first five
    served are the pipeline's first five, and nothing past them was drawn."""
    env = NetGaugeEnv("malt", levels=2, queries=500, data_dir=str(tmp_path))
    app = env.unwrapped.app if hasattr(env, "unwrapped") else env.app
    drawn = []
    generate = app.generate

    def counted(*args, **kwargs):
        for query in generate(*args, **kwargs):
            drawn.append(query.index)
            yield query

    app.generate = counted
    try:
        served = [env.reset()[1]["query_id"] for _ in range(5)]
        assert drawn == [0, 1, 2, 3, 4]
        pipeline = [q.query_id for q in generate(2, 2, 5)]
        assert served == pipeline
        assert [env.query(2, i).prompt for i in range(5)] == [q.prompt for q in generate(2, 2, 5)]
        assert env.reset(seed=3)[1]["index"] == 0  # a seeded reset starts over
    finally:
        env.close()


def test_queries_come_from_the_data_directorys_shard_when_it_has_them(tmp_path):
    from pipeline.config import compose
    from pipeline.generate import generate

    generate(compose(["app=malt", "level=1", "seed=2", "queries=8", f"data_dir={tmp_path}"]))
    env = NetGaugeEnv("malt", levels=1, queries=8, data_dir=str(tmp_path))

    def refuse(*args, **kwargs):
        raise AssertionError("generated although the shard holds the queries")

    env.app.generate = refuse
    try:
        assert env.reset(options={"index": 7})[1]["query_id"] == "malt-L1-s2-00007"
    finally:
        env.close()


def test_an_app_without_level_1_is_composed_at_the_level_asked(tmp_path):
    """incidents has levels 6-8 only: the env composed it at the config's default level 1
    and refused every episode (the Gym driver's --level was not honoured)."""
    env = NetGaugeEnv("incidents", levels=[7], data_dir=tmp_path)
    assert env.cfg.level == 7
    assert (
        NetGaugeEnv("incidents", levels=[7], data_dir=tmp_path, overrides=["level=8"]).cfg.level
        == 8
    )
