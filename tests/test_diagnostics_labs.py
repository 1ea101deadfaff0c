"""Diagnostics on real labs (Mininet): a ReAct agent with native tools (`agent=react_tools`,
its model played by a chat endpoint of our own) looks with `show` before each of the
oracle's actions on routing and netllmbench, through the run and score stages. Its
verdicts are the oracle's query by query (a look changes nothing and uses no turn), and
each look is a `diagnostic` row of `calls` holding what the machine showed."""

from __future__ import annotations

import json

import pytest

from pipeline.build import layout, make_app
from pipeline.cells import cell_from_config
from pipeline.config import compose
from pipeline.generate import read_queries
from pipeline.serving.client import ToolCall
from tests.chat_endpoint import chat_endpoint
from tests.conftest import require_emulator
from tests.test_protocol_agents import _played, _verdicts

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("app", ["routing", "netllmbench"])
def test_react_with_tools_looks_before_each_action_and_changes_nothing(tmp_path, app):
    require_emulator("mininet")
    cell = [f"app={app}", "level=1", "queries=2", f"data_dir={tmp_path}"]
    oracle = compose([*cell, "agent=oracle"])
    expected, _ = _played(oracle)
    assert all(e["correct"] and e["safe"] for e in expected.values())
    built = make_app(oracle)
    queries = read_queries(layout(oracle).queries(cell_from_config(oracle)), limit=2)
    turns = range(1, oracle.app.get("max_turns", 10) + 1)
    actions = {q.prompt: [json.loads(built.oracle_reply(q, t, "")) for t in turns] for q in queries}

    def model(body: dict) -> ToolCall:
        messages = body["messages"]
        assert {t["function"]["name"] for t in body["tools"]} == {"run_command", "show"}
        mine = actions[max((p for p in actions if p in messages[1]["content"]), key=len)]
        acted = [m for m in messages if m["role"] == "assistant" and m["content"][:1] != "["]
        now = mine[len(acted)]
        if not messages[-1]["content"].startswith("Observation (show): "):
            return ToolCall("show", json.dumps({"machine": now["machine"], "what": "links"}))
        return ToolCall("run_command", json.dumps(now))

    with chat_endpoint(model) as (url, _):
        react = compose(
            [
                *cell,
                "agent=react_tools",
                "model=smollm2",
                "model.endpoint=external",
                f"model.base_url={url}",
                "model.max_in_flight=1",
                "agent.context.max_tokens=1000000",  # every past turn stays in the request
            ]
        )
        got, calls = _played(react)
    assert _verdicts(got) == _verdicts(expected)
    for episode in got.values():
        assert episode["model_calls"] == 2 * episode["iterations"]  # the looks are not counted
    looks = [c for c in calls if c["purpose"] == "diagnostic"]
    assert len(looks) == sum(e["iterations"] for e in got.values())
    for look in looks:
        machine = json.loads(look["request"].split(" ", 1)[1])["machine"]
        assert look["response"].startswith(f"{machine}$ ip link show\n")
        assert " mtu " in look["response"] and look["prompt_tokens"] is None
