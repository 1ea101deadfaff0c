"""An agent that cannot reply is a typed step, never a failed stage (runner.play)."""

from __future__ import annotations

import contextlib
import json

import pytest
from omegaconf import OmegaConf

from pipeline import registry
from pipeline.agents import EpisodeEnd, Reply
from pipeline.build import layout
from pipeline.cells import cell_from_config
from pipeline.config import AgentConfig
from pipeline.core import Outcome, StepResult, StepStatus
from pipeline.errors import AgentFailure, AgentStopped, AgentTimeout, ContextOverflow
from pipeline.generate import generate
from pipeline.records import read_shard
from pipeline.runner import play, run
from pipeline.scoring import score
from tests.conftest import echo_config
from tests.fakes import EchoApp, EchoConfig


class _Endless:
    """An episode that never ends by itself: three turns, every reply accepted."""

    max_turns = 3

    def observe(self) -> str:
        return "the task"

    def step(self, reply: str) -> StepResult:
        return StepResult(reply, StepStatus.OK, f"saw {reply}")


class _Env:
    @contextlib.contextmanager
    def episode(self, query):
        yield _Endless()


class _Scripted:
    """Replies from a script (an exception in it is raised), each with one call, and
    keeps the EpisodeEnd the runner filled in."""

    name = "scripted"

    def __init__(self, *script: str | Exception) -> None:
        self.script = script
        self.ends: list[EpisodeEnd] = []

    @contextlib.contextmanager
    def episode(self, query, max_turns):
        end = EpisodeEnd()
        yield end
        self.ends.append(end)

    def reply(self, query, observation, history, turn):
        item = self.script[turn - 1]
        if isinstance(item, Exception):
            raise item
        call = {"purpose": "act", "prompt_tokens": 5, "completion_tokens": None, "latency_s": 0}
        return Reply(item, prompt_tokens=5, calls=[call])


@pytest.fixture
def episode(tmp_path, echo_app):
    cfg = echo_config(tmp_path, queries=1)
    query = next(EchoApp(EchoConfig(), tmp_path, None).generate(1, 0, 1))
    return query, cell_from_config(cfg)


def test_a_failure_is_a_step_of_its_status_with_the_reason(episode):
    query, cell = episode
    for error, status in (
        (AgentFailure("the agent's program exited with code 3"), "agent_error"),
        (AgentTimeout("no action within agent.turn_timeout_s=1 s"), "agent_timeout"),
        (ContextOverflow("the task alone needs 9000 tokens"), "context_overflow"),
    ):
        agent = _Scripted("1", error)
        rows = play(_Env(), agent, query, cell)
        assert [r["status"] for r in rows] == ["ok", status]
        assert rows[1]["error"] == str(error) and rows[1]["action"] == ""
        assert agent.ends[0].reason == f"{status}: {error}"
        assert agent.ends[0].observation == "saw 1"


def test_the_failure_keeps_its_calls_and_their_tokens(episode):
    query, cell = episode
    calls = [{"purpose": "tool", "prompt_tokens": 7, "completion_tokens": 2, "latency_s": 1.0}]
    rows = play(_Env(), _Scripted(AgentTimeout("late", calls=calls)), query, cell)
    assert json.loads(rows[0]["calls"]) == calls
    assert (rows[0]["prompt_tokens"], rows[0]["completion_tokens"]) == (7, 2)


def test_a_stop_after_acting_adds_no_step(episode):
    query, cell = episode
    stop = {"purpose": "tool", "prompt_tokens": None, "completion_tokens": None, "latency_s": 0}
    agent = _Scripted("1", AgentStopped("the agent called stop", calls=[stop]))
    rows = play(_Env(), agent, query, cell)
    assert len(rows) == 1 and rows[0]["status"] == "ok"
    assert [c["purpose"] for c in json.loads(rows[0]["calls"])] == ["act", "tool"]
    assert agent.ends[0].reason == "you stopped: the agent called stop"


def test_a_stop_before_any_action_is_an_agent_error(episode):
    query, cell = episode
    rows = play(_Env(), _Scripted(AgentStopped("the agent's program exited (code 0)")), query, cell)
    assert [r["status"] for r in rows] == ["agent_error"]
    assert rows[0]["error"] == "stopped before any action: the agent's program exited (code 0)"


def test_the_agent_is_told_why_the_episode_ended(episode):
    query, cell = episode
    agent = _Scripted("1", "2", "3")
    assert len(play(_Env(), agent, query, cell)) == 3
    assert agent.ends[0] == EpisodeEnd("saw 3", "the turn budget (3) is used up")


class _Failing:
    def __init__(self, cfg, app) -> None:
        self.name = cfg.name

    def reply(self, query, observation, history, turn):
        raise AgentFailure(f"cannot reach the agent for {query.query_id}")


@pytest.mark.usefixtures("echo_app")
def test_agent_errors_go_through_the_stages_as_outcomes(tmp_path):
    spec = registry.AgentSpec(
        "failing", "tests.test_agent_outcomes:_Failing", "pipeline.config:AgentConfig"
    )
    cfg = echo_config(tmp_path, queries=2)
    cfg.agent = OmegaConf.structured(AgentConfig(name="failing", kind="failing"))
    with registry.AGENTS.override("failing", spec):
        generate(cfg)
        run(cfg)
        score(cfg)
        cell = cell_from_config(cfg)
    episodes = read_shard("episodes", layout(cfg).episodes(cell)).to_pylist()
    assert [e["outcome"] for e in episodes] == [Outcome.AGENT_ERROR] * 2
    assert episodes[0]["error"] == "cannot reach the agent for echo-L1-s0-00000"
    assert not any(e["correct"] for e in episodes)
