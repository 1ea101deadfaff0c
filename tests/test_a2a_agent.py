"""The A2A agent's pieces, fast: its first message, its config, and a late or failing agent
(an a2a-sdk server in-process) as typed steps."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue

from pipeline.a2a.agent import A2AAgent, first_message
from pipeline.a2a.config import A2AAgentConfig
from pipeline.cells import cell_from_config
from pipeline.errors import ConfigError
from pipeline.runner import play
from tests.a2a_agents import serving
from tests.conftest import echo_config
from tests.fakes import EchoApp, EchoConfig, EchoReplyFormat


def test_the_first_message_holds_the_task_and_the_reply_format():
    text = first_message("Say 7.", EchoReplyFormat(), instructions=True)
    assert text.startswith("Say 7.\n\nReply with a number alone.")
    assert text.endswith("Example of a reply:\n7")
    assert first_message("Say 7.", EchoReplyFormat(), instructions=False) == "Say 7."


def test_a_missing_url_or_header_variable_fails_before_any_episode(monkeypatch):
    app = EchoApp(EchoConfig(), Path("."), None)
    with pytest.raises(ConfigError, match=r"has no agent\.url: set the base URL"):
        A2AAgent(A2AAgentConfig(), app)
    monkeypatch.delenv("NG_TEST_TOKEN", raising=False)
    cfg = A2AAgentConfig(url="http://127.0.0.1:1", headers_env={"X-Key": "NG_TEST_TOKEN"})
    with pytest.raises(ConfigError, match="headers_env reads NG_TEST_TOKEN, not set"):
        A2AAgent(cfg, app)
    with pytest.raises(ConfigError, match="must start with http"):
        A2AAgentConfig(url="ftp://x").validate()


class _Slow(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await asyncio.sleep(3)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class _Broken(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise RuntimeError("the agent's own bug")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class _QuickThenSlow(AgentExecutor):
    """Answers the first message of a context at once (a wrong number), the others late."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.context_id in self.seen:
            await asyncio.sleep(8)
        self.seen.add(context.context_id)
        await event_queue.enqueue_event(new_text_message("1", context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


@pytest.mark.usefixtures("echo_app")
def test_the_episode_limit_holds_across_turns(tmp_path):
    """Every answer would come within agent.turn_timeout_s, but the episode's limit counts
    from its start: the second message's wait is cut at what is left of it."""
    app = EchoApp(EchoConfig(max_turns=5, retry_wrong=True), tmp_path, None)
    query = next(app.generate(1, 0, 1))  # "Say 0."
    cell = cell_from_config(echo_config(tmp_path, queries=1))
    with serving(_QuickThenSlow()) as url:
        agent = A2AAgent(A2AAgentConfig(url=url, turn_timeout_s=60, episode_timeout_s=4), app)
        started = time.monotonic()
        with app.environment() as env:
            rows = play(env, agent, query, cell)
        took = time.monotonic() - started
    assert [(r["status"], r["reply"]) for r in rows] == [("ok", "1"), ("agent_timeout", "")]
    assert rows[1]["error"] == "the episode's limit agent.episode_timeout_s=4 s passed"
    assert 3.5 < took < 30  # the episode's 4 s, not the turn's 60


@pytest.mark.usefixtures("echo_app")
def test_a_late_or_failing_agent_is_a_typed_step(tmp_path):
    app = EchoApp(EchoConfig(), tmp_path, None)
    query = next(app.generate(1, 0, 1))
    cell = cell_from_config(echo_config(tmp_path, queries=1))
    # the broken agent gets a turn limit no load reaches: its outcome must not be a race
    for executor, limit, status, reason in (
        (_Slow(), 0.5, "agent_timeout", "no answer within agent.turn_timeout_s=0.5 s"),
        (_Broken(), 60.0, "agent_error", "the agent's own bug"),
    ):
        with serving(executor) as url:
            agent = A2AAgent(A2AAgentConfig(url=url, turn_timeout_s=limit), app)
            with app.environment() as env:
                rows = play(env, agent, query, cell)
        assert [r["status"] for r in rows] == [status]
        assert reason in rows[0]["error"]
