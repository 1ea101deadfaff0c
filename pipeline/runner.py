"""Stage `run`: agents play a cell's queries in the app's environment, turn by turn.

The loop is the same for every app and agent: observation -> reply -> step -> next
observation, until the step says done or the app's turn limit is reached. Finished
episodes are checkpointed as chunk shards in the cell's partial folder, so a killed
run resumes where it stopped; the transcripts shard appears (atomically) only when
every query has been played.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from tqdm import tqdm

from pipeline import answers, untrusted
from pipeline.agents import Agent, Reply, agent_episode
from pipeline.answers import AnswerSpec
from pipeline.build import cell_config, layout, make_agent, make_app, run_hash
from pipeline.cells import Cell, Layout, cell_from_config, data_root
from pipeline.checkpoint import CellFailed, Checkpoint
from pipeline.core import App, Environment, Query, StepResult, StepStatus, canonical_json
from pipeline.costlimit import CostGuard
from pipeline.derive import DERIVED_FROM, prefix_source
from pipeline.errors import AgentFailure, AgentStopped, EnvironmentFailure, NetGaugeError
from pipeline.generate import read_queries
from pipeline.llm.models import ModelPool
from pipeline.plan import read_plan
from pipeline.play import EpisodeLoop, Shown, environment_failure, played
from pipeline.records import shard_hash, write_shard

log = logging.getLogger(__name__)

__all__ = ["CellFailed", "Checkpoint", "play", "run"]


def run(cfg: DictConfig, models: Any = None, share: Budget | None = None) -> Path:
    """Play every query of the cell; write its transcripts shard; return its path.

    `models` is a `pipeline.llm.models.ModelPool` shared by the cells of one model; a
    cell whose agent needs a model and gets none opens (and closes) its own. `share` is
    an episode budget shared with other cells playing at the same time (`run_model`).
    """
    with contextlib.ExitStack() as stack:
        if cfg.agent.uses_model and models is None:
            models = stack.enter_context(ModelPool(layout(cfg).root))
        return _run(cfg, models, share)


class Budget:
    """A cell's share of its model job: the episode slots every cell of the job draws from
    (at most the model's in-flight count play at once), `halt`, set for every cell when
    the job is interrupted (each finishes the episodes it is playing), and `drained`, set
    when this cell has handed out its last query, so the next cell starts while the last,
    slow episodes of this one finish and the server keeps its batch full."""

    def __init__(self, slots: threading.BoundedSemaphore, halt: threading.Event) -> None:
        self.slots = slots
        self.halt = halt
        self.drained = threading.Event()


def run_model(grid: str, model: str, data_dir: str) -> list[Path]:
    """Play every cell of plan `grid` (its file, written by the plan stage) that uses
    `model`, on one served instance of it.

    Cells start in the plan's order, each when the one before has handed out its last
    query; over all cells at most the model's in-flight count of episodes play at once.
    Cells whose transcripts are already up to date are skipped, so a rerun after a crash
    resumes with the cells that did not finish (each from its checkpoint). A failing cell
    does not stop the others; the first failure is raised once every cell has stopped.
    """

    cells = [c for c in read_plan(data_dir, grid) if c.model == model]
    if not cells:
        raise CellFailed(f"plan '{grid}' has no cell with model '{model}'")
    paths = Layout(data_root(data_dir))
    configs = [(cell_config(cell, data_dir), paths.transcripts(cell)) for cell in cells]
    todo = [cfg for cfg, path in configs if shard_hash(path) != run_hash(cfg)]
    errors: list[BaseException] = []
    if todo:
        slots = threading.BoundedSemaphore(max(workers_for(cfg) for cfg in todo))
        halt = threading.Event()
        with ModelPool(paths.root) as models:
            started: list[threading.Thread] = []
            try:
                for cfg in todo:
                    share = Budget(slots, halt)
                    thread = threading.Thread(
                        target=_run_cell,
                        args=(cfg, models, share, errors),
                        name=f"cell-{len(started)}",
                    )
                    thread.start()
                    started.append(thread)
                    share.drained.wait()
                for thread in started:
                    thread.join()
            except BaseException:  # Ctrl-C: every cell stops after the episodes it plays,
                halt.set()  # and the server stops only once no cell is using it
                for thread in started:
                    thread.join()
                raise
    if errors:
        if len(errors) > 1:
            log.error("%d cells of model '%s' failed; raising the first", len(errors), model)
        raise errors[0]
    return [path for _, path in configs]


def _run_cell(cfg: DictConfig, models: Any, share: Budget, errors: list[BaseException]) -> None:
    try:
        run(cfg, models, share)
    except BaseException as err:  # run_model raises it once every cell has stopped
        log.error("cell %s failed: %s", cell_from_config(cfg).part, err)
        errors.append(err)
    finally:
        share.drained.set()


def _run(cfg: DictConfig, models: Any, share: Budget | None = None) -> Path:
    cell = cell_from_config(cfg)
    paths = layout(cfg)
    digest = run_hash(cfg)
    out = paths.transcripts(cell)
    if shard_hash(out) == digest:  # played with this config already; the DAG reruns the
        # job when the queries shard grew (a direct run of more queries): nothing to play
        log.info("%s: transcripts up to date, none played", cell.part)
        return out
    app = make_app(cfg)
    agent = make_agent(cfg, app, models)
    queries = read_queries(paths.queries(cell), limit=cfg.queries)
    if len(queries) < cfg.queries:
        raise CellFailed(
            f"{paths.queries(cell)} holds {len(queries)} queries, the cell needs {cfg.queries}"
        )
    with Checkpoint(paths.partial(cell), digest) as checkpoint:
        derived = prefix_source(cfg, cell, queries, paths)
        if derived is not None:  # a finished larger cell played these (pipeline/derive.py)
            source = derived.source.part
            extra = {DERIVED_FROM: source}
            write_shard("transcripts", derived.table, out, config_hash=digest, extra=extra)
            checkpoint.clear()
            log.info("%s: %d episodes taken from %s, none played", cell.part, len(queries), source)
            return out
        failures = _play_missing(cfg, app, agent, cell, queries, checkpoint, share)
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
    share: Budget | None = None,
) -> list[str]:
    """Play the queries the checkpoint lacks; return the env_error failures to report.

    Episodes run on `workers` threads, each with its own environment (opened on that
    thread with its first query, closed when the queries run out); this thread
    checkpoints their rows as they finish. Under a `share`, an episode also holds one of
    the job's slots while it plays.
    """
    todo: queue.Queue[Query] = queue.Queue()
    for query in queries:
        if query.query_id not in checkpoint.done:
            todo.put(query)
    if checkpoint.done:
        log.info(
            "resuming %s: %d of %d episodes already done",
            cell.part,
            len(checkpoint.done),
            len(queries),
        )
    total = todo.qsize()  # read before the workers start taking from it
    workers = max(1, min(workers_for(cfg), total))
    results: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    guard = CostGuard.of(cfg)  # model.cost_limit: no episode starts once it is reached
    if guard is not None and checkpoint.done:
        guard.add(checkpoint.table().to_pylist())

    def worker() -> None:
        try:
            with contextlib.ExitStack() as stack:
                env: Environment | None = None
                while not (stop.is_set() or (guard and guard.reached) or _halted(share)):
                    with share.slots if share else contextlib.nullcontext():
                        try:
                            query = todo.get_nowait()
                        except queue.Empty:
                            return
                        if share and todo.empty():
                            share.drained.set()
                        if env is None:
                            env = stack.enter_context(app.environment())
                        rows = play(env, agent, query, cell, app)
                        if guard is not None:  # counted before this worker takes another
                            guard.add(rows)
                        results.put(("rows", rows))
        except BaseException as err:  # handed to the main thread, which re-raises it
            results.put(("error", err))
        finally:
            results.put(("done", None))

    threads = [
        threading.Thread(target=worker, name=f"episode-{i}", daemon=True) for i in range(workers)
    ]
    failures: list[str] = []
    error: BaseException | None = None
    for thread in threads:
        thread.start()
    try:
        with tqdm(total=total, desc=f"run {cell.part}", unit="ep") as bar:
            running = workers
            while running:
                kind, payload = results.get()
                if kind == "done":
                    running -= 1
                elif kind == "error":
                    error = error or payload
                    stop.set()
                else:
                    bar.update()
                    failure = _env_error(payload)
                    if failure and cfg.run.env_error_policy == "fail":
                        failures.append(failure)
                        continue
                    checkpoint.add(payload, flush_every_s=cfg.run.flush_every_s)
            if guard is not None and guard.reached and not _halted(share):
                for query, ended in guard.not_started(todo, cell.part):
                    checkpoint.add([_row(query, cell, 1, Reply(""), ended, 0.0)], flush_every_s=0)
                    bar.update()
                if share:
                    share.drained.set()
    finally:
        stop.set()  # on Ctrl-C too: workers finish their episode and close their env
        for thread in threads:
            thread.join(timeout=60)
    if error is not None:
        raise error
    checkpoint.flush()
    if bar.n < total:  # halted by the job: the episodes played are kept, the shard is not
        raise CellFailed(
            f"{cell.part} stopped after {bar.n} of {total} episodes; a rerun plays the rest"
        )
    return failures


def _halted(share: Budget | None) -> bool:
    return share is not None and share.halt.is_set()


def workers_for(cfg: DictConfig) -> int:
    """Episodes at once: run.concurrency, or the model's requests in flight if larger."""
    if cfg.agent.uses_model:
        return max(cfg.run.concurrency, cfg.model.max_in_flight)
    return cfg.run.concurrency


def _env_error(rows: list[dict[str, Any]]) -> str | None:
    for row in rows:
        if row["status"] == StepStatus.ENV_ERROR:
            return f"{row['query_id']}: {row['error']}"
    return None


def play(
    env: Environment, agent: Agent, query: Query, cell: Cell, app: App | None = None
) -> list[dict[str, Any]]:
    """One episode; returns its transcript rows. Environment failures become env_error
    steps (whatever a step raised: pipeline/play.py); an agent that cannot reply
    (AgentFailure) a step of its status, which ends the episode (one that stopped by itself
    after acting adds none), and so does an agent whose own code raised on what it got."""
    rows: list[dict[str, Any]] = []
    try:
        with played(env, query, answers=answer_spec(app, query)) as loop:
            with agent_episode(agent, query, loop.max_turns or 0, loop.diagnose) as end:
                while not loop.over:
                    turn = loop.turn + 1
                    started = time.perf_counter()
                    try:
                        reply = agent.reply(query, loop.observation, list(loop.history), turn)
                    except AgentFailure as err:  # the agent cannot reply any more
                        agent_s = time.perf_counter() - started
                        end.reason = _agent_ended(rows, query, cell, turn, err, agent_s, loop)
                        break
                    except NetGaugeError:  # the environment's or a model server's; a config's
                        raise
                    except Exception as err:  # the agent's own code: a typed step, logged
                        agent_s = time.perf_counter() - started
                        failed = _agent_raised(err)
                        end.reason = _agent_ended(rows, query, cell, turn, failed, agent_s, loop)
                        break
                    agent_s = time.perf_counter() - started
                    result = loop.step(reply.text)
                    rows.append(_row(query, cell, turn, reply, result, agent_s, loop))
                else:
                    end.reason = _why_over(loop)
                end.observation = loop.observation
            _late_diagnostics(rows, loop)
    except EnvironmentFailure as err:
        log.error("environment failure in %s: %s", query.query_id, err, exc_info=err)
        rows.append(_env_error_row(query, cell, len(rows) + 1, str(err)))
    except NetGaugeError:  # a wrong config or input: the cell fails, naming it
        raise
    except Exception as err:  # opening, observing or closing the episode; traceback logged
        failure = environment_failure(err, f"the episode of {query.query_id}")
        rows.append(_env_error_row(query, cell, len(rows) + 1, str(failure)))
    return rows


def _agent_raised(err: Exception) -> AgentFailure:
    """An agent's own code raised on what it was sent (a reply it could not read, a peer's
    message it could not decode): the agent failed, not the environment."""
    log.error("the agent raised %s", type(err).__name__, exc_info=err)
    return AgentFailure(f"the agent raised {type(err).__name__}: {err}"[:2000])


def answer_spec(app: App | None, query: Query) -> AnswerSpec | None:
    return answers.answer_spec(app, query) if app is not None else None


def _late_diagnostics(rows: list[dict[str, Any]], loop: EpisodeLoop) -> None:
    """Diagnostics run after the last step (the agent then stopped) join its row."""
    if rows and loop.pending.diagnostics:
        rows[-1]["diagnostics"] += loop.pending.diagnostics
        rows[-1]["diagnostic_bytes"] += loop.pending.diagnostic_bytes
        loop.pending = Shown()


def _why_over(loop: EpisodeLoop) -> str:
    last = loop.steps[-1] if loop.steps else None
    if last is not None and last.status is StepStatus.ENV_ERROR:
        return "the environment failed"
    if last is not None and last.done and not loop.at_limit:
        return "the task is done"
    return f"the turn budget ({loop.max_turns}) is used up"


def _agent_ended(
    rows: list[dict[str, Any]],
    query: Query,
    cell: Cell,
    turn: int,
    err: AgentFailure,
    agent_s: float,
    loop: EpisodeLoop,
) -> str:
    """Record why the agent gave no reply; return the reason shown to it."""
    if isinstance(err, AgentStopped) and rows:
        last = rows[-1]  # nothing to judge: its calls join the last step's
        calls = [*json.loads(last["calls"]), *err.calls]
        last["calls"] = canonical_json(calls)
        if err.calls:
            last["prompt_tokens"], last["completion_tokens"] = _tokens(calls)
        return f"you stopped: {err}"
    status = StepStatus(err.status)
    reason = f"stopped before any action: {err}" if isinstance(err, AgentStopped) else str(err)
    ended = StepResult("", status, "", error=reason[:2000], done=True)
    tokens = _tokens(err.calls)
    reply = Reply("", *tokens, calls=err.calls)
    rows.append(_row(query, cell, turn, reply, ended, agent_s, loop, Shown()))
    return f"{status}: {reason}"


def _tokens(calls: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """The calls' prompt and completion tokens, summed where reported (None: none were)."""
    out = []
    for key in ("prompt_tokens", "completion_tokens"):
        values = [c[key] for c in calls if c.get(key) is not None]
        out.append(sum(values) if values else None)
    return out[0], out[1]


def _row(
    query: Query,
    cell: Cell,
    turn: int,
    reply: Reply,
    result: StepResult,
    agent_s: float,
    loop: EpisodeLoop | None = None,
    shown: Shown | None = None,
) -> dict[str, Any]:
    """One transcript row. `shown` defaults to what the loop's last step showed (a step
    the loop did not play, e.g. the agent's failure, shows nothing)."""
    if shown is None:
        shown = loop.shown[-1] if loop is not None and loop.shown else Shown()
    return {
        "query_id": query.query_id,
        **cell.columns(),
        "turn": turn,
        "reply": untrusted.stored_reply(reply.text),
        "action": result.action,
        "status": str(result.status),
        "output": result.output,
        "evidence": canonical_json(result.evidence),
        "error": result.error,
        "exec_s": result.exec_s,
        "agent_s": agent_s,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "calls": canonical_json(reply.calls),
        "answer": canonical_json(result.answer) if result.answer is not None else None,
        "bytes_out": shown.bytes_out,
        "diagnostics": shown.diagnostics,
        "diagnostic_bytes": shown.diagnostic_bytes,
        "turn_budget": (loop.max_turns or 0) if loop is not None else 0,
        "read_budget": loop.read_budget if loop is not None else None,
    }


def _env_error_row(query: Query, cell: Cell, turn: int, error: str) -> dict[str, Any]:
    failed = StepResult("", StepStatus.ENV_ERROR, "", error=error, done=True)
    return _row(query, cell, turn, Reply(""), failed, 0.0)
