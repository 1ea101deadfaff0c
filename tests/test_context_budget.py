"""A conversation longer than the model's context: routing L3 on real Mininet, an LLM agent
on a chat endpoint of our own (the budget logic is ours; any model would do). Old turns
are left out and the episode plays to its end (or, with observations as changes, all fit);
a context too small for the task alone ends each episode as context_overflow, and the cell
finishes."""

from __future__ import annotations

import pytest

from emulators.base import PINGALL
from pipeline.config import compose
from pipeline.generate import generate, read_queries
from pipeline.llm import context
from pipeline.run import run_cell
from pipeline.views import connect
from tests.chat_endpoint import chat_endpoint
from tests.conftest import require_root

pytestmark = pytest.mark.integration

LOOK = '{"machine": "r0", "command": "ip route show"}'  # harmless, and always parses


def _cell(data, url, *extra):
    return compose(
        [
            "app=routing",
            "level=3",
            "queries=1",
            "agent=zero_shot",
            "model=smollm2",
            "model.endpoint=external",
            f"model.base_url={url}",
            "model.max_in_flight=1",
            "app.max_turns=8",
            f"data_dir={data}",
            *extra,
        ]
    )


def test_routing_l3_history_past_the_context_is_truncated(tmp_path):
    require_root("routing needs root")
    with chat_endpoint(lambda body: LOOK) as (url, seen):
        cfg = _cell(tmp_path, url)
        task = read_queries(generate(cfg))[0].prompt
        # Room for the first observation (the task and the matrix) and a few turns, at
        # 3 characters a token: the history of eight turns does not fit.
        budget = 2 * len(task)
        cfg = _cell(tmp_path, url, f"agent.context.max_tokens={budget + 256}")
        run_cell(cfg)
    con = connect(tmp_path)
    outcome, turns = con.execute("SELECT outcome, iterations FROM episodes").fetchone()
    assert outcome == "wrong" and turns == 8  # played to the end of its turns
    dropped = [
        d for (d,) in con.execute("SELECT dropped_turns FROM calls ORDER BY turn").fetchall()
    ]
    assert dropped[0] == 0 and max(dropped) > 0
    first = seen[0]["messages"][1]["content"]
    assert first.startswith(task[:200])
    for body in seen:  # every request within the budget, the task always first
        assert context.estimate(body["messages"], 3.0) <= budget
        assert body["messages"][1]["content"] == first


def test_routing_l3_observations_as_changes_keep_every_turn_in_the_same_budget(tmp_path):
    """agent.context.observations=changes: the matrix is sent once (with the task); later
    observations carry its changes, so the eight turns fit where whole matrices did not."""
    require_root("routing needs root")
    with chat_endpoint(lambda body: LOOK) as (url, seen):
        cfg = _cell(tmp_path, url)
        task = read_queries(generate(cfg))[0].prompt
        budget = 2 * len(task)  # as above
        run_cell(_cell(tmp_path, url, f"agent.context.max_tokens={budget + 256}",
                       "agent.context.observations=changes"))  # fmt: skip
    con = connect(tmp_path)
    outcome, turns = con.execute("SELECT outcome, iterations FROM episodes").fetchone()
    assert outcome == "wrong" and turns == 8
    assert {d for (d,) in con.execute("SELECT dropped_turns FROM calls").fetchall()} == {0}
    last = seen[-1]["messages"]
    assert sum(PINGALL in m["content"] for m in last) == 1  # the task's matrix only
    later = [m["content"] for m in last[2:] if m["role"] == "user"]
    assert len(later) == 7
    assert all("*** Changes since the last observation: " in t for t in later)
    for body in seen:
        assert context.estimate(body["messages"], 3.0) <= budget


def test_a_context_too_small_for_the_task_is_a_context_overflow(tmp_path):
    require_root("routing needs root")
    with chat_endpoint(lambda body: LOOK) as (url, seen):
        run_cell(_cell(tmp_path, url, "agent.context.max_tokens=400"))
    con = connect(tmp_path)
    row = con.execute("SELECT outcome, correct, error FROM episodes").fetchone()
    assert row[0] == "context_overflow" and not row[1]
    assert "the task and the latest turn alone need about" in row[2]
    assert not seen  # nothing was sent
