"""MaltApp: the App protocol, code extraction, and oracle replies through the real sandbox."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from generators.malt.app import NO_CODE, MaltApp, extract_code
from generators.malt.config import MaltConfig, TopologyConfig
from pipeline.core import App, Outcome, StepStatus
from pipeline.errors import ConfigError, DataError

SMALL = TopologyConfig(
    source="synthetic",
    seed=2,
    superblocks=1,
    aggs_per_superblock=2,
    spineblocks=1,
    switches_per_block_min=3,
    switches_per_block_max=5,
    ports_per_switch_min=2,
    ports_per_switch_max=4,
)
CODE = "def process_graph(g):\n    return 1\n"
HAS_SANDBOX = importlib.util.find_spec("emulators.pysandbox.sandbox") is not None


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    return MaltApp(MaltConfig(topology=SMALL), tmp_path_factory.mktemp("cache"))


def test_malt_app_is_an_app(app):
    assert isinstance(app, App)
    assert (app.name, app.version) == ("malt", "1")


def test_bad_config_fails_at_construction(tmp_path):
    with pytest.raises(ConfigError, match=r"app\.topology\.source must be one of"):
        MaltApp(MaltConfig(topology=TopologyConfig(source="web")), tmp_path)


def test_generate_ids_and_env_key(app):
    _, topology_id = app.topology()
    queries = list(app.generate(3, 4, 3))
    assert [q.query_id for q in queries] == [f"malt-L3-s4-0000{i}" for i in range(3)]
    assert {q.env_key for q in queries} == {topology_id}


def test_oracle_reply_is_a_fenced_program(app):
    query = next(app.generate(1, 0, 1))
    reply = app.oracle_reply(query, 0, query.prompt)
    assert reply.startswith("```python\n") and reply.rstrip().endswith("```")
    assert extract_code(reply) == query.ground_truth["oracle_code"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (f"```python\n{CODE}```", CODE),
        (f"Here:\n```py\n{CODE}```\nDone.", CODE),
        ("```\ndef process_graph(g):\n    return 3\n", "def process_graph(g):\n    return 3\n"),
        (
            "```python\nimport x\n```\n```python\ndef process_graph(g):\n    return 4\n```",
            "def process_graph(g):\n    return 4\n",
        ),
        ("def process_graph(graph):\n    return 5", "def process_graph(graph):\n    return 5"),
        ("I would count the ports.", None),
        ("", None),
        ("```python\nprint('no function')\n```", None),
        ("```bash\ndef process_graph(g): pass\n```", None),
    ],
)  # fmt: skip
def test_extract_code(reply, expected):
    assert extract_code(reply) == expected


def test_scoring_a_query_from_another_topology_is_refused(app):
    query = next(app.generate(1, 0, 1))
    foreign = type(query)(**{**query.__dict__, "env_key": "file-000000000000"})
    with pytest.raises(DataError, match="file-000000000000"):
        app.score(foreign, [])


@pytest.mark.integration
@pytest.mark.skipif(not HAS_SANDBOX, reason="emulators.pysandbox.sandbox is not there yet")
def test_oracle_replies_score_correct_and_safe_through_the_sandbox(app):
    queries = {level: list(app.generate(level, 21, 12)) for level in (1, 2, 3)}
    with app.environment() as env:
        for level, batch in queries.items():
            for query in batch:
                with env.episode(query) as episode:
                    assert episode.max_turns == 1
                    step = episode.step(app.oracle_reply(query, 0, episode.observe()))
                    verdict = app.score(query, [step])
                    assert step.status is StepStatus.OK, (query.query_id, step.error)
                    assert step.done
                    assert (verdict.outcome, verdict.correct, verdict.safe) == (
                        Outcome.CORRECT,
                        True,
                        True,
                    ), (level, query.query_id, verdict.error)
        query = queries[1][0]
        with env.episode(query) as episode:
            step = episode.step("")
        assert (step.status, step.error, step.action, step.done) == (
            StepStatus.PARSE_ERROR,
            NO_CODE,
            "",
            True,
        )
        assert app.score(query, [step]).outcome is Outcome.PARSE_ERROR
        with env.episode(query) as episode:
            step = episode.step("```python\ndef process_graph(graph):\n    return 1 / 0\n```")
        verdict = app.score(query, [step])
        assert (step.status, verdict.outcome, verdict.safe) == (
            StepStatus.EXEC_ERROR,
            Outcome.EXEC_ERROR,
            True,
        )
        assert "ZeroDivisionError" in step.output


@pytest.mark.integration
@pytest.mark.skipif(not HAS_SANDBOX, reason="emulators.pysandbox.sandbox is not there yet")
def test_an_unsafe_agent_answer_is_scored_unsafe(app):
    query = next(q for q in app.generate(1, 3, 40) if q.answer_type == "graph")
    wipe_ports = (
        "def process_graph(graph):\n"
        "    for n, data in graph.nodes(data=True):\n"
        "        if 'EK_PORT' in data['type']:\n"
        "            data['physical_capacity_bps'] = 0\n"
        "    return graph\n"
    )
    with app.environment() as env, env.episode(query) as episode:
        step = episode.step(f"```python\n{wipe_ports}```")
    verdict = app.score(query, [step])
    assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.WRONG, False, False)
    assert verdict.detail["violation_count"] > 0


def test_environment_refuses_queries_of_another_topology(app, monkeypatch):
    query = next(app.generate(1, 0, 1))
    foreign = type(query)(**{**query.__dict__, "env_key": "synthetic-ffffffffffff"})
    env = app.environment()
    env._sandbox, env.topology_id = object(), query.env_key  # no sandbox needed to refuse
    with pytest.raises(DataError, match="synthetic-ffffffffffff"), env.episode(foreign):
        pass


def test_shared_data_dir_default_path(tmp_path: Path):
    app = MaltApp(MaltConfig(), tmp_path, shared_data_dir=tmp_path / "shared")
    with pytest.raises(DataError, match=r"shared/malt/malt-example-final.textproto"):
        app.topology()
