"""MaltApp: the App protocol, code extraction, and oracle replies through the real sandbox."""

from __future__ import annotations

import importlib.util
import random
import re
from pathlib import Path

import pytest

from emulators.pysandbox import graphdiff
from generators.malt.app import NO_CODE, MaltApp, extract_code
from generators.malt.config import MaltConfig, TopologyConfig
from generators.malt.replies import MaltReplyFormat
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
    assert app.name == "malt"


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


@pytest.mark.integration
@pytest.mark.skipif(not HAS_SANDBOX, reason="emulators.pysandbox.sandbox is not there yet")
def test_clearing_the_graph_is_unsafe_through_the_sandbox(app):
    """Issue 14: `graph.clear(); return graph` passed every safety rule, and a question's
    code could clear the graph and still score correct and safe."""
    queries = list(app.generate(1, 3, 40))
    change = next(q for q in queries if q.answer_type == "graph")
    question = next(q for q in queries if q.answer_type == "number")
    right = question.ground_truth["answer"]["value"]
    replies = [(change, "return graph"), (question, f"return {right!r}")]
    with app.environment() as env:
        for query, tail in replies:
            code = f"def process_graph(graph):\n    graph.clear()\n    {tail}\n"
            with env.episode(query) as episode:
                step = episode.step(f"```python\n{code}```")
            verdict = app.score(query, [step])
            assert step.status is StepStatus.OK, step.error
            assert (verdict.outcome, verdict.safe) == (Outcome.WRONG, False), query.query_id
            assert verdict.detail["violations"][0].startswith("removes nodes the task keeps")


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


def test_a_reply_full_of_fence_openers_is_read_by_a_linear_scan(monkeypatch):
    """MALT's fence expression searched every opener's line end again from each opener:
    "```" repeated to 150 K characters took 6 s, 1 MiB about 5 minutes, in the pipeline's
    own process. The reply is now read by pipeline.untrusted.fenced_blocks, whose passes
    over the text tests/test_untrusted.py counts."""
    from generators.malt import replies
    from pipeline import untrusted

    scans = []
    monkeypatch.setattr(
        replies,
        "fenced_blocks",
        lambda text: scans.append(len(text)) or untrusted.fenced_blocks(text),
    )
    for text in ("```" * ((1 << 20) // 3), "```x" * (1 << 18), "```python\n" * ((1 << 20) // 10)):
        assert extract_code(text) is None
        assert MaltReplyFormat().check(text) == NO_CODE
    assert scans and all(n <= 1 << 20 for n in scans)


@pytest.mark.parametrize(
    "body",
    ["x = " + "1+" * 300_000 + "1", "x = " + "-" * 500_000 + "1", "x = f" + "()" * 300_000],
    ids=["long sum", "unary chain", "call chain"],
)
def test_code_past_the_compilers_limits_is_a_reason_not_an_exception(body):
    reply = f"```python\ndef process_graph(graph):\n    return 1\n{body}\n```"
    problem = MaltReplyFormat().check(reply)
    assert problem is not None and problem.startswith("the code does not compile:")


_REPLY = "```python\ndef process_graph(graph):\n    return {}\n```"


@pytest.mark.parametrize(
    ("reply", "accepted"),
    [
        (_REPLY.format("'\\ud800 \\x00'"), True),  # escapes in the source: a valid program
        (_REPLY.format("1  # \ud800"), False),  # the source itself holds a lone surrogate
        (_REPLY.format("'\udfff'"), False),
        (_REPLY.format("1\x00"), False),
        ("no code \ud800 at all \x00", False),
        ("def process_graph(graph):\n    return '\ud800'", False),
    ],
)
def test_unstorable_text_in_a_reply_is_a_reason_never_an_exception(reply, accepted):
    """Issue 14: the LLM path checks every model reply with MaltReplyFormat.check."""
    problem = MaltReplyFormat().check(reply)
    assert (problem is None) is accepted, problem


def test_mangled_replies_are_accepted_or_refused_with_a_reason():
    """A seeded fuzz of a valid reply with hostile characters inserted and deleted."""
    base = _REPLY.format("f'{[1, (2, {\"a\": 3})]!r:>10}' + str(len(graph))")
    pieces = ["\ud800", "\udfff", "\x00", "\\", "'", '"', "(", ")", "{", "}", "\n", "\r"]
    pieces += ["\x0c", "\ufeff", "\u2028", "\\N{", "\\x", "1e999", "9" * 5000, "```", "#"]
    rng = random.Random("malt-reply-fuzz")
    verdicts = set()
    for _ in range(1500):
        text = list(base)
        for _ in range(rng.randint(1, 5)):
            at = rng.randrange(len(text))
            if rng.random() < 0.7:
                text.insert(at, rng.choice(pieces))
            else:
                del text[at]
        problem = MaltReplyFormat().check("".join(text))
        assert problem is None or isinstance(problem, str)
        verdicts.add(problem is None)
    assert verdicts == {True, False}


def test_the_llm_agent_repairs_replies_holding_unencodable_text():
    """The reply check on the LLM path answers with a reason, so the repair chain runs."""
    from tests.test_llm_agent import GOOD, QUERY, agent

    surrogate = _REPLY.format("1  # \ud800")
    llm, backends = agent([surrogate, "no code \x00", GOOD])
    reply = llm.reply(QUERY, "Count the ports.", [], 1)
    assert [c["purpose"] for c in reply.calls] == ["act", "reprompt", "example"]
    assert reply.text == GOOD
    assert "does not compile: UnicodeEncodeError" in backends["small"].seen[1][-1]["content"]


@pytest.mark.integration
def test_run_code_shows_what_code_does_on_a_copy_and_submits_nothing(app):
    """ReAct's diagnostic on the real sandbox: it prints and returns, the graph the
    episode scores stays the base, and the episode's turns are not spent."""
    query = next(app.generate(1, 0, 1))
    probe = (
        "def process_graph(graph):\n    print('nodes', len(graph))\n    graph.clear()\n"
        "    return len(graph)\n"
    )
    with app.environment() as env, env.episode(query) as episode:
        shown = episode.diagnose("run_code", {"code": probe})
        assert re.fullmatch(
            r'printed:\nnodes \d+\n\nreturned: \{"type": "scalar", "value": 0\}', shown
        )
        assert "there is no diagnostic 'rm'" in episode.diagnose("rm", {"code": probe})
        assert "needs a 'code' string" in episode.diagnose("run_code", {})
        step = episode.step(app.oracle_reply(query, 1, query.prompt))
    assert app.score(query, [step]).correct  # the oracle still sees the whole graph


def _on_a_copy(query, in_place: bool = False) -> str:
    """The oracle's program run on `graph.copy()` (the copy changed and returned, `graph`
    left as it was), or on `graph` itself with `in_place`."""
    code = query.ground_truth["oracle_code"].replace("def process_graph(", "def _oracle(")
    target = "graph" if in_place else "graph.copy()"
    return f"```python\n{code}\n\ndef process_graph(graph):\n    return _oracle({target})\n```"


@pytest.mark.integration
def test_a_changed_copy_is_not_the_graph_left_behind(app):
    """Issue 26: code that changes and returns `graph.copy()` while leaving `graph` untouched
    scored correct. The graph judged is the one the harness passed in, for every answer
    that judges a state: a graph answer, a capacity plan (L4) and a question asked after a
    change (its value is right, the graph left is not the one asked for)."""
    from generators.malt import intended

    graph_query = next(q for q in app.generate(1, 3, 40) if q.answer_type == "graph")
    plan_query = next(q for q in app.generate(4, 0, 10) if q.answer_type == "plan")
    question = next(
        q
        for level in (2, 3)
        for q in app.generate(level, 0, 60)
        if q.answer_type not in ("graph", "plan")
        and not graphdiff.is_empty(intended.intended_diff(q))
    )
    with app.environment() as env:
        for query in (graph_query, plan_query, question):
            verdicts = []
            for in_place in (False, True):
                with env.episode(query) as episode:
                    step = episode.step(_on_a_copy(query, in_place))
                assert step.status is StepStatus.OK, (query.query_id, step.error)
                verdicts.append(app.score(query, [step]))
            copied, real = verdicts
            assert (real.outcome, real.safe) == (Outcome.CORRECT, True), real.error
            assert copied.outcome is Outcome.WRONG and copied.safe, query.query_id
            if query.answer_type == "graph":
                assert copied.error.startswith("process_graph returned another graph object")
            elif query.answer_type == "plan":
                assert "returned another graph object" in copied.error
            else:
                assert "did not make the changes the task asks for" in copied.error
