"""Money: prices from conf/pricing.yaml, the cost of calls and episodes in the result
tables, and `model.cost_limit` ending a cell cleanly (the model is an endpoint of our own,
tests/chat_endpoint.py: what is tested is NetGauge's accounting, not a model)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys

import pytest

from pipeline.config import ROOT
from pipeline.core import Outcome, StepStatus, outcome_for_status
from pipeline.costlimit import CostGuard
from pipeline.errors import ConfigError
from pipeline.pricing import CACHE_HIT, Price, Prices, price_table
from pipeline.serving.client import HIT
from pipeline.serving.config import model_config
from pipeline.views import connect
from tests.chat_endpoint import chat_endpoint


def test_a_call_costs_its_uncached_cached_and_completion_tokens():
    price = Price("p", input=2.0, cached_input=0.5, output=8.0)
    # 1,000 prompt tokens of which 400 cached, 100 completion tokens
    assert price.cost(1000, 100, 400) == pytest.approx((600 * 2.0 + 400 * 0.5 + 100 * 8.0) / 1e6)
    assert price.cost(None, None) == 0.0
    assert price.cost(10, 0, 50) == pytest.approx(10 * 0.5 / 1e6)  # cached <= prompt


def test_a_response_cache_hit_costs_nothing():
    """A hit replays the first call's tokens, which were paid once: the hit costs 0 USD,
    also when its model has no price; a miss and an uncached call are priced."""
    prices = Prices({"name": "smollm2", "pricing": "gpt-4o-mini"})
    call = {"model": "smollm2", "prompt_tokens": 1000, "completion_tokens": 100}
    paid = price_table()["gpt-4o-mini"].cost(1000, 100)
    assert paid > 0
    assert prices.call_cost(call) == pytest.approx(paid)
    assert prices.call_cost(call | {"cache": "miss"}) == pytest.approx(paid)
    assert prices.call_cost(call | {"cache": "hit"}) == 0.0
    assert prices.call_cost(call | {"model": "unpriced", "cache": "hit"}) == 0.0
    assert prices.call_cost(call | {"model": "unpriced"}) is None
    assert CACHE_HIT == HIT  # what the client records is what pricing reads


def test_local_models_price_zero_and_say_so():
    table = price_table()
    for name in ("none", "smollm2", "qwen2_5_7b"):
        assert (table[name].input, table[name].cached_input, table[name].output) == (0, 0, 0)
        assert table[name].note
    prices = Prices({"name": "smollm2", "pricing": None})
    assert (
        prices.call_cost({"model": "smollm2", "prompt_tokens": 10**6, "completion_tokens": 1}) == 0
    )
    # a protocol agent's client has no config, hence no price: its cost is unknown
    assert prices.call_cost({"model": "mcp-client/1.0", "prompt_tokens": 5}) is None


def test_pricing_entry_and_cost_limit_are_checked():
    with pytest.raises(ConfigError, match=r"model\.pricing='nope' is not an entry"):
        model_config({"name": "smollm2", "pricing": "nope"})
    with pytest.raises(ConfigError, match=r"model\.cost_limit=0"):
        model_config({"name": "smollm2", "cost_limit": 0})
    with pytest.raises(ConfigError, match="has no price"):
        model_config({"name": "unpriced", "cost_limit": 1.0})
    assert (
        model_config({"name": "smollm2", "pricing": "gpt-4o", "cost_limit": 1.0}).cost_limit == 1.0
    )


def test_cost_limit_ends_the_cell_with_typed_outcomes_and_keeps_what_was_played(tmp_path):
    """One episode at a time; the first one's calls pass the limit, so the three queries
    not started end as cost_limit, and everything the first played is in the tables."""
    with chat_endpoint(lambda body: "no code here", cached_tokens=3) as (url, seen):
        args = [
            sys.executable, "-m", "pipeline.run", "app=malt", "agent=zero_shot",
            "model=smollm2", "model.endpoint=external", f"model.base_url={url}",
            "model.pricing=gpt-4o", "model.cost_limit=0.000001", "model.max_in_flight=1",
            "run.concurrency=1", "queries=4", f"data_dir={tmp_path}",
        ]  # fmt: skip
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-4000:]
    con = connect(tmp_path)
    episodes = con.execute(
        "SELECT query_id, outcome, correct, iterations, model_calls, cost_usd, error "
        "FROM episodes ORDER BY query_id"
    ).fetchall()
    assert [e[1] for e in episodes[1:]] == ["cost_limit"] * 3
    first = episodes[0]
    assert first[1] != "cost_limit" and first[4] >= 1 and first[5] > 0.000001
    assert all(e[2] is False and e[4] == 0 and e[5] == 0.0 for e in episodes[1:])
    assert all("model.cost_limit = 1e-06 USD" in e[6] for e in episodes[1:])
    calls = con.execute(
        "SELECT query_id, prompt_tokens, completion_tokens, cached_tokens, cost_usd FROM calls"
    ).fetchall()
    assert len(calls) == len(seen) == first[4]  # every call asked is recorded, no other
    assert {c[0] for c in calls} == {first[0]}
    for _, prompt, completion, cached, cost in calls:
        assert cached == 3
        assert cost == pytest.approx(((prompt - 3) * 2.5 + 3 * 1.25 + completion * 10.0) / 1e6)
    assert sum(c[4] for c in calls) == pytest.approx(first[5])
    steps = con.execute("SELECT status, turn FROM steps WHERE query_id <> ?", [first[0]])
    assert steps.fetchall() == [("cost_limit", 1)] * 3


def test_cost_guard_counts_every_priced_call_and_names_what_was_not_started():
    prices = Prices({"name": "smollm2", "pricing": "gpt-4o"})
    guard = CostGuard(0.01, prices)
    act = {"purpose": "act", "model": "smollm2", "prompt_tokens": 1000, "completion_tokens": 100}
    probe = {"purpose": "diagnostic", "model": "smollm2", "prompt_tokens": None}
    turn = {"calls": json.dumps([act, act, probe])}  # 2 x (1000 x 2.5 + 100 x 10) / 1e6
    guard.add([turn])
    assert guard.spent == pytest.approx(0.007) and not guard.reached
    guard.add([turn])
    assert guard.reached
    todo: queue.Queue = queue.Queue()
    for name in ("q1", "q2"):
        todo.put(name)
    ended = list(guard.not_started(todo, "cell"))
    assert [q for q, _ in ended] == ["q1", "q2"] and todo.empty()
    assert {(s.status, s.action, s.done) for _, s in ended} == {(StepStatus.COST_LIMIT, "", True)}
    assert (
        "model.cost_limit = 0.01 USD" in ended[0][1].error
        and "0.014 USD spent" in ended[0][1].error
    )
    assert outcome_for_status(StepStatus.COST_LIMIT) is Outcome.COST_LIMIT
