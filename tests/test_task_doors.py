"""A localize episode through the MCP door: the official SDK's client sees submit_answer
beside the app's action, looks, answers, and the runner records the answer the scorer
judges (tests/plugins/toynet: no lab). In-process, about a second."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from mcp import Client

from pipeline.answers import ANSWER_TOOL
from pipeline.cells import Cell
from pipeline.core import StepResult, StepStatus
from pipeline.mcp.agent import MCPAgent
from pipeline.mcp.config import MCPAgentConfig
from pipeline.runner import play
from pipeline.scoring import judge
from tests.test_tasks_grid import PLUGINS


@pytest.fixture
def toynet(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    from toynet.app import ToynetApp, ToynetConfig

    return ToynetApp(ToynetConfig(task="localize"), None, None)


def test_an_mcp_agent_answers_with_submit_answer(toynet) -> None:
    query = next(toynet.generate(2, 0, 1))
    causes = query.ground_truth["causes"]
    seen: dict[str, object] = {}

    async def person(url: str) -> None:
        async with Client(url) as client:
            seen["tools"] = {t.name for t in (await client.list_tools()).tools}
            task = (await client.call_tool("read_task", {})).structured_content
            seen["answer_tool"] = task["answer"]
            device = causes[0]["device"]
            shown = await client.call_tool("run_command", {"device": device, "command": "show"})
            seen["shown"] = shown.structured_content["observation"]
            wrong = {"healthy": False, "causes": [{**causes[0], "kind": "ospf.area"}]}
            refused = await client.call_tool(ANSWER_TOOL, wrong)  # not a kind of the list
            seen["refused"] = refused.structured_content["observation"]
            answer = {"healthy": False, "causes": causes}
            seen["result"] = (await client.call_tool(ANSWER_TOOL, answer)).structured_content

    def announce(url: str) -> None:
        threading.Thread(target=lambda: asyncio.run(person(url)), daemon=True).start()

    agent = MCPAgent(MCPAgentConfig(name="person", turn_timeout_s=20), toynet, announce=announce)
    cell = Cell("toynet", "none", "person", 2, 0, 1)
    with toynet.environment() as env:
        rows = play(env, agent, query, cell, toynet)
    for _ in range(100):  # the client reads its last result after the episode ended
        if "result" in seen:
            break
        time.sleep(0.05)
    assert {"run_command", ANSWER_TOOL, "peek", "read_task", "stop"} <= seen["tools"]
    assert seen["answer_tool"] == ANSWER_TOOL
    assert "routes:" in seen["shown"]
    assert "unknown kind 'ospf.area'; the kinds are: link.down, addr.wrong" in seen["refused"]
    assert seen["result"]["over"]
    statuses = [StepStatus(r["status"]) for r in rows]
    assert statuses == [StepStatus.OK, StepStatus.PARSE_ERROR, StepStatus.OK]
    assert json.loads(rows[-1]["answer"])["causes"] == sorted(
        causes, key=lambda c: (c["device"], c["component"], c["kind"])
    )
    assert rows[0]["bytes_out"] > 0 and rows[0]["read_budget"] == 800
    steps = [
        StepResult(r["action"], StepStatus(r["status"]), r["output"], json.loads(r["evidence"]),
                   answer=json.loads(r["answer"]) if r["answer"] else None)
        for r in rows
    ]  # fmt: skip
    verdict = judge(toynet, query, steps)
    assert (verdict.correct, verdict.score, verdict.safe) == (True, 1.0, True)
