"""Synthetic result shards with the real schema, for benchmarks and statistics tests.

Reference agents score 0 % or 100 %; statistics need spread. `write_episodes` writes one
`episodes` shard per cell (the same hive paths and metadata as the score stage) where each
agent answers each query correctly with its own probability, optionally per level, and
every agent of an app plays the same query ids, so paired comparisons work.
`write_task_episodes` writes the `episodes`, `steps` and `calls` shards of a
NetLLMBench-style app whose queries chain several tasks, each with a few attempts.
Nothing here runs in the pipeline; its rows carry `config_hash = code_version =
"synthetic"`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from tqdm import tqdm

from pipeline.cells import NO_MODEL, Cell, Layout, data_root
from pipeline.querygen import query_id
from pipeline.records import SCHEMAS, to_table, write_shard

OUTCOMES_WRONG = ("wrong", "exec_error", "parse_error", "timeout")
OPERATIONS = ("count", "list", "rank", "add>count", "remove>list", "for_if(update)")
# Nine chained configuration tasks, as in NetLLMBench; later ones are harder.
TASKS = (
    "set_ip",
    "default_route",
    "static_route",
    "ospf",
    "bgp",
    "vlan",
    "acl",
    "nat",
    "dhcp",
)
FAILED_ATTEMPT = {"ok": 0.6, "exec_error": 0.25, "parse_error": 0.15}  # status of a miss


def cell_table(
    cell: Cell,
    accuracy: float,
    rng: np.random.Generator,
    *,
    operations: Sequence[str] = OPERATIONS,
    max_turns: int = 1,
    tokens: bool = False,
) -> pa.Table:
    """`cell.queries` episode rows of one cell with correctness ~ Bernoulli(accuracy)."""
    n = cell.queries
    correct = rng.random(n) < accuracy
    safe = correct | (rng.random(n) < 0.9)
    wrong = np.asarray(OUTCOMES_WRONG, dtype=object)[rng.integers(0, len(OUTCOMES_WRONG), n)]
    outcome = np.where(correct, "correct", wrong)
    ops = np.asarray(operations, dtype=object)[np.arange(n) % len(operations)]
    turns = rng.integers(1, max_turns + 1, n).astype(np.int16)
    agent_s = rng.gamma(2.0, 0.5, n)
    completion = (rng.integers(20, 400, n) * turns) if tokens else None
    ids = [query_id(cell.app, cell.level, cell.seed, i) for i in range(n)]
    columns = {
        "query_id": ids,
        "app": [cell.app] * n,
        "model": [cell.model] * n,
        "agent": [cell.agent] * n,
        "level": np.full(n, cell.level, dtype=np.int16),
        "seed": np.full(n, cell.seed, dtype=np.int64),
        **_cell_columns(cell, n),
        "trial_of": [cell.variant] * n,  # one play per query (trial 0: _fill's zero)
        "query_key": [synthetic_key(i) for i in ids],
        "operation": ops,
        "size": [""] * n,
        "task": ["mitigate"] * n,
        "answer_type": ["number"] * n,
        "outcome": outcome,
        "correct": correct,
        "safe": safe,
        "score": correct.astype(np.float64),
        "iterations": turns,
        "commands": turns.astype(np.int32),
        "tasks": np.ones(n, dtype=np.int16),
        "tasks_solved": correct.astype(np.int16),
        "latency_s": rng.gamma(2.0, 0.002, n),
        "agent_s": agent_s,
        "error": [None if c else "synthetic" for c in correct],
        "prompt_tokens": completion * 3 if tokens else pa.nulls(n, pa.int64()),
        "completion_tokens": completion if tokens else pa.nulls(n, pa.int64()),
        "cost_usd": synthetic_cost(completion * 3, completion) if tokens else np.zeros(n),
        "detail": ['{"synthetic":true}'] * n,
        "config_hash": ["synthetic"] * n,
        "code_version": ["synthetic"] * n,
    }
    return _fill(columns, SCHEMAS["episodes"], n)


def synthetic_cost(prompt: Any, completion: Any) -> Any:
    """USD of synthetic tokens, priced as gpt-4o-mini in conf/pricing.yaml (reference agents
    call no model and cost 0)."""
    return (prompt * 0.15 + completion * 0.60) / 1e6


def synthetic_key(query_id: str) -> str:
    """A query key for a synthetic query: distinct per query id, like a real one."""
    return hashlib.sha256(query_id.encode()).hexdigest()[:16]


def _cell_columns(cell: Cell, n: int) -> dict[str, object]:
    return {
        "queries": np.full(n, cell.queries, dtype=np.int32),
        "variant": [cell.variant] * n,
        "app_variant": [cell.app_variant] * n,
    }


def _fill(columns: dict[str, object], schema: pa.Schema, n: int) -> pa.Table:
    """Columns the schema has and we do not set (added later, e.g. by LLM agents) get
    nulls, or zeros and empty strings where the column is not nullable."""
    for field in schema:
        if field.name in columns:
            continue
        if field.nullable:
            columns[field.name] = pa.nulls(n, field.type)
        elif pa.types.is_string(field.type):
            columns[field.name] = [""] * n
        else:
            columns[field.name] = pa.array(np.zeros(n)).cast(field.type)
    return pa.table({f.name: columns[f.name] for f in schema}, schema=schema)


def write_episodes(
    data_dir: str | Path,
    accuracy: Mapping[tuple[str, str], float | Mapping[int, float]],
    *,
    app: str = "synth",
    levels: Sequence[int] = (1, 2, 3),
    seeds: Sequence[int] = (0,),
    queries: int = 100,
    seed: int = 0,
    max_turns: int = 1,
    progress: bool = False,
) -> list[Cell]:
    """Write one episodes shard per (agent, level, seed); `accuracy` maps (model, agent) to
    a probability of being correct, or to one per level. Returns the cells written."""
    layout = Layout(data_root(data_dir))
    rng = np.random.default_rng(seed)
    cells = [
        Cell(app, model, agent, level, s, queries)
        for (model, agent) in accuracy
        for level in levels
        for s in seeds
    ]
    for cell in tqdm(cells, desc="synthetic shards", unit="cell", disable=not progress):
        rate = accuracy[(cell.model, cell.agent)]
        p = rate[cell.level] if isinstance(rate, Mapping) else rate
        table = cell_table(cell, float(p), rng, max_turns=max_turns, tokens=cell.model != "none")
        write_shard("episodes", table, layout.episodes(cell), config_hash="synthetic")
    return cells


def task_rows(
    cell: Cell,
    accuracy: float,
    rng: np.random.Generator,
    *,
    tasks: Sequence[str] = TASKS,
    max_attempts: int = 3,
) -> dict[str, list[dict[str, Any]]]:
    """Rows of `episodes`, `steps` and `calls` (none for reference agents) of one cell of
    a chained-task app. Every query holds all `tasks`, played in order; each attempt at
    task j succeeds with probability accuracy ** (1 + j / 4), and a task still unsolved
    after `max_attempts` is left for the next one. An LLM agent makes one call per turn,
    plus a re-prompt on a parse_error turn."""
    llm = cell.model != NO_MODEL
    statuses = list(FAILED_ATTEMPT)
    weights = list(FAILED_ATTEMPT.values())
    out: dict[str, list[dict[str, Any]]] = {"episodes": [], "steps": [], "calls": []}
    for index in range(cell.queries):
        key = {
            "query_id": query_id(cell.app, cell.level, cell.seed, index),
            **cell.columns(),
        }
        steps: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        solved = 0
        for j, task in enumerate(tasks):
            p = accuracy ** (1 + j / 4)
            for attempt in range(1, max_attempts + 1):
                done = bool(rng.random() < p)
                status = "ok" if done else str(rng.choice(statuses, p=weights))
                turn = len(steps) + 1
                steps.append(_step(key, turn, task, attempt, status, done, llm, rng))
                if llm:
                    purposes = ["act", "reprompt"] if status == "parse_error" else ["act"]
                    calls += [
                        _call(key, turn, task, attempt, i, purpose, cell, rng)
                        for i, purpose in enumerate(purposes)
                    ]
                if done:
                    solved += 1
                    break
        out["steps"] += steps
        out["calls"] += calls
        out["episodes"].append(_task_episode(key, steps, calls, len(tasks), solved))
    return out


def _step(
    key: dict[str, Any],
    turn: int,
    task: str,
    attempt: int,
    status: str,
    done: bool,
    llm: bool,
    rng: np.random.Generator,
) -> dict[str, Any]:
    command = f"configure {task}"
    return key | {
        "turn": turn,
        "reply": command,
        "action": "" if status == "parse_error" else command,
        "status": status,
        "output": "",
        "task": task,
        "attempt": attempt,
        "task_solved": done,
        "safe": True,
        "error": None if status == "ok" else "synthetic",
        "exec_s": float(rng.gamma(2.0, 0.05)),
        "agent_s": float(rng.gamma(2.0, 0.5)) if llm else 0.0,
        "evidence": "{}",
        "bytes_out": 0,
    }


def _call(
    key: dict[str, Any],
    turn: int,
    task: str,
    attempt: int,
    index: int,
    purpose: str,
    cell: Cell,
    rng: np.random.Generator,
) -> dict[str, Any]:
    completion = int(rng.integers(20, 400))
    rate = float(rng.uniform(20, 60))
    return key | {
        "turn": turn,
        "task": task,
        "attempt": attempt,
        "call_index": index,
        "purpose": purpose,
        "served_model": cell.model,
        "prompt_tokens": completion * 3,
        "completion_tokens": completion,
        "latency_s": completion / rate,
        "ttft_s": 0.05,
        "tokens_per_s": rate,
        "finish_reason": "stop",
        "request": "synthetic request",
        "response": "synthetic response",
        "dropped_turns": 0,
        "cache": None,
        "cached_tokens": None,
        "cost_usd": synthetic_cost(completion * 3, completion),
    }


def _task_episode(
    key: dict[str, Any],
    steps: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    tasks: int,
    solved: int,
) -> dict[str, Any]:
    correct = solved == tasks
    completion = sum(c["completion_tokens"] for c in calls) if calls else None
    call_s = sum(c["latency_s"] for c in calls)
    return key | {
        "app_variant": "base",
        "trial": 0,
        "trial_of": key["variant"],
        "query_key": synthetic_key(key["query_id"]),
        "operation": "configure",
        "size": "",
        "task": "mitigate",
        "answer_type": "config",
        "outcome": "correct" if correct else "wrong",
        "correct": correct,
        "safe": True,
        "score": float(correct),
        "answer": None,
        "iterations": len(steps),
        "commands": sum(s["status"] == "ok" for s in steps),
        "blocked": 0,
        "bytes_read": 0,
        "diagnostics": 0,
        "turn_budget": 0,
        "read_budget": None,
        "tasks": tasks,
        "tasks_solved": solved,
        "latency_s": sum(s["exec_s"] for s in steps),
        "agent_s": sum(s["agent_s"] for s in steps),
        "error": None if correct else f"{tasks - solved} of {tasks} tasks unsolved",
        "prompt_tokens": sum(c["prompt_tokens"] for c in calls) if calls else None,
        "completion_tokens": completion,
        "tokens_per_s": completion / call_s if calls else None,
        "model_calls": len(calls),
        "reprompts": sum(c["purpose"] == "reprompt" for c in calls),
        "example_reprompts": 0,
        "master_extractions": 0,
        "cost_usd": sum(c["cost_usd"] for c in calls),
        "detail": '{"synthetic":true}',
        "config_hash": "synthetic",
        "code_version": "synthetic",
    }


def write_task_episodes(
    data_dir: str | Path,
    accuracy: Mapping[tuple[str, str], float],
    *,
    app: str = "netllmbench",
    levels: Sequence[int] = (1,),
    seeds: Sequence[int] = (0,),
    queries: int = 20,
    seed: int = 0,
    tasks: Sequence[str] = TASKS,
    max_attempts: int = 3,
) -> list[Cell]:
    """Write the `episodes`, `steps` and `calls` shards of a chained-task app (see
    `task_rows`); `accuracy` maps (model, agent) to the first task's per-attempt success
    probability. Returns the cells written."""
    layout = Layout(data_root(data_dir))
    rng = np.random.default_rng(seed)
    cells = [
        Cell(app, model, agent, level, s, queries)
        for (model, agent) in accuracy
        for level in levels
        for s in seeds
    ]
    for cell in cells:
        rows = task_rows(
            cell, accuracy[(cell.model, cell.agent)], rng, tasks=tasks, max_attempts=max_attempts
        )
        for table, path in (
            ("episodes", layout.episodes(cell)),
            ("steps", layout.steps(cell)),
            ("calls", layout.calls(cell)),
        ):
            write_shard(table, to_table(table, rows[table]), path, config_hash="synthetic")
    return cells


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m analysis.synthetic DIR`: a demo data directory (three agents with spread
    on two apps, tokens and cost; two agents of a chained-task app with their turns and
    calls) to try the summary, the leaderboard and the report's episode pages on."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m analysis.synthetic", description=main.__doc__)
    parser.add_argument("data_dir", help="the data directory to write (e.g. data/demo)")
    args = parser.parse_args(argv)
    agents = {("m1", "react"): {1: 0.7, 2: 0.5}, ("m2", "cot"): 0.45, ("none", "oracle"): 1.0}
    cells = write_episodes(args.data_dir, agents, app="malt", levels=(1, 2), queries=60)
    cells += write_episodes(args.data_dir, agents, app="k8s", levels=(1,), queries=50, seed=1)
    cells += write_task_episodes(
        args.data_dir, {("m1", "react"): 0.8, ("none", "oracle"): 1.0}, queries=20, seed=2
    )
    print(f"wrote {len(cells)} synthetic cells under {args.data_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
