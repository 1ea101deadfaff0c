"""Synthetic `episodes` shards with the real schema, for benchmarks and statistics tests.

Reference agents score 0 % or 100 %; statistics need spread. `write_episodes` writes one
shard per cell (the same hive paths and metadata as the score stage) where each agent
answers each query correctly with its own probability, optionally per level, and every
agent of an app plays the same query ids, so paired comparisons work. Nothing here runs
in the pipeline; its rows carry `config_hash = code_version = "synthetic"`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
from tqdm import tqdm

from pipeline.cells import Cell, Layout, data_root
from pipeline.records import SCHEMAS, write_shard

OUTCOMES_WRONG = ("wrong", "exec_error", "parse_error", "timeout")
OPERATIONS = ("count", "list", "rank", "add>count", "remove>list", "for_if(update)")


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
    ids = [f"{cell.app}-L{cell.level}-s{cell.seed}-{i:05d}" for i in range(n)]
    columns = {
        "query_id": ids,
        "app": [cell.app] * n,
        "model": [cell.model] * n,
        "agent": [cell.agent] * n,
        "level": np.full(n, cell.level, dtype=np.int16),
        "seed": np.full(n, cell.seed, dtype=np.int64),
        "operation": ops,
        "answer_type": ["number"] * n,
        "outcome": outcome,
        "correct": correct,
        "safe": safe,
        "iterations": turns,
        "latency_s": rng.gamma(2.0, 0.002, n),
        "agent_s": agent_s,
        "error": [None if c else "synthetic" for c in correct],
        "prompt_tokens": completion * 3 if tokens else pa.nulls(n, pa.int64()),
        "completion_tokens": completion if tokens else pa.nulls(n, pa.int64()),
        "detail": ['{"synthetic":true}'] * n,
        "config_hash": ["synthetic"] * n,
        "code_version": ["synthetic"] * n,
    }
    return _fill(columns, SCHEMAS["episodes"], n)


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


def write_calls(
    data_dir: str | Path, cells: Sequence[Cell], *, seed: int = 0, calls_per_episode: int = 2
) -> list[Path]:
    """A `calls` shard per cell (model calls of LLM agents), matching `write_episodes`'
    query ids: `calls_per_episode` calls per episode, tokens/s ~ 20-60."""
    import pyarrow.parquet as pq

    root = data_root(data_dir) / "results" / "calls"
    rng = np.random.default_rng(seed)
    paths = []
    for cell in cells:
        n = cell.queries * calls_per_episode
        completion = rng.integers(20, 400, n)
        latency = rng.uniform(0.5, 5.0, n)
        index = np.arange(n)
        columns = {
            "query_id": [
                f"{cell.app}-L{cell.level}-s{cell.seed}-{i // calls_per_episode:05d}" for i in index
            ],
            "app": [cell.app] * n,
            "model": [cell.model] * n,
            "agent": [cell.agent] * n,
            "level": np.full(n, cell.level, dtype=np.int16),
            "seed": np.full(n, cell.seed, dtype=np.int64),
            "turn": (index % calls_per_episode + 1).astype(np.int16),
            "call_index": (index % calls_per_episode).astype(np.int16),
            "prompt_tokens": completion * 3,
            "completion_tokens": completion,
            "latency_s": latency,
            "tokens_per_s": rng.uniform(20, 60, n),
        }
        schema = SCHEMAS.get("calls")
        table = _fill(columns, schema, n) if schema is not None else pa.table(columns)
        path = root / cell.part / "part-0.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        paths.append(path)
    return paths
