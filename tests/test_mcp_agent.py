"""The MCP agent's pieces, fast: the channel's turns and bounds, the config, the agent's
environment, and the episode's server played by the official SDK's client in-process."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from mcp import Client

from pipeline.core import StepStatus
from pipeline.errors import AgentFailure, AgentStopped, AgentTimeout, ConfigError
from pipeline.mcp.agent import MCPAgent
from pipeline.mcp.channel import Channel
from pipeline.mcp.config import MCPAgentConfig
from pipeline.mcp.process import environment
from pipeline.mcp.server import HttpServer, tool_server
from pipeline.runner import play
from tests.conftest import echo_config
from tests.fakes import EchoApp, EchoConfig, EchoReplyFormat

ACTION = EchoReplyFormat.action


@pytest.fixture
def loop():
    """An event loop on a thread of its own, as the MCP server's."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)


def _call(loop, channel, name, arguments=None, meta=None) -> Future:
    return asyncio.run_coroutine_threadsafe(channel.call(name, arguments, meta), loop)


def test_an_action_is_the_turn_and_the_next_observation_its_result(loop):
    channel = Channel(ACTION, "Say 7.", max_turns=3, max_bad_calls=1)
    task = _call(loop, channel, "read_task").result(5)
    assert task.data["task"] == "Say 7." and task.data["turns_left"] == 3
    first = _call(loop, channel, "say", {"number": 7}, {"netgauge/usage": {"prompt_tokens": 9}})
    arguments, calls = channel.exchange("Say 7.", 5, "late")
    assert arguments == {"number": 7}
    assert [(c["purpose"], c["request"]) for c in calls] == [
        ("tool", "read_task {}"),
        ("act", 'say {"number": 7}'),
    ]
    assert calls[1]["prompt_tokens"] == 9 and calls[0]["prompt_tokens"] is None
    with ThreadPoolExecutor(1) as runner:  # the runner answers, then waits for the next
        turn_two = runner.submit(channel.exchange, "you said 7", 5, "late")
        assert first.result(5).text == "you said 7" and not first.result(5).data["over"]
        second = _call(loop, channel, "say", {"number": 8})
        assert turn_two.result(5)[0] == {"number": 8}
    channel.finish("you said 8", "the task is done")
    last = second.result(5)
    assert last.data == {
        "observation": "you said 8",
        "turn": 2,
        "turns_left": 1,
        "over": True,
        "reason": "the task is done",
    }
    late = _call(loop, channel, "say", {"number": 9}).result(5)
    assert late.error and "over" in late.text


def test_stop_ends_the_episode(loop):
    channel = Channel(ACTION, "Say 7.", max_turns=3, max_bad_calls=1)
    assert not _call(loop, channel, "stop", {"reason": "done"}).result(5).error
    with pytest.raises(AgentStopped, match="the agent called stop: done") as err:
        channel.exchange("Say 7.", 5, "late")
    assert [c["request"] for c in err.value.calls] == ['stop {"reason": "done"}']


def test_bad_calls_are_answered_then_end_the_episode(loop):
    channel = Channel(ACTION, "Say 7.", max_turns=3, max_bad_calls=2)
    for _ in range(2):
        answer = _call(loop, channel, "format_disk").result(5)
        assert answer.error and "unknown tool 'format_disk'" in answer.text
    pending = _call(loop, channel, "say", {"number": 1})
    assert channel.exchange("Say 7.", 5, "late")[0] == {"number": 1}
    overlapping = _call(loop, channel, "say", {"number": 2}).result(5)
    assert overlapping.error and "one action at a time" in overlapping.text
    with pytest.raises(AgentFailure, match="3 bad tool calls, the last: one action at a time"):
        channel.exchange("you said 1", 5, "late")
    assert pending.result(5).text == "you said 1"


def test_silence_is_a_timeout_with_the_reason():
    channel = Channel(ACTION, "Say 7.", max_turns=3, max_bad_calls=1)
    with pytest.raises(AgentTimeout, match=r"no action within agent\.turn_timeout_s=0\.3 s"):
        channel.exchange("Say 7.", 0.3, "no action within agent.turn_timeout_s=0.3 s")


def test_a_program_that_ended_is_a_failure_but_its_last_action_counts(loop):
    channel = Channel(ACTION, "Say 7.", max_turns=3, max_bad_calls=1)
    gone = AgentFailure("the agent's program exited with code 3")
    with pytest.raises(AgentFailure, match="exited with code 3"):
        channel.exchange("Say 7.", 5, "late", lambda: gone)
    _call(loop, channel, "say", {"number": 7})  # sent, then the program exits
    for _ in range(100):  # until the server has taken the call
        if not channel._events.empty():
            break
        time.sleep(0.01)
    assert channel.exchange("Say 7.", 5, "late", lambda: gone)[0] == {"number": 7}


def test_a_missing_command_or_unset_secret_fails_before_any_episode(monkeypatch):
    app = EchoApp(EchoConfig(), Path("."), None)
    with pytest.raises(ConfigError, match=r"has no agent.command: set the argument list"):
        MCPAgent(MCPAgentConfig(), app)
    monkeypatch.delenv("NG_TEST_KEY", raising=False)
    cfg = MCPAgentConfig(command=["true"], pass_env=["NG_TEST_KEY"])
    with pytest.raises(ConfigError, match="pass_env names NG_TEST_KEY, not set"):
        MCPAgent(cfg, app)
    with pytest.raises(ConfigError, match=r"agent\.turn_timeout_s=0"):
        MCPAgentConfig(turn_timeout_s=0).validate()


def test_the_program_inherits_nothing_but_what_the_config_passes(tmp_path):
    source = {"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-secret", "MY_KEY": "k", "HOME": "/root"}
    env = environment(tmp_path, {"NETGAUGE_MCP_URL": "u"}, {"MODEL": "m"}, ["MY_KEY"], source)
    assert env == {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path / "tmp"),
        "MY_KEY": "k",
        "MODEL": "m",
        "NETGAUGE_MCP_URL": "u",
    }


def test_a_person_plays_an_episode_with_the_sdk_client(tmp_path, echo_app):
    """`python -m pipeline.mcp`'s path without a terminal: the URL is announced, the
    official client plays, the runner records the step and the client is told the end."""
    app = EchoApp(EchoConfig(), tmp_path, None)
    query = next(app.generate(1, 0, 2))  # "Say 0."
    seen: dict[str, object] = {}

    async def person(url: str) -> None:
        async with Client(url) as client:
            seen["task"] = (await client.call_tool("read_task", {})).structured_content["task"]
            result = await client.call_tool("say", {"number": 0})
            seen["result"] = result.structured_content

    def announce(url: str) -> None:
        threading.Thread(target=lambda: asyncio.run(person(url)), daemon=True).start()

    agent = MCPAgent(MCPAgentConfig(name="person", turn_timeout_s=20), app, announce=announce)
    with app.environment() as env:
        rows = play(env, agent, query, _cell(tmp_path))
    assert [(r["status"], r["reply"]) for r in rows] == [(StepStatus.OK, "0")]
    for _ in range(100):  # the client reads its last result after the episode ended
        if "result" in seen:
            break
        time.sleep(0.05)
    assert seen["task"] == "Say 0."
    assert seen["result"]["over"] and seen["result"]["reason"] == "the task is done"


@pytest.mark.usefixtures("echo_app")
def test_the_episode_limit_holds_across_turns(tmp_path):
    """Each action comes well within agent.turn_timeout_s, but the episode's limit counts
    from its start: after a quick wrong first turn, the second wait is cut at what is left
    of agent.episode_timeout_s, and the episode ends agent_timeout saying which limit."""
    app = EchoApp(EchoConfig(max_turns=5, retry_wrong=True), tmp_path, None)
    query = next(app.generate(1, 0, 1))  # "Say 0."
    released = threading.Event()

    async def person(url: str) -> None:
        async with Client(url) as client:
            await client.call_tool("say", {"number": 1})  # wrong: the episode goes on
            await asyncio.to_thread(released.wait, 60)  # then silence, until the test ends

    def announce(url: str) -> None:
        threading.Thread(target=lambda: asyncio.run(person(url)), daemon=True).start()

    cfg = MCPAgentConfig(name="person", turn_timeout_s=60, episode_timeout_s=4)
    agent = MCPAgent(cfg, app, announce=announce)
    started = time.monotonic()
    try:
        with app.environment() as env:
            rows = play(env, agent, query, _cell(tmp_path))
    finally:
        released.set()
    assert [(r["status"], r["reply"]) for r in rows] == [
        (StepStatus.OK, "1"),
        (StepStatus.AGENT_TIMEOUT, ""),
    ]
    assert rows[1]["error"] == "the episode's limit agent.episode_timeout_s=4 s passed"
    assert 3.5 < time.monotonic() - started < 30  # the episode's 4 s, not the turn's 60


def _cell(tmp_path):
    from pipeline.cells import cell_from_config

    return cell_from_config(echo_config(tmp_path, queries=1))


def test_a_client_of_the_older_protocol_plays_too():
    """The initialize handshake (MCP before 2026-07-28) reaches the same tools, and the
    client's name from it is recorded."""
    channel = Channel(ACTION, "Say 7.", max_turns=2, max_bad_calls=1)
    seen: dict[str, object] = {}

    async def client(url: str) -> None:
        async with Client(url, mode="legacy") as old:
            seen["result"] = (await old.call_tool("say", {"number": 7})).structured_content

    with HttpServer(tool_server(channel)) as server:
        thread = threading.Thread(target=lambda: asyncio.run(client(server.url)))
        thread.start()
        arguments, calls = channel.exchange("Say 7.", 10, "late")
        channel.finish("you said 7", "the task is done")
        thread.join(10)
    assert arguments == {"number": 7} and calls[0]["model"] == "mcp/0.1.0"
    assert seen["result"]["over"] and seen["result"]["observation"] == "you said 7"
