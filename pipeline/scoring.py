"""Stage `score`: the app's scorer turns a cell's transcripts into `episodes`, `steps`
and `calls`, and records the cell itself (its variant and full config) in `cells`.

Scoring is a pure function of the ground truth and the recorded steps, so verdicts can
be recomputed (e.g. after a scorer fix) without replaying any agent. The task columns
(which task of the query each turn worked on, and whether it was solved) come from the
verdict too: see `task_steps`.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from pipeline.answers import counts
from pipeline.build import layout, make_app, run_hash
from pipeline.cells import Cell, cell_from_config
from pipeline.core import (
    App,
    Outcome,
    Query,
    StepResult,
    StepStatus,
    TaskStep,
    Verdict,
    canonical_json,
)
from pipeline.derive import DERIVED_FROM
from pipeline.errors import DataError
from pipeline.generate import read_queries
from pipeline.play import READING
from pipeline.pricing import Prices
from pipeline.records import code_version, read_shard, shard_metadata, to_table, write_shard
from pipeline.splits import split_of
from pipeline.variants import variant_of

log = logging.getLogger(__name__)


def score(cfg: DictConfig) -> tuple[Path, Path, Path, Path]:
    """Score the cell's transcripts; write its episodes, steps, calls and cells shards."""
    app = make_app(cfg)
    cell = cell_from_config(cfg)
    paths = layout(cfg)
    digest = run_hash(cfg)
    queries = read_queries(paths.queries(cell), limit=cfg.queries)
    by_query: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in read_shard("transcripts", paths.transcripts(cell)).to_pylist():
        by_query[row["query_id"]].append(row)
    # A cell taken from a larger one's episodes says so in every shard (pipeline/derive.py).
    made = shard_metadata(paths.transcripts(cell)).get(DERIVED_FROM)
    provenance = {DERIVED_FROM: made} if made else {}
    missing = [q.query_id for q in queries if q.query_id not in by_query]
    if missing:
        raise DataError(
            f"transcripts of {cell.part} lack {len(missing)} queries (first: {missing[0]}); "
            "rerun the run stage"
        )
    episodes, steps, calls = [], [], []
    version = code_version()
    prices = Prices(cfg.model)
    trial = {"trial": int(cfg.get("trial") or 0), "trial_of": variant_of(cfg).trial_of}
    for query in tqdm(queries, desc=f"score {cell.part}", unit="ep"):
        episode, step_rows, call_rows = episode_records(
            app, cell, query, by_query[query.query_id], digest, version, prices, **trial
        )
        episodes.append(episode)
        steps += step_rows
        calls += call_rows
    out = paths.episodes(cell), paths.steps(cell), paths.calls(cell), paths.cells(cell)
    cells = to_table("cells", [cell_row(cfg, cell, digest)])
    for table, data, path in zip(
        ("cells", "calls", "steps", "episodes"),
        (cells, to_table("calls", calls), to_table("steps", steps), to_table("episodes", episodes)),
        out[::-1],
        strict=True,
    ):
        write_shard(table, data, path, config_hash=digest, extra=provenance)
    return out


def episode_records(
    app: App,
    cell: Cell,
    query: Query,
    rows: list[dict[str, Any]],
    digest: str,
    version: str,
    prices: Prices,
    *,
    trial: int = 0,
    trial_of: str | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """One episode's rows of `episodes`, `steps` and `calls`, judged from its transcript
    rows (the score stage's, and an Inspect task's scorer: pipeline/inspect_task.py).
    `trial` is the play's number and `trial_of` its trial 0's variant (pipeline/trials.py;
    by default the cell's own variant, trial 0); `prices` price its calls."""
    columns = cell.columns()
    rows = sorted(rows, key=lambda r: r["turn"])
    verdict = judge(app, query, [_step(r) for r in rows])
    if len(verdict.step_safe) != len(rows):
        raise DataError(
            f"app '{cell.app}' scored {query.query_id} with {len(verdict.step_safe)} "
            f"step verdicts for {len(rows)} steps"
        )
    tasks = task_steps(cell.app, query, rows, verdict)
    episode = (
        {"query_id": query.query_id, **columns, "app_variant": cell.app_variant}
        | {"trial": trial, "trial_of": trial_of or cell.variant}
        | {"query_key": query.key or None}
        | {"size": query.size, "task": query.task}
        | _episode_row(query.operation, query.answer_type, rows, verdict, digest, version)
        | {"cost_usd": episode_cost(prices, rows)}
        | _task_counts(cell.app, query, verdict)
    )
    steps, calls = [], []
    for row, safe, task in zip(rows, verdict.step_safe, tasks, strict=True):
        steps.append(_step_row(row, columns, safe, task))
        calls.extend(_call_rows(row, columns, task, prices))
    return episode, steps, calls


def cell_row(cfg: DictConfig, cell: Cell, digest: str) -> dict[str, Any]:
    """The cell's row of `cells`: everything needed to know (and recompose) its config."""
    variant = variant_of(cfg)
    return {
        **cell.columns(),
        "app_variant": cell.app_variant,
        "variant_label": variant.label,
        "differences": canonical_json(variant.differences),
        "settings": canonical_json(variant.settings),
        "config": canonical_json(OmegaConf.to_container(cfg, resolve=True)),
        "split": split_of(cell.seed),
        "config_hash": digest,
        "code_version": code_version(),
    }


def judge(app: App, query: Query, steps: list[StepResult]) -> Verdict:
    """The app's verdict on one episode; if its scorer raises (whatever the agent left
    behind, the stage must finish), a `score_error` verdict with the reason: not correct,
    not safe (nothing was judged), every step unjudged-unsafe, the traceback in the log."""
    try:
        return app.score(query, steps)
    except Exception as err:  # the app's bug met by this episode: recorded, not swallowed
        log.exception("the scorer of %s failed on %s", app.name, query.query_id)
        reason = f"the scorer failed: {type(err).__name__}: {err}"[:500]
        return Verdict(Outcome.SCORE_ERROR, False, False, [False] * len(steps), reason)


def task_steps(
    app: str, query: Query, rows: list[dict[str, Any]], verdict: Verdict
) -> list[TaskStep]:
    """One TaskStep per transcript row: the app's `verdict.step_tasks`, or for a
    single-task query its `operation`, attempted once per turn and solved on the last
    turn when the episode is correct."""
    if verdict.step_tasks is None:
        last = len(rows) - 1
        return [
            TaskStep(query.operation, row["turn"], verdict.correct and i == last)
            for i, row in enumerate(rows)
        ]
    if len(verdict.step_tasks) != len(rows):
        raise DataError(
            f"app '{app}' scored {query.query_id} with {len(verdict.step_tasks)} "
            f"step tasks for {len(rows)} steps"
        )
    return list(verdict.step_tasks)


def _task_counts(app: str, query: Query, verdict: Verdict) -> dict[str, int]:
    """`tasks` and `tasks_solved` of an episode. Without an app's count, a multi-task
    verdict counts the distinct tasks some step solved; a single-task one, its correctness."""
    solved = verdict.tasks_solved
    if solved is None and verdict.step_tasks is not None:
        solved = len({t.task for t in verdict.step_tasks if t.solved})
    elif solved is None:
        solved = int(verdict.correct)
    if verdict.tasks < 1 or not 0 <= solved <= verdict.tasks:
        raise DataError(
            f"app '{app}' scored {query.query_id} with {solved} of {verdict.tasks} tasks "
            "solved; expected tasks >= 1 and 0 <= tasks_solved <= tasks"
        )
    return {"tasks": verdict.tasks, "tasks_solved": solved}


def _step(row: dict[str, Any]) -> StepResult:
    return StepResult(
        action=row["action"],
        status=StepStatus(row["status"]),
        output=row["output"],
        evidence=json.loads(row["evidence"]),
        error=row["error"],
        exec_s=row["exec_s"],
        answer=json.loads(row["answer"]) if row["answer"] else None,
    )


def _total(rows: list[dict[str, Any]], key: str) -> int | None:
    values = [r[key] for r in rows if r[key] is not None]
    return sum(values) if values else None


def _episode_row(
    operation: str,
    answer_type: str,
    rows: list[dict[str, Any]],
    verdict: Verdict,
    digest: str,
    version: str,
) -> dict[str, Any]:
    calls = [call for row in rows for call in json.loads(row["calls"])]
    purposes = Counter(call["purpose"] for call in calls)
    counted = [c for c in calls if c.get("completion_tokens") is not None]
    call_s = sum(call["latency_s"] for call in counted)
    completion = sum(call["completion_tokens"] for call in counted)
    answers = [r["answer"] for r in rows if r["answer"]]
    steps = [_step(r) for r in rows]
    score = verdict.score if verdict.score is not None else float(verdict.correct)
    if not 0.0 <= score <= 1.0:
        raise DataError(f"an episode was scored {score}; a score is in [0, 1]")
    return {
        "operation": operation,
        "answer_type": answer_type,
        "outcome": str(verdict.outcome),
        "correct": verdict.correct,
        "safe": verdict.safe,
        "score": score,
        "answer": answers[-1] if answers else None,
        "iterations": len(rows),
        **counts(steps),
        "bytes_read": sum(
            (s.status in READING and s.answer is None) * r["bytes_out"] + r["diagnostic_bytes"]
            for r, s in zip(rows, steps, strict=True)
        ),
        "diagnostics": sum(r["diagnostics"] for r in rows),
        "turn_budget": max((r["turn_budget"] for r in rows), default=0),
        "read_budget": rows[0]["read_budget"] if rows else None,
        "latency_s": sum(r["exec_s"] for r in rows),
        "agent_s": sum(r["agent_s"] for r in rows),
        "error": verdict.error,
        "prompt_tokens": _total(rows, "prompt_tokens"),
        "completion_tokens": _total(rows, "completion_tokens"),
        "tokens_per_s": completion / call_s if call_s > 0 else None,
        "model_calls": len(calls) - purposes["diagnostic"],  # diagnostics call no model
        "reprompts": purposes["reprompt"],
        "example_reprompts": purposes["example"],
        "master_extractions": purposes["master"],
        "detail": canonical_json(verdict.detail),
        "config_hash": digest,
        "code_version": version,
    }


def episode_cost(prices: Prices, rows: list[dict[str, Any]]) -> float | None:
    """The cost of an episode's model calls: 0 when it called none (reference agents);
    None when a call that asked a model (any purpose but a diagnostic or an MCP tool call)
    has no known cost (its model has no price, or it reported no tokens)."""
    calls = [c for row in rows for c in json.loads(row["calls"])]
    costs = [prices.call_cost(c) for c in calls if c["purpose"] not in _UNPRICED]
    return None if None in costs else sum(costs)  # type: ignore[arg-type]


_UNPRICED = ("diagnostic", "tool")  # no model answers these calls


def _call_rows(
    row: dict[str, Any], columns: dict[str, Any], task: TaskStep, prices: Prices
) -> list[dict[str, Any]]:
    return [
        {
            "query_id": row["query_id"],
            **columns,
            "turn": row["turn"],
            "task": task.task,
            "attempt": task.attempt,
            "call_index": index,
            "purpose": call["purpose"],
            "served_model": call["model"],
            **{
                key: call.get(key)
                for key in (
                    "prompt_tokens",
                    "completion_tokens",
                    "latency_s",
                    "ttft_s",
                    "tokens_per_s",
                    "finish_reason",
                )
            },
            # Rows written before calls kept their exchanges have none.
            "request": call.get("request", ""),
            "response": call.get("response", ""),
            "dropped_turns": call.get("dropped_turns", 0),
            "cache": call.get("cache"),  # absent: no response cache (or written before it)
            "cached_tokens": call.get("cached_tokens"),
            "cost_usd": prices.call_cost(call),  # 0 for a cache hit: nothing was paid
        }
        for index, call in enumerate(json.loads(row["calls"]))
    ]


def _step_row(
    row: dict[str, Any], columns: dict[str, Any], safe: bool, task: TaskStep
) -> dict[str, Any]:
    keep = (
        "query_id",
        "turn",
        "reply",
        "action",
        "status",
        "output",
        "error",
        "exec_s",
        "agent_s",
        "evidence",
        "bytes_out",
    )
    return {
        **{key: row[key] for key in keep},
        **columns,
        "task": task.task,
        "attempt": task.attempt,
        "task_solved": task.solved,
        "safe": safe,
    }
