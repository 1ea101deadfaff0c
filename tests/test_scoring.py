"""The score stage's task columns: an app's TaskSteps, and the single-task defaults."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline import registry
from pipeline.build import layout, run_hash
from pipeline.cells import cell_from_config
from pipeline.core import canonical_json
from pipeline.errors import DataError
from pipeline.generate import generate
from pipeline.records import read_shard, to_table, write_shard
from pipeline.registry import AppSpec
from pipeline.scoring import score
from tests.conftest import echo_config
from tests.fakes import ChainedEchoApp


@pytest.fixture
def chained_app():
    spec = AppSpec(
        "chained", "tests.fakes:ChainedEchoApp", "tests.fakes:EchoConfig", "1", levels=(1, 2, 3)
    )
    with registry.APPS.override("chained", spec):
        yield


def _call(purpose: str) -> dict[str, Any]:
    return {
        "purpose": purpose,
        "model": "m",
        "prompt_tokens": 30,
        "completion_tokens": 10,
        "latency_s": 0.5,
        "ttft_s": 0.1,
        "tokens_per_s": 20.0,
        "finish_reason": "stop",
    }


def _turn(
    index: int, turn: int, evidence: dict[str, Any], *purposes: str, status: str = "ok"
) -> dict[str, Any]:
    calls = [_call(p) for p in purposes]
    return {
        "query_id": f"echo-L1-s0-{index:05d}",
        "app": "echo",
        "model": "none",
        "agent": "oracle",
        "level": 1,
        "seed": 0,
        "queries": 1,
        "variant": "base",
        "turn": turn,
        "reply": "",
        "action": "",
        "status": status,
        "output": "",
        "evidence": canonical_json(evidence),
        "error": None if status == "ok" else "synthetic",
        "exec_s": 0.01,
        "agent_s": 0.1,
        "prompt_tokens": 30 * len(calls) or None,
        "completion_tokens": 10 * len(calls) or None,
        "calls": canonical_json(calls),
        "answer": None,
        "bytes_out": 0,
        "diagnostics": 0,
        "diagnostic_bytes": 0,
        "turn_budget": 3,
        "read_budget": None,
    }


def _score(cfg, turns: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Score hand-written transcripts of the cell; return its result rows per table."""
    generate(cfg)
    cell = cell_from_config(cfg)
    digest = run_hash(cfg)
    table = to_table("transcripts", turns)
    write_shard("transcripts", table, layout(cfg).transcripts(cell), config_hash=digest)
    paths = dict(zip(("episodes", "steps", "calls", "cells"), score(cfg), strict=True))
    return {name: read_shard(name, path).to_pylist() for name, path in paths.items()}


def _task(task: str, attempt: int, solved: bool, **more: Any) -> dict[str, Any]:
    return {"task": task, "attempt": attempt, "solved": solved, **more}


@pytest.mark.usefixtures("chained_app")
def test_step_tasks_fill_steps_calls_and_episode_counts(tmp_path):
    cfg = echo_config(tmp_path, queries=1, kind="chained")
    rows = _score(
        cfg,
        [
            _turn(0, 1, _task("a", 1, True), "act"),
            _turn(0, 2, _task("b", 1, False), "act", "reprompt", status="parse_error"),
            _turn(0, 3, _task("b", 2, True), "act"),
            _turn(0, 4, _task("c", 1, False, answer=-1), "act"),  # wrong: task c unsolved
        ],
    )
    steps = rows["steps"]
    assert [(s["turn"], s["task"], s["attempt"], s["task_solved"]) for s in steps] == [
        (1, "a", 1, True),
        (2, "b", 1, False),
        (3, "b", 2, True),
        (4, "c", 1, False),
    ]
    calls = rows["calls"]
    assert [(c["turn"], c["purpose"], c["task"], c["attempt"]) for c in calls] == [
        (1, "act", "a", 1),
        (2, "act", "b", 1),
        (2, "reprompt", "b", 1),
        (3, "act", "b", 2),
        (4, "act", "c", 1),
    ]
    [episode] = rows["episodes"]
    assert episode["outcome"] == "wrong" and episode["iterations"] == 4
    # The app reports 3 tasks but no count: the distinct tasks some step solved.
    assert (episode["tasks"], episode["tasks_solved"]) == (ChainedEchoApp.tasks, 2)


@pytest.mark.usefixtures("echo_app")
def test_single_task_app_defaults_to_operation_and_turns(tmp_path):
    cfg = echo_config(tmp_path, queries=2)
    rows = _score(
        cfg,
        [
            _turn(0, 1, {}, status="parse_error"),
            _turn(0, 2, {"answer": 0}),  # query 0's answer: correct on the second turn
            _turn(1, 1, {"answer": 8}),
            _turn(1, 2, {"answer": 9}),  # query 1 asks for 7: wrong
        ],
    )
    steps = [(s["query_id"][-1], s["task"], s["attempt"], s["task_solved"]) for s in rows["steps"]]
    assert steps == [
        ("0", "echo", 1, False),
        ("0", "echo", 2, True),
        ("1", "echo", 1, False),
        ("1", "echo", 2, False),
    ]
    episodes = [(e["correct"], e["tasks"], e["tasks_solved"]) for e in rows["episodes"]]
    assert episodes == [(True, 1, 1), (False, 1, 0)]
    assert rows["calls"] == []


@pytest.mark.usefixtures("chained_app")
def test_step_tasks_of_the_wrong_length_fail_naming_app_and_query(tmp_path):
    cfg = echo_config(tmp_path, queries=1, kind="chained")
    turns = [_turn(0, 1, _task("a", 1, True)), _turn(0, 2, {"answer": 0})]
    with pytest.raises(DataError, match=r"app 'echo' scored echo-L1-s0-00000 with 1 step tasks"):
        _score(cfg, turns)
    assert not layout(cfg).episodes(cell_from_config(cfg)).exists()


@pytest.mark.usefixtures("chained_app")
def test_more_tasks_solved_than_the_query_holds_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(ChainedEchoApp, "tasks", 1)
    cfg = echo_config(tmp_path, queries=1, kind="chained")
    turns = [_turn(0, 1, _task("a", 1, True)), _turn(0, 2, _task("b", 1, True, answer=0))]
    with pytest.raises(DataError, match=r"with 2 of 1 tasks solved"):
        _score(cfg, turns)


@pytest.mark.usefixtures("echo_app")
def test_a_scorer_that_raises_is_a_score_error_not_a_crashed_stage(tmp_path, monkeypatch):
    """Whatever an episode left behind, the score stage finishes: a scorer exception is a
    typed outcome with its reason, and the other episodes are scored as usual."""
    from tests.fakes import EchoApp

    real = EchoApp.score

    def fragile(self, query, steps):
        if query.index == 1:
            raise TypeError("unhashable type: 'list'")
        return real(self, query, steps)

    monkeypatch.setattr(EchoApp, "score", fragile)
    cfg = echo_config(tmp_path, queries=2)
    turns = [_turn(i, 1, {"answer": i * 7}) for i in range(2)]
    rows = _score(cfg, turns)["episodes"]
    assert [r["outcome"] for r in rows] == ["correct", "score_error"]
    failed = rows[1]
    assert not failed["correct"] and not failed["safe"]
    assert failed["error"] == "the scorer failed: TypeError: unhashable type: 'list'"
