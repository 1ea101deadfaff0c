"""The response cache (pipeline/serving/cache.py) at the one boundary where requests are
sent: the real ChatClient against a chat endpoint of our own that counts what it is asked.
Hits need no request; another seed, message or model setting is another entry; a broken
entry is a miss; concurrent writers never show a reader half an entry; a cell rerun into
a fresh data directory asks the model nothing and scores the same."""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import os
import re
import threading
from pathlib import Path

import pytest

from pipeline.config import compose
from pipeline.llm.models import ModelPool, cache_settings
from pipeline.pricing import price_table
from pipeline.run import run_cell
from pipeline.serving.cache import MAX_ENTRY_BYTES, ResponseCache
from pipeline.serving.client import HIT, MISS, ChatClient, ChatResult, Sampling, ToolCall
from pipeline.serving.config import VllmModelConfig
from pipeline.trials import trial_model
from pipeline.views import connect
from tests.chat_endpoint import chat_endpoint, malt_cell

MESSAGES = [{"role": "user", "content": "How many ports?"}]
SETTINGS = cache_settings(VllmModelConfig())


def ask(url: str, cache: ResponseCache | None, messages=MESSAGES, **options) -> ChatResult:
    async def once() -> ChatResult:
        sampling = options.pop("sampling", Sampling(temperature=0.7, seed=0))
        async with ChatClient(url, "m", cache=cache, sampling=sampling) as client:
            return await client.chat(messages, **options)

    return asyncio.run(once())


def counting():
    """An endpoint answer that numbers its replies: a replayed reply keeps its number."""
    count = iter(range(1_000_000))
    return lambda body: f"reply {next(count)}"


def test_a_hit_replays_the_reply_without_a_request(tmp_path):
    cache = ResponseCache(tmp_path, SETTINGS)
    with chat_endpoint(counting()) as (url, seen):
        first = ask(url, cache)
        again = ask(url, cache)
        assert len(seen) == 1
    assert (first.text, first.cache) == ("reply 0", MISS)
    assert again.cache == HIT
    # the reply and its measurements as first received: a rerun reproduces its rows
    assert dataclasses.replace(again, cache=MISS) == first


def test_no_cache_is_no_change(tmp_path):
    with chat_endpoint(counting()) as (url, seen):
        texts = [ask(url, None).text for _ in range(2)]
    assert texts == ["reply 0", "reply 1"] and len(seen) == 2
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "other",
    [
        {"sampling": Sampling(temperature=0.7, seed=1)},  # another sampling seed
        {"sampling": Sampling(temperature=0.7, seed=None)},  # the server's own seed
        {"sampling": Sampling(temperature=0.2, seed=0)},
        {"sampling": Sampling(temperature=0.7, seed=0, max_tokens=64)},
        {"messages": [{"role": "user", "content": "How many switches?"}]},
        {"response_format": {"type": "json_object"}},
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
    ],
)
def test_any_request_difference_is_another_entry(tmp_path, other):
    cache = ResponseCache(tmp_path, SETTINGS)
    with chat_endpoint(counting()) as (url, seen):
        ask(url, cache)
        changed = ask(url, cache, **other)
        assert len(seen) == 2
    assert (changed.text, changed.cache) == ("reply 1", MISS)


def test_only_result_settings_of_the_model_key_its_entries(tmp_path):
    body = {"model": "m", "messages": MESSAGES, "seed": 0}
    key = ResponseCache(tmp_path, SETTINGS).key(body)

    def settings(**changes) -> dict:
        return cache_settings(dataclasses.replace(VllmModelConfig(), **changes))

    # operational settings, and a cell's cost limit, cannot change a reply: the same entry
    same_entry = (
        {"max_in_flight": 1}, {"cache": True}, {"headers": {"X-Org": "a"}},
        {"pricing": "gpt-4o"}, {"cost_limit": 0.5},
    )  # fmt: skip
    for same in same_entry:
        assert ResponseCache(tmp_path, settings(**same)).key(body) == key
    for other in ({"weights": "Qwen/Qwen2.5-7B-Instruct"}, {"dtype": "float32"}):
        assert ResponseCache(tmp_path, settings(**other)).key(body) != key


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated mid-write by a crash
        lambda text: "",
        lambda text: "\x00\xff garbage",
        lambda text: text.replace('"format": 1', '"format": 99'),
        lambda text: text.replace('"prompt_tokens": ', '"prompt_tokens": -'),
        lambda text: text.replace('"completion_tokens": 7', '"completion_tokens": 7.5'),
        lambda text: text.replace('"text": "reply 0"', '"text": 7'),
        lambda text: text.replace('"tool_calls": []', '"tool_calls": [{"name": 1}]'),
        lambda text: "[1, 2]",
    ],
)
def test_a_broken_entry_is_a_miss_and_is_replaced(tmp_path, damage):
    cache = ResponseCache(tmp_path, SETTINGS)
    with chat_endpoint(counting()) as (url, seen):
        ask(url, cache)
        (entry,) = tmp_path.rglob("*.json")
        entry.write_bytes(damage(entry.read_text()).encode("utf-8", "surrogateescape"))
        redone = ask(url, cache)
        assert (redone.text, redone.cache, len(seen)) == ("reply 1", MISS, 2)
        assert ask(url, cache).text == "reply 1" and len(seen) == 2  # the new entry


def _plant(entry: Path, how: str) -> None:
    """What someone else sharing the cache folder could leave at an entry's path."""
    text = entry.read_text()
    entry.unlink()
    if how == "symlink":  # to a valid entry elsewhere: still not an entry of this folder
        elsewhere = entry.parent.parent.parent / "elsewhere.json"
        elsewhere.write_text(text)
        entry.symlink_to(elsewhere)
    elif how == "fifo":  # a plain read of a FIFO blocks until someone writes to it
        os.mkfifo(entry)
    elif how == "huge":  # sparse: larger than any entry, no disk used
        with open(entry, "wb") as handle:
            handle.truncate(MAX_ENTRY_BYTES + 1)
    elif how == "folder":
        entry.mkdir()
    else:  # JSON's non-finite numbers parse in Python
        entry.write_text(re.sub(r'"latency_s": [-+.e0-9]+', '"latency_s": Infinity', text))


@pytest.mark.parametrize("how", ["symlink", "fifo", "huge", "folder", "infinity"])
def test_what_a_cache_sharer_plants_is_a_miss_that_never_stalls(tmp_path, how):
    cache = ResponseCache(tmp_path / "cache", SETTINGS)
    with chat_endpoint(counting()) as (url, seen):
        ask(url, cache)
        (entry,) = (tmp_path / "cache").rglob("*.json")
        _plant(entry, how)
        done: list[ChatResult] = []  # a daemon thread: a stalled read fails, never hangs
        asking = threading.Thread(target=lambda: done.append(ask(url, cache)), daemon=True)
        asking.start()
        asking.join(60)
        assert done, f"a {how} at the entry's path stalled the request"
        (redone,) = done
        assert (redone.text, redone.cache, len(seen)) == ("reply 1", MISS, 2)
        if how != "folder":  # the reply replaced what was planted (a link, never its target)
            assert entry.is_file() and not entry.is_symlink()
            assert ask(url, cache).text == "reply 1" and len(seen) == 2
    if how == "symlink":
        assert "reply 0" in (tmp_path / "cache" / "elsewhere.json").read_text()


def test_an_entry_under_another_key_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path, SETTINGS)
    with chat_endpoint(counting()) as (url, seen):
        ask(url, cache)
        (entry,) = tmp_path.rglob("*.json")
        other = ask(url, cache, sampling=Sampling(temperature=0.7, seed=5))
        (moved,) = set(tmp_path.rglob("*.json")) - {entry}
        entry.write_bytes(moved.read_bytes())  # seed 5's reply filed as seed 0's
        assert ask(url, cache).cache == MISS and len(seen) == 3
    assert other.text == "reply 1"


@pytest.mark.parametrize("arguments", ['{"value": 3}', '{"value": "\ud800"}'])
def test_tool_calls_are_replayed(tmp_path, arguments):
    """Arguments as sent, a lone surrogate escape included (kept, as without a cache)."""
    cache = ResponseCache(tmp_path, SETTINGS)
    call = ToolCall("answer", arguments)
    with chat_endpoint(lambda body: call) as (url, seen):
        first, again = ask(url, cache), ask(url, cache)
        assert len(seen) == 1
    assert again.tool_calls == first.tool_calls == (call,) and again.cache == HIT


def test_a_cache_that_cannot_be_written_still_answers(tmp_path, caplog):
    (tmp_path / "responses").write_text("a file where the folder should be")
    cache = ResponseCache(tmp_path, SETTINGS)
    with chat_endpoint(counting()) as (url, _seen):
        assert [ask(url, cache).text for _ in range(2)] == ["reply 0", "reply 1"]
    assert "cannot write an entry" in caplog.text


BIG = "x" * 200_000  # large enough that a torn write would be seen


def _writer(root: str, key: str, mark: str, rounds: int) -> None:
    cache = ResponseCache(Path(root), SETTINGS)
    for _ in range(rounds):
        cache.put(key, ChatResult(mark + BIG, 1, 1, 0.1, 0.1, 10.0, "stop", "m"))


def test_concurrent_writers_never_show_a_torn_entry(tmp_path):
    """Processes writing one entry at once (cells of two jobs asking the same request):
    every writer succeeds and every read is a miss or one whole reply."""
    cache = ResponseCache(tmp_path, SETTINGS)
    key = cache.key({"messages": MESSAGES})
    context = multiprocessing.get_context("fork")
    writers = [
        context.Process(target=_writer, args=(str(tmp_path), key, mark, 150)) for mark in "ab"
    ]
    for writer in writers:
        writer.start()
    seen = set()
    while any(w.is_alive() for w in writers):
        found = cache.get(key)
        seen.add(None if found is None else found.text)
    for writer in writers:
        writer.join()
        assert writer.exitcode == 0
    assert seen <= {None, "a" + BIG, "b" + BIG} and seen - {None}
    assert not list(tmp_path.rglob("*.tmp"))  # no writer left its temporary file


def _cell(data: Path, url: str, *more: str) -> object:
    return malt_cell(data, url, *more, "model.cache=true")


def test_a_rerun_asks_the_model_nothing_and_scores_the_same(tmp_path, monkeypatch):
    """A cell scored again from scratch (a changed scorer or report: here a fresh data
    directory sharing the cache) opens no endpoint (a managed server would not start),
    makes no request and gives the same rows; the calls table says each call was a
    miss, then a hit, and a hit costs nothing (its tokens, replayed, were paid once)."""
    monkeypatch.setenv("NETGAUGE_CACHE_DIR", str(tmp_path / "shared-cache"))
    reply = "```python\ndef process_graph(graph):\n    return len(graph.nodes)\n```"
    priced = "model.pricing=gpt-4o-mini"  # operational: the same cache entries
    with chat_endpoint(lambda body: reply, cached_tokens=3) as (url, seen):
        run_cell(_cell(tmp_path / "first", url, priced))
        asked = len(seen)

        def no_endpoint(*args, **kwargs):
            raise AssertionError("a rerun of cached requests opened the model's endpoint")

        monkeypatch.setattr("pipeline.llm.models.open_endpoint", no_endpoint)  # no server
        run_cell(_cell(tmp_path / "again", url, priced))
        assert asked >= 2 and len(seen) == asked  # the rerun: zero requests
    query = (
        "SELECT query_id, turn, call_index, response, latency_s, prompt_tokens, cached_tokens,"
        " cache, cost_usd FROM calls ORDER BY ALL"
    )
    first = connect(tmp_path / "first").execute(query).fetchall()
    again = connect(tmp_path / "again").execute(query).fetchall()
    assert {row[-2] for row in first} == {"miss"} and {row[-2] for row in again} == {"hit"}
    assert [row[:-2] for row in again] == [row[:-2] for row in first]
    assert {row[6] for row in again} == {3}  # the server's cached prompt tokens, replayed
    price = price_table()["gpt-4o-mini"]
    for row in first:  # a miss is paid: 3 of its prompt tokens at the cached-input price
        assert row[-1] == pytest.approx(price.cost(row[5], 7, 3)) and row[-1] > 0
    assert {row[-1] for row in again} == {0.0}
    cost = "SELECT sum(cost_usd) FROM episodes"
    assert connect(tmp_path / "first").execute(cost).fetchone()[0] == pytest.approx(
        sum(row[-1] for row in first)
    )
    assert connect(tmp_path / "again").execute(cost).fetchone()[0] == 0.0
    verdicts = "SELECT query_id, outcome, correct, safe FROM episodes ORDER BY query_id"
    assert (
        connect(tmp_path / "again").execute(verdicts).fetchall()
        == connect(tmp_path / "first").execute(verdicts).fetchall()
    )


def test_trials_of_one_model_keep_their_own_entries(tmp_path):
    """Two trials (two sampling seeds) of one cached model in one pool: each is answered
    once by the model, then from its own entry, never from the other trial's."""
    with chat_endpoint(counting()) as (url, seen), ModelPool(tmp_path) as pool:
        backends = [
            pool.backend(trial_model(compose([
                "agent=zero_shot", "model=smollm2", "model.cache=true", f"trial={t}",
                "model.endpoint=external", f"model.base_url={url}",
            ])))
            for t in (0, 1)
        ]  # fmt: skip
        first = [b.chat(MESSAGES) for b in backends]
        again = [b.chat(MESSAGES) for b in backends]
        assert len(seen) == 2
    assert [(r.text, r.cache) for r in first] == [("reply 0", MISS), ("reply 1", MISS)]
    assert [(r.text, r.cache) for r in again] == [("reply 0", HIT), ("reply 1", HIT)]
