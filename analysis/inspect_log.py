"""Episodes as Inspect logs, written with inspect_ai's own writer, for `inspect view`;
and the logs of NetGauge's Inspect task (pipeline/inspect_task.py) back into the tables.

    python -m analysis export-inspect --where "app = 'malt' AND NOT correct" --out logs/
    inspect view --log-dir logs/
    python -m analysis import-inspect logs/*.eval      # after `inspect eval ...@netgauge`

An Inspect log is one task run by one model, so each cell (app, model, agent, level,
seed, queries, variant) of the episodes chosen is one file, `<app>_<model>_<agent>_L<level>_
s<seed>_n<queries>_<variant>.eval` (the same name again overwrites it). Each episode is a
sample (id: its query id) whose messages are the episode as played:

    user       the query's prompt (from `queries`; a note when that shard is absent)
    assistant  each turn's reply, with the action run as a tool call `act(action=...)`
    tool       what the environment returned, with the step's status as the tool error
               (parse_error -> parsing, blocked -> permission, timeout, resource_limit ->
               limit, the rest -> unknown) and the step's row (status, safe, task, ...)
               in its metadata; a reply without an action gets the feedback as a user turn

Its transcript has one info event per step (turn, status, safe, task solved) and one model
event per recorded model call (purpose, request, response, tokens, latency), and its score
`netgauge` holds `correct`, `safe` and `score` as values, the outcome and error as the
explanation and the episode's other columns as metadata. The log's metrics are plain means
over its episodes; NetGauge's own rates (distinct queries, intervals) stay in the summary.
Columns are read by name, so tables with extra columns export the same.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inspect_ai.event import InfoEvent, ModelEvent
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalPlan,
    EvalPlanStep,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall, ToolCallError

from pipeline.cells import Cell, Layout, data_root
from pipeline.core import canonical_json
from pipeline.errors import DataError
from pipeline.records import to_table, write_shard
from pipeline.trials import TRIAL_KEY
from pipeline.variants import label_of, name_of
from pipeline.views import connect

CELL = ("app", "model", "agent", "level", "seed", "queries", "variant")
SCORER = "netgauge"
TOOL_ERRORS = {
    "parse_error": "parsing",
    "blocked": "permission",
    "timeout": "timeout",
    "agent_timeout": "timeout",
    "resource_limit": "limit",
}
VALUES = ("correct", "safe", "score")


def export_inspect(data_dir: str | Path, where: str | None, out: str | Path) -> list[Path]:
    """Write the episodes matching `where` (a DuckDB condition over `episodes`) as Inspect
    logs in `out`, one per cell; return their paths. No matching episode: DataError."""
    con = connect(data_dir)
    condition = f"WHERE ({where})" if where and where.strip() else ""
    con.execute(f"CREATE TEMP TABLE chosen AS SELECT * FROM episodes {condition}")
    episodes = _rows(
        con,
        "SELECT * FROM chosen ORDER BY app, model, agent, level, seed, queries, variant, query_id",
    )
    if not episodes:
        raise DataError(f"no episode in {data_dir} matches {where!r}: nothing to export")
    on = " AND ".join(f"t.{k} = c.{k}" for k in ("query_id", *CELL))
    steps = _grouped(con, f"SELECT t.* FROM steps t JOIN chosen c ON {on} ORDER BY t.turn")
    calls = _grouped(
        con, f"SELECT t.* FROM calls t JOIN chosen c ON {on} ORDER BY t.turn, t.call_index"
    )
    prompts = {
        (r["app"], r["app_variant"], r["level"], r["seed"], r["query_id"]): r
        for r in _rows(
            con,
            "SELECT q.app, q.app_variant, q.level, q.seed, q.query_id, q.prompt, q.ground_truth "
            "FROM queries q JOIN (SELECT DISTINCT app, app_variant, level, seed, query_id "
            "FROM chosen) c USING (app, app_variant, level, seed, query_id)",
        )
    }
    cells: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in episodes:
        cells[tuple(row[k] for k in CELL)].append(row)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for cell, rows in cells.items():
        samples = [
            _sample(
                row,
                steps.get(_key(row), []),
                calls.get(_key(row), []),
                prompts.get(
                    (row["app"], row["app_variant"], row["level"], row["seed"], row["query_id"])
                ),
            )
            for row in rows
        ]
        path = folder / (_file_name(dict(zip(CELL, cell, strict=True))) + ".eval")
        write_eval_log(_log(dict(zip(CELL, cell, strict=True)), samples), str(path))
        paths.append(path)
    return paths


def _rows(con: Any, sql: str) -> list[dict[str, Any]]:
    return con.sql(sql).to_arrow_table().to_pylist()


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in ("query_id", *CELL))


def _grouped(con: Any, sql: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in _rows(con, sql):
        out[_key(row)].append(row)
    return out


def _file_name(cell: dict[str, Any]) -> str:
    name = "{app}_{model}_{agent}_L{level}_s{seed}_n{queries}_{variant}".format(**cell)
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", name)


def _sample(
    episode: dict[str, Any],
    steps: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    query: dict[str, Any] | None,
) -> EvalSample:
    prompt = query["prompt"] if query else f"(the prompt of {episode['query_id']} is not stored)"
    model = episode["model"]
    messages: list[ChatMessage] = [ChatMessageUser(content=prompt, source="input")]
    events: list[Any] = []
    by_turn: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        by_turn[call["turn"]].append(call)
    for step in steps:
        for call in by_turn.get(step["turn"], []):
            events.append(_model_event(call, model))
        messages += _turn_messages(step, model)
        events.append(InfoEvent(source="netgauge step", data=_step_summary(step)))
    tokens = ModelUsage(
        input_tokens=episode.get("prompt_tokens") or 0,
        output_tokens=episode.get("completion_tokens") or 0,
        total_tokens=(episode.get("prompt_tokens") or 0) + (episode.get("completion_tokens") or 0),
    )
    last_reply = steps[-1]["reply"] if steps else ""
    return EvalSample(
        id=episode["query_id"],
        epoch=1,
        input=prompt,
        target=(query or {}).get("ground_truth") or "",
        messages=messages,
        output=ModelOutput.from_content(model, last_reply),
        scores={SCORER: _score(episode)},
        metadata={k: episode.get(k) for k in ("task", "operation", "size", "query_key", *CELL)},
        events=events,
        model_usage={model: tokens} if episode.get("model_calls") else {},
        total_time=(episode.get("latency_s") or 0.0) + (episode.get("agent_s") or 0.0),
        working_time=(episode.get("latency_s") or 0.0) + (episode.get("agent_s") or 0.0),
    )


def _turn_messages(step: dict[str, Any], model: str) -> list[ChatMessage]:
    """A turn: the reply (its action as a tool call), then what the environment returned."""
    turn = step["turn"]
    meta = {k: v for k, v in step.items() if k not in ("reply", "output", *CELL)}
    action = step.get("action") or ""
    if not action:
        reply = ChatMessageAssistant(content=step["reply"], model=model, source="generate")
        feedback = step["output"] or step.get("error") or f"({step['status']}: no action)"
        return [reply, ChatMessageUser(content=feedback, metadata=meta)]
    call_id = f"turn-{turn}"
    reply = ChatMessageAssistant(
        content=step["reply"],
        model=model,
        source="generate",
        tool_calls=[ToolCall(id=call_id, function="act", arguments={"action": action})],
    )
    error = None
    if step["status"] != "ok":
        kind = TOOL_ERRORS.get(step["status"], "unknown")
        error = ToolCallError(kind, f"{step['status']}: {step.get('error') or ''}".strip(": "))
    result = ChatMessageTool(
        content=step["output"], tool_call_id=call_id, function="act", error=error, metadata=meta
    )
    return [reply, result]


def _step_summary(step: dict[str, Any]) -> str:
    safe = "safe" if step.get("safe") else "**UNSAFE**"
    solved = ", task solved" if step.get("task_solved") else ""
    action = (step.get("action") or "").strip().splitlines()
    shown = f" `{action[0][:120]}`{' …' if len(action) > 1 else ''} ->" if action else ""
    line = f"turn {step['turn']}:{shown} `{step['status']}`, {safe}{solved}"
    if step.get("task") is not None:
        line += f" (task `{step['task']}`, attempt {step.get('attempt')})"
    if step.get("error"):
        line += f"\n\n{step['error']}"
    return line


def _model_event(call: dict[str, Any], model: str) -> ModelEvent:
    served = call.get("served_model") or model
    output = ModelOutput.from_content(served, call.get("response") or "")
    prompt, completion = call.get("prompt_tokens") or 0, call.get("completion_tokens") or 0
    output.usage = ModelUsage(
        input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
    )
    return ModelEvent(
        model=served,
        role=call.get("purpose"),
        input=[ChatMessageUser(content=call.get("request") or "")],
        tools=[],
        tool_choice="none",
        config=GenerateConfig(),
        output=output,
        working_time=call.get("latency_s"),
    )


def _score(episode: dict[str, Any]) -> Score:
    explanation = episode["outcome"]
    if episode.get("error"):
        explanation += f": {episode['error']}"
    shown = {k: v for k, v in episode.items() if k not in (*VALUES, "detail")}
    shown["detail"] = _json(episode.get("detail"))
    return Score(
        value={k: float(episode[k]) for k in VALUES},
        answer=episode.get("answer"),
        explanation=explanation,
        metadata=shown,
    )


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text


def _log(cell: dict[str, Any], samples: list[EvalSample]) -> EvalLog:
    now = datetime.now(UTC).isoformat()
    model = cell["model"]
    metrics = []
    for name in VALUES:
        values = [float((s.scores or {})[SCORER].value[name]) for s in samples]  # type: ignore[index]
        mean = sum(values) / len(values)
        metrics.append(
            EvalScore(
                name=name,
                scorer=SCORER,
                scored_samples=len(values),
                metrics={"mean": EvalMetric(name="mean", value=mean)},
            )
        )
    usage: dict[str, ModelUsage] = {}
    for sample in samples:
        for name, used in sample.model_usage.items():
            usage[name] = usage[name] + used if name in usage else used
    return EvalLog(
        status="success",
        eval=EvalSpec(
            created=now,
            task=f"netgauge_{cell['app']}",
            task_id=_file_name(cell),
            task_args={k: cell[k] for k in ("app", "agent", "level", "seed", "queries", "variant")},
            solver=cell["agent"],
            dataset=EvalDataset(
                name=f"{cell['app']} L{cell['level']} s{cell['seed']}",
                samples=len(samples),
                sample_ids=[str(s.id) for s in samples],
            ),
            model=f"netgauge/{model}",
            config=EvalConfig(),
            metadata={"exported_from": "netgauge", **{k: cell[k] for k in CELL}},
        ),
        plan=EvalPlan(steps=[EvalPlanStep(solver=cell["agent"])]),
        results=EvalResults(
            total_samples=len(samples), completed_samples=len(samples), scores=metrics
        ),
        stats=EvalStats(started_at=now, completed_at=now, model_usage=usage),
        samples=samples,
    )


def _as_trial(records: dict[str, Any], epoch: int) -> dict[str, Any]:
    """Epoch e's rows as NetGauge's trial t = e - 1: for t > 0 the variant of its own that
    a grid's trial t is (the cell's differences plus `trial=t`), `trial` t and `trial_of`
    the variant of trial 0, so pass@k, pass^k and the leaderboard group the epochs as they
    group trials. Unlike a grid's trial, an epoch is sampled by Inspect's provider with
    no seed NetGauge derives (pipeline/trials.py): replaying it is Inspect's business."""
    trial = epoch - 1
    if trial <= 0:
        return records
    first = records["episode"]["variant"]
    differences = {**json.loads(records["cell"]["differences"] or "{}"), TRIAL_KEY: trial}
    variant = name_of(differences)
    cell = records["cell"] | {
        "variant": variant,
        "variant_label": label_of(differences),
        "differences": canonical_json(differences),
    }
    return {
        "episode": records["episode"] | {"variant": variant, "trial": trial, "trial_of": first},
        "steps": [row | {"variant": variant} for row in records["steps"]],
        "calls": [row | {"variant": variant} for row in records["calls"]],
        "cell": cell,
    }


def import_inspect(logs: Iterable[str | Path], data_dir: str | Path) -> list[Cell]:
    """Write the episodes of Inspect logs made by NetGauge's Inspect task
    (pipeline/inspect_task.py) into the data directory's `episodes`, `steps`, `calls` and
    `cells` shards, one cell per (app, Inspect model, agent, level, seed, queries,
    variant), rows exactly as its scorer judged them; return the cells written. A sample
    the scorer did not judge (it failed) is named in the DataError raised. Epoch e of a
    sample is the repeated trial e - 1 of its cell (`_as_trial`)."""
    cells: dict[Cell, dict[str, list[dict[str, Any]]]] = {}
    for location in logs:
        log = read_eval_log(str(location))
        for sample in log.samples or []:
            score = (sample.scores or {}).get(SCORER)
            if score is None or not score.metadata or "episode" not in score.metadata:
                why = sample.error.message.splitlines()[0] if sample.error else "no netgauge score"
                raise DataError(
                    f"{location}: sample {sample.id} holds no NetGauge verdict ({why}); "
                    "only logs of pipeline/inspect_task.py whose samples all finished import"
                )
            records = _as_trial(score.metadata, sample.epoch)
            episode = records["episode"]
            cell = Cell(*(episode[k] for k in CELL), app_variant=episode.get("app_variant", "base"))
            tables = cells.setdefault(cell, {"episodes": [], "steps": [], "calls": [], "cells": []})
            tables["episodes"].append(episode)
            tables["steps"] += records["steps"]
            tables["calls"] += records["calls"]
            tables["cells"][:] = [records["cell"]]
    layout = Layout(data_root(data_dir))
    for cell, tables in cells.items():
        digest = tables["episodes"][0]["config_hash"]
        for table, path in (
            ("cells", layout.cells(cell)),
            ("calls", layout.calls(cell)),
            ("steps", layout.steps(cell)),
            ("episodes", layout.episodes(cell)),
        ):
            write_shard(table, to_table(table, tables[table]), path, config_hash=digest)
    return list(cells)
