"""The shipped Claude and Gemini model configs through the whole pipeline (`run_cell`):
the real `anthropic` and `google-genai` SDKs talk to endpoints of our own that speak each
API (tests/native_endpoints.py) while the real MALT app plays level-1 queries in text,
JSON and tool-call decoding. Rows carry the tokens, cached tokens and money cost; the
API key reaches the server and no file; the response cache replays a cell without a
request; an overloaded server and a refused key stop a cell with what it played kept."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from pipeline.checkpoint import CellFailed
from pipeline.config import compose
from pipeline.pricing import price_table
from pipeline.run import run_cell
from pipeline.serving.client import ToolCall
from pipeline.serving.native.errors import KeyRejected
from pipeline.views import connect
from tests.native_endpoints import COMPLETION_TOKENS, Fault, error_body, native_endpoint, user_texts

pytestmark = pytest.mark.integration

CONFIGS = {"anthropic": "claude_sonnet", "gemini": "gemini_flash"}
VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
KEY = "sk-live-" + "k" * 24
CODE = "def process_graph(graph):\n    return graph.number_of_nodes()\n"
CACHED = 3


def malt_answer(body: dict) -> str | ToolCall:
    """The same function in the form the request asks for: a tool call when tools are
    offered, a JSON object under a JSON schema, a fenced block otherwise."""
    config = body.get("config") or body.get("generationConfig") or {}
    if body.get("tools") or config.get("tools"):
        return ToolCall("submit_code", json.dumps({"code": CODE}))
    if body.get("output_config") or config.get("responseMimeType"):
        return json.dumps({"code": CODE})
    return f"```python\n{CODE}```"


def cell(provider: str, url: str, data: Path, *overrides: str):
    return compose([
        *overrides, "app=malt", "level=1", "queries=2", "agent=zero_shot",
        f"model={CONFIGS[provider]}", f"model.base_url={url}", f"data_dir={data}",
    ])  # fmt: skip


def every_file_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("provider", sorted(CONFIGS))
def test_a_native_model_plays_text_json_and_tool_cells(tmp_path, monkeypatch, caplog, provider):
    caplog.set_level(logging.DEBUG)  # what the SDKs and httpx log at any level, even where
    for name in ("httpx", "httpcore", "anthropic", "google_genai"):  # an entry point run
        caplog.set_level(logging.DEBUG, logger=name)  # earlier in this process quieted it
    monkeypatch.setenv(VARIABLES[provider], KEY)
    data = tmp_path / "data"
    decodings = ("text", "json", "tools")
    with native_endpoint(provider, malt_answer, cached_tokens=CACHED) as (url, seen):
        for decoding in decodings:
            run_cell(cell(provider, url, data, f"agent.decoding={decoding}"))
    con = connect(data)
    episodes = con.execute("SELECT outcome, model FROM episodes").fetchall()
    assert len(episodes) == 6 and {m for _, m in episodes} == {CONFIGS[provider]}
    assert {o for o, _ in episodes} <= {"correct", "wrong"}, episodes  # each reply was read
    calls = con.execute(
        "SELECT prompt_tokens, completion_tokens, cached_tokens, cost_usd, finish_reason, "
        "response FROM calls"
    ).fetchall()
    assert len(calls) == len(seen) >= 6  # every request is a recorded call
    price = price_table()[CONFIGS[provider]]
    for prompt, completion, cached, cost, finish, response in calls:
        assert (completion, cached) == (COMPLETION_TOKENS, CACHED) and prompt > CACHED
        assert cost == pytest.approx(price.cost(prompt, completion, cached))
        assert finish in ("stop", "tool_calls") and "process_graph" in response
    assert {c[4] for c in calls} == {"stop", "tool_calls"}
    # The system prompt went where each API takes it, never as a turn.
    for request in seen:
        body = request["body"]
        assert "system" in body or "systemInstruction" in body
        turns = body.get("messages") or body.get("contents")
        assert {t["role"] for t in turns} <= {"user", "assistant", "model"}
        assert any(KEY in value for value in request["headers"].values())
    assert KEY.encode() not in every_file_bytes(data)
    assert KEY not in caplog.text
    logged = {r.name.split(".")[0] for r in caplog.records}  # the SDKs' own debug lines too
    assert {"httpx", "httpcore"} <= logged and ("anthropic" in logged) == (provider == "anthropic")


@pytest.mark.parametrize("provider", ["gemini"])  # the cache is one for all providers
def test_the_response_cache_replays_a_native_cell_without_a_request(
    tmp_path, monkeypatch, provider
):
    monkeypatch.setenv(VARIABLES[provider], KEY)
    monkeypatch.setenv("NETGAUGE_CACHE_DIR", str(tmp_path / "cache"))
    with native_endpoint(provider, malt_answer) as (url, seen):
        run_cell(cell(provider, url, tmp_path / "first", "model.cache=true"))
        asked = len(seen)
        run_cell(cell(provider, url, tmp_path / "again", "model.cache=true"))
    assert asked >= 2 and len(seen) == asked  # the second cell asked nothing
    entries = list((tmp_path / "cache" / "responses").rglob("*.json"))
    assert len(entries) == asked and KEY.encode() not in every_file_bytes(tmp_path / "cache")
    rows = connect(tmp_path / "again").execute("SELECT DISTINCT cache FROM calls").fetchall()
    assert rows == [("hit",)]


def test_an_overload_and_a_refused_key_stop_the_cell_and_keep_what_was_played(
    tmp_path, monkeypatch
):
    """One query at a time: the second query's requests fail (529 on every retry, then a
    refused key); the first query's episode is kept each time and never asked again."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    tasks: dict[str, int] = {}
    mode = {"second": "overloaded"}

    def answer(body: dict) -> str | ToolCall | Fault:
        index = tasks.setdefault(user_texts(body)[0], len(tasks))
        if index == 1 and mode["second"] == "overloaded":
            return Fault(529, error_body("anthropic", 529, "Overloaded"))
        if index == 1 and mode["second"] == "refused":
            return Fault(401, error_body("anthropic", 401, "invalid x-api-key"))
        return malt_answer(body)

    settings = ("model.max_in_flight=1", "run.concurrency=1")
    with native_endpoint("anthropic", answer) as (url, seen):
        with pytest.raises(CellFailed, match=r"HTTP 529.*overloaded after 3 attempts"):
            run_cell(cell("anthropic", url, tmp_path, *settings))
        first = [r for r in seen if tasks[user_texts(r["body"])[0]] == 0]
        mode["second"] = "refused"
        with pytest.raises(KeyRejected, match=r"\$ANTHROPIC_API_KEY"):
            run_cell(cell("anthropic", url, tmp_path, *settings))
        mode["second"] = "fine"
        run_cell(cell("anthropic", url, tmp_path, *settings))
    again = [r for r in seen if tasks[user_texts(r["body"])[0]] == 0]
    assert len(again) == len(first) >= 1  # the kept episode was not played again
    outcomes = connect(tmp_path).execute("SELECT outcome FROM episodes").fetchall()
    assert len(outcomes) == 2 and {o for (o,) in outcomes} <= {"correct", "wrong"}
