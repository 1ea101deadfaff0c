"""Every crash the reply fuzzer found in an agent door, as a named test (pipeline/fuzz/).

Each hostile peer is one of our own loopback servers (pipeline/fuzz/peers.py) answering
the exact bytes the fuzzer sent; the door must end the turn typed: a reply, an
AgentFailure (agent_error), or an EnvironmentFailure for a broken model endpoint.
"""

from __future__ import annotations

import contextlib
import json

import pytest

from generators.lab.reply import Command, CommandReplyFormat, parse_reply
from pipeline.a2a.conversation import Conversation
from pipeline.errors import AgentFailure, EnvironmentFailure
from pipeline.fuzz.peers import serve, sse
from pipeline.serving.client import ChatClient

DEEP = "[" * 200_000 + "]" * 200_000


def _card(url: str, extra: str = "") -> bytes:
    card = {
        "name": "hostile", "description": "d", "version": "1", "capabilities": {},
        "supportedInterfaces": [
            {"url": f"{url}/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "defaultInputModes": ["text"], "defaultOutputModes": ["text"], "skills": [],
    }  # fmt: skip
    return (json.dumps(card)[:-1] + extra + "}").encode("utf-8", "surrogatepass")


def _a2a(result: str = "", card: str = "") -> str:
    """The turn's outcome with an A2A agent answering `result` (JSON text) after `card`:
    'reply: <text>' or the failure's type and message."""
    base: list[str] = []

    def answer(method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        if method == "GET":
            return 200, "application/json", _card(base[0], card)
        ident = json.dumps(json.loads(body)["id"])
        text = f'{{"jsonrpc": "2.0", "id": {ident}, "result": {result}}}'
        return 200, "application/json", text.encode("utf-8", "surrogatepass")

    with serve(answer) as url:
        base.append(url)
        talk = Conversation(url, {}, 10, 20)
        try:
            return f"reply: {talk.send('task').text}"
        except AgentFailure as err:
            return f"{type(err).__name__}: {err}"
        finally:
            talk.close()


MESSAGE = '{"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "42"}]}}'


def test_an_a2a_answer_nested_200000_deep_is_agent_error():
    assert _a2a(DEEP).startswith("AgentFailure: ") and "RecursionError" in _a2a(DEEP)
    usage = MESSAGE.replace('"parts"', f'"metadata": {{"usage": {DEEP}}}, "parts"')
    assert "RecursionError" in _a2a(usage)


def test_an_a2a_agent_card_nested_200000_deep_is_agent_error():
    got = _a2a(MESSAGE, card=f', "x": {DEEP}')
    assert got.startswith("AgentFailure: ") and "RecursionError" in got


def test_an_a2a_card_with_a_lone_surrogate_for_a_key_is_agent_error():
    """The card's bytes hold a key that is a lone surrogate (0xED 0xA0 0x80): protobuf's
    C parser raised SystemError on it."""
    got = _a2a(MESSAGE, card=', "\ud800": 1')
    assert got.startswith("AgentFailure: ") and "SystemError" in got, got


def test_an_a2a_result_of_the_wrong_json_type_is_agent_error():
    for result in ("18446744073709551616", '"text"', "[1, 2]", "null"):
        assert _a2a(result).startswith("AgentFailure: "), result


def test_an_a2a_task_state_no_state_has_is_read_not_raised():
    artifact = '{"artifactId": "a", "parts": [{"text": "42"}]}'
    task = '{"task": {"id": "t", "contextId": "c", "status": {"state": %s}, "artifacts": [%s]}}'
    task = task.replace("[%s]", f"[{artifact}]")
    assert _a2a(task % "-1") == "reply: 42"  # protobuf keeps the number; the call names it
    assert _a2a(task % "-1e309").startswith("AgentFailure: ")  # no integer at all


def _chat(body: bytes, status: int = 200) -> str:
    async def ask(url: str) -> str:
        async with ChatClient(f"{url}/v1", "m", connect_retries=0) as client:
            return (await client.chat([{"role": "user", "content": "hi"}])).text

    import asyncio

    with serve(lambda m, p, b: (status, "text/event-stream", body)) as url:
        try:
            return f"reply: {asyncio.run(ask(url))}"
        except EnvironmentFailure as err:
            return f"{type(err).__name__}: {err}"


USAGE = '{"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}'


def test_a_model_stream_line_nested_200000_deep_is_env_error():
    got = _chat(sse([DEEP, USAGE]))
    assert got.startswith("EnvironmentFailure: ") and "not a JSON object" in got


def test_a_model_error_body_nested_200000_deep_is_env_error():
    got = _chat(('{"error": ' + DEEP + "}").encode(), status=500)
    assert got.startswith("EnvironmentFailure: ") and "(HTTP 500) failed" in got


@pytest.mark.parametrize("number", ["1" * 4301, "-" + "9" * 5000])
def test_a_lab_reply_with_an_integer_past_4300_digits_is_read_not_raised(number):
    """The LLM agent's repair chain reads every reply with `check` (outside any step):
    a ValueError from json's integer limit failed the cell from there (fixed on wt/border:
    the reply's JSON is read with every number JSON allows)."""
    reply = '{"machine": "r0", "command": "ip -br addr", "n": ' + number + "}"
    assert parse_reply(reply) == Command("r0", "ip -br addr")
    assert CommandReplyFormat(Command("r0", "ip r")).check(reply) is None


@pytest.mark.parametrize("what", [{"a": {"a": 1}}, ["routes"], None, 7])
def test_show_with_a_what_that_is_no_string_says_what_it_needs(what):
    """An MCP or tool-calling agent's `show` arguments are decoded JSON: an object for
    `what` raised TypeError (unhashable) out of the diagnostic, failing the cell."""
    from generators.lab.diagnostics import diagnose

    shown = diagnose(None, "show", {"machine": "r0", "what": what})  # type: ignore[arg-type]
    assert shown.startswith('show needs "what", one of: addresses')


# -- what the fuzzer found in the lab apps' steps (one live routing lab for all) --------
LAB_REPLIES = {
    # the budget's parser of arp did not know --version, which the policy let through:
    # GetoptError out of the step (fixed on wt/bounds: one table for both)
    "arp --version": ('{"machine": "r0", "command": "arp -n --version"}', {"ok", "exec_error"}),
    # json's integer limit: ValueError out of the reply's parser (fixed on wt/border)
    "a 5,000-digit number": (
        '{"machine": "r0", "command": "ip -br addr", "n": -' + "9" * 5000 + "}",
        {"ok"},
    ),
    # a lone surrogate reached Popen: UnicodeEncodeError (refused on wt/border)
    "a surrogate in a comment": (
        '{"machine": "r0", "command": "iptables -A INPUT -m comment --comment '
        "'hello\ud800' -j ACCEPT\"}",
        {"blocked"},
    ),
    # the show diagnostic's what as an object: TypeError (fixed here; see above)
}


@pytest.mark.integration
def test_the_lab_replies_the_fuzzer_found_are_typed_steps():
    """Each played as the runner plays it (pipeline/play.py); none may be an env_error,
    which would fail the cell."""
    from generators.benches.fuzz import routing
    from pipeline.play import played
    from tests.conftest import require_emulator

    require_emulator("mininet")
    target = routing(levels=(1,))
    got = {}
    with target.app.environment() as env:
        for name, (reply, _) in LAB_REPLIES.items():
            with played(env, target.queries[0]) as loop:
                step = loop.step(reply)
                got[name] = (str(step.status), step.error)
    assert {n: s for n, (s, _) in got.items()} == {
        n: s if s in allowed else f"one of {sorted(allowed)}"
        for n, (s, _) in got.items()
        for allowed in [LAB_REPLIES[n][1]]
    }, got


def test_an_mcp_call_nested_200000_deep_is_refused_and_the_episode_goes_on():
    """Checked for issue 26 (no crash found): the MCP SDK refuses a request nested past
    its parser's depth as a JSON-RPC parse error; the next, sane action is played."""
    import threading

    import httpx

    from generators.lab.reply import ACTION
    from pipeline.fuzz.protocol_doors import HEADERS
    from pipeline.mcp.channel import Channel
    from pipeline.mcp.server import HttpServer, tool_server

    channel = Channel(ACTION, "the task", 3, 3)
    got: list[object] = []
    runner = threading.Thread(target=lambda: got.append(channel.exchange("", 10, "late")[0]))
    with HttpServer(tool_server(channel)) as server, httpx.Client(timeout=10) as http:
        runner.start()
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        answer = http.post(server.url, headers=HEADERS, json=init)
        headers = {**HEADERS, "mcp-session-id": answer.headers.get("mcp-session-id", "")}
        call = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
        deep = call + '"run_command", "arguments": {"machine": ' + DEEP + "}}}"
        refused = http.post(server.url, headers=headers, content=deep)
        assert refused.status_code == 400 and "-32700" in refused.text
        sane = call + '"run_command", "arguments": {"machine": "r0", "command": "ip r"}}}'
        with contextlib.suppress(httpx.ReadTimeout):  # its result waits for the next turn
            http.post(server.url, headers=headers, content=sane, timeout=2)
        runner.join(timeout=10)
        channel.finish("over", "the test ended")
    assert got == [{"machine": "r0", "command": "ip r"}]
