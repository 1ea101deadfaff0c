"""Stage `run`: agents play a cell's queries in the app's environment, turn by turn.

The loop is the same for every app and agent: observation -> reply -> step -> next
observation, until the step says done or the app's turn limit is reached. Finished
episodes are checkpointed as chunk shards in the cell's partial folder, so a killed
run resumes where it stopped; the transcripts shard appears (atomically) only when
every query has been played.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
from omegaconf import DictConfig
from tqdm import tqdm

from pipeline.agents import Agent, Exchange
from pipeline.build import layout, make_agent, make_app, run_hash
from pipeline.cells import Cell, cell_from_config
from pipeline.core import App, Environment, Query, StepResult, StepStatus, canonical_json
from pipeline.errors import EnvironmentFailure
from pipeline.generate import read_queries
from pipeline.records import read_shard, shard_hash, to_table, write_shard

log = logging.getLogger(__name__)


class CellFailed(EnvironmentFailure):
    """A cell could not finish; what it finished is kept for the rerun."""


def run(cfg: DictConfig) -> Path:
    """Play every query of the cell; write its transcripts shard; return its path."""
    app = make_app(cfg)
    agent = make_agent(cfg, app)
    cell = cell_from_config(cfg)
    paths = layout(cfg)
    digest = run_hash(cfg, app)
    queries = read_queries(paths.queries(cell), limit=cfg.queries)
    if len(queries) < cfg.queries:
        raise CellFailed(
            f"{paths.queries(cell)} holds {len(queries)} queries, the cell needs {cfg.queries}"
        )
    out = paths.transcripts(cell)
    with Checkpoint(paths.partial(cell), digest) as checkpoint:
        failures = _play_missing(cfg, app, agent, cell, queries, checkpoint)
        if failures:
            raise CellFailed(
                f"{len(failures)} episode(s) of {cell.part} hit an environment error "
                f"(first: {failures[0]}); the {len(checkpoint.done)} finished episodes are "
                "kept and a rerun retries only the failed ones"
            )
        write_shard("transcripts", checkpoint.table(), out, config_hash=digest)
        checkpoint.clear()
    return out


def _play_missing(
    cfg: DictConfig,
    app: App,
    agent: Agent,
    cell: Cell,
    queries: list[Query],
    checkpoint: Checkpoint,
) -> list[str]:
    """Play the queries the checkpoint lacks; return the env_error failures to report."""
    todo = [q for q in queries if q.query_id not in checkpoint.done]
    if checkpoint.done:
        log.info(
            "resuming %s: %d of %d episodes already done",
            cell.part,
            len(checkpoint.done),
            len(queries),
        )
    failures: list[str] = []
    with app.environment() as env:
        for query in tqdm(todo, desc=f"run {cell.part}", unit="ep"):
            rows = play(env, agent, query, cell)
            env_error = next(
                (r["error"] for r in rows if r["status"] == StepStatus.ENV_ERROR), None
            )
            if env_error and cfg.run.env_error_policy == "fail":
                failures.append(f"{query.query_id}: {env_error}")
                continue
            checkpoint.add(rows, flush_every_s=cfg.run.flush_every_s)
    checkpoint.flush()
    return failures


def play(env: Environment, agent: Agent, query: Query, cell: Cell) -> list[dict[str, Any]]:
    """One episode; returns its transcript rows. Environment failures become env_error steps."""
    rows: list[dict[str, Any]] = []
    history: list[Exchange] = []
    try:
        with env.episode(query) as episode:
            observation = episode.observe()
            for turn in range(1, episode.max_turns + 1):
                started = time.perf_counter()
                reply = agent.reply(query, observation, history, turn)
                agent_s = time.perf_counter() - started
                result = _step(episode, reply.text)
                tokens = (reply.prompt_tokens, reply.completion_tokens)
                rows.append(_row(query, cell, turn, reply.text, result, agent_s, tokens))
                history.append(Exchange(observation, reply.text))
                if result.done or result.status is StepStatus.ENV_ERROR:
                    break
                observation = result.output
    except EnvironmentFailure as err:
        rows.append(_env_error_row(query, cell, len(rows) + 1, str(err)))
    return rows


def _step(episode: Any, reply: str) -> StepResult:
    try:
        return episode.step(reply)
    except EnvironmentFailure as err:
        return StepResult("", StepStatus.ENV_ERROR, "", error=str(err), done=True)


def _row(
    query: Query,
    cell: Cell,
    turn: int,
    reply: str,
    result: StepResult,
    agent_s: float,
    tokens: tuple[int | None, int | None] = (None, None),
) -> dict[str, Any]:
    return {
        "query_id": query.query_id,
        "app": cell.app,
        "model": cell.model,
        "agent": cell.agent,
        "level": cell.level,
        "seed": cell.seed,
        "turn": turn,
        "reply": reply,
        "action": result.action,
        "status": str(result.status),
        "output": result.output,
        "evidence": canonical_json(result.evidence),
        "error": result.error,
        "exec_s": result.exec_s,
        "agent_s": agent_s,
        "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1],
    }


def _env_error_row(query: Query, cell: Cell, turn: int, error: str) -> dict[str, Any]:
    log.error("environment failure in %s:\n%s", query.query_id, traceback.format_exc())
    failed = StepResult("", StepStatus.ENV_ERROR, "", error=error, done=True)
    return _row(query, cell, turn, "", failed, 0.0)


class Checkpoint:
    """Finished episodes of one cell, kept as chunk shards until the cell completes.

    Entering takes an exclusive lock on the cell (flock: the kernel releases it when the
    holder dies, even by kill -9), so two runs of one cell never interleave chunks.
    """

    def __init__(self, folder: Path, digest: str) -> None:
        self.folder = folder
        self.digest = digest
        self._chunks: list[pa.Table] = []
        self._pending: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self._lock: int | None = None
        self.done: set[str] = set()

    def __enter__(self) -> Checkpoint:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise CellFailed(
                f"{self.folder.name} is being run by another process (pid {holder}); "
                "wait for it or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock = fd
        self._load()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.folder.exists():
            self.flush()  # finished episodes survive Ctrl-C and errors alike
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None

    def _load(self) -> None:
        for chunk in sorted(self.folder.glob("chunk-*.parquet")):
            if shard_hash(chunk) != self.digest:
                log.warning("discarding %s: written for another config", chunk)
                chunk.unlink()
                continue
            table = read_shard("transcripts", chunk)
            self._chunks.append(table)
            self.done.update(table.column("query_id").to_pylist())

    def add(self, rows: list[dict[str, Any]], *, flush_every_s: float) -> None:
        self._pending.extend(rows)
        self.done.update(r["query_id"] for r in rows)
        if time.monotonic() - self._last_flush >= flush_every_s:
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        table = to_table("transcripts", self._pending)
        name = f"chunk-{len(self._chunks):05d}.parquet"
        write_shard("transcripts", table, self.folder / name, config_hash=self.digest)
        self._chunks.append(table)
        self._pending = []

    def table(self) -> pa.Table:
        tables = [t.replace_schema_metadata(None) for t in self._chunks]
        if not tables:
            return to_table("transcripts", [])
        merged = pa.concat_tables(tables)
        return merged.sort_by([("query_id", "ascending"), ("turn", "ascending")])

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
