"""NetGauge inside Inspect: `inspect eval pipeline/inspect_task.py@netgauge -T app=malt`.

    OPENAI_API_KEY=none inspect eval pipeline/inspect_task.py@netgauge \\
        -T app=malt -T level=1 -T queries=5 -T agent=zero_shot \\
        --model openai/smollm2-135m-instruct --model-base-url http://127.0.0.1:8000/v1

The task of an app (named `netgauge_<app>` in the log) holds the queries NetGauge itself
generates for (app, level, seed, count): the same queries shard a grid's cell reads
(`<data_dir>/results/queries/...`, generated if missing). `seed` defaults to the first seed
of `split` (`test`: 0); a seed of the other split is refused. `overrides` takes more Hydra
overrides of conf/config.yaml, space-separated (e.g. "app.max_turns=3").

The solver plays each query as NetGauge's runner does (`pipeline.runner.play`: the app's
environment, opened per sample on a worker thread; its tools and sandbox; the turn limit,
read budget and answers), with the chosen NetGauge LLM agent (`agent`: its prompts, reply
format, decoding, repair chain, diagnostics), whose model calls go to Inspect's model
(`get_model().generate`), so any Inspect provider serves it and Inspect records every
call. The scorer is NetGauge's: the app's verdict on the transcript
(`pipeline.scoring.episode_records`), as the score `netgauge` with the values `correct`,
`safe` and `score`, the outcome as its explanation, and the episode's rows of
`episodes`, `steps`, `calls` and `cells` in its metadata (`python -m analysis import-inspect`
reads them back into the Parquet tables). The context the agent fits its requests to is
`context` tokens (Inspect does not say a model's); its replies are as long as Inspect's
`--max-tokens` (default 1024 here).

A model call Inspect cannot complete (after its own retries) is the environment's failure
in NetGauge's terms: an `env_error` step, as a dead model server is in a grid.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import time
from collections.abc import Sequence
from typing import Any

import anyio.from_thread
import anyio.to_thread
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    ResponseSchema,
    get_model,
)
from inspect_ai.scorer import Score, Target, accuracy, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolChoice, ToolFunction, ToolInfo, ToolParams
from inspect_ai.util import JSONSchema
from omegaconf import DictConfig

from pipeline.build import app_version, make_agent, make_app, run_hash
from pipeline.cells import Cell, cell_from_config
from pipeline.config import compose, config_hash
from pipeline.core import App, Query
from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.generate import generate, read_queries
from pipeline.pricing import Prices
from pipeline.records import code_version
from pipeline.runner import play
from pipeline.scoring import cell_row, episode_records
from pipeline.serving.client import ChatResult, ToolCall
from pipeline.splits import SPLITS, seeds_of, split_of

SCORER = "netgauge"
ROWS = "netgauge_rows"  # the sample store's key of the transcript rows
CELL = "netgauge_cell"  # ... and of the cell the rows were played as
DEFAULT_REPLY_TOKENS = 1024
FINISH = {"max_tokens": "length", "model_length": "length"}


@task
def netgauge(
    app: str = "malt",
    level: int = 1,
    seed: int | None = None,
    split: str = "test",
    queries: int = 5,
    agent: str = "react_tools",
    context: int = 8192,
    data_dir: str = "data",
    overrides: str = "",
) -> Task:
    """The queries of one NetGauge (app, level, seed), played by an LLM agent whose model
    is Inspect's, judged by the app's scorer (module docstring)."""
    cfg = compose(
        [
            f"app={app}",
            f"agent={agent}",
            "model=none",
            f"level={level}",
            f"seed={_seed(seed, split)}",
            f"queries={queries}",
            f"data_dir={data_dir}",
            *shlex.split(overrides),
        ]
    )
    if not cfg.agent.uses_model:
        raise ConfigError(
            f"agent={agent} plays without a model; Inspect runs NetGauge's LLM agents "
            "(e.g. zero_shot, react, react_tools)"
        )
    player = Player(cfg, make_app(cfg), context)
    path = generate(cfg, player.app)
    player.queries = {q.query_id: q for q in read_queries(path, limit=queries)}
    samples = [
        Sample(
            id=q.query_id,
            input=q.prompt,
            target=q.ground_truth_json(),
            metadata={
                "query_key": q.key,
                "operation": q.operation,
                "task": q.task,
                "size": q.size,
                "answer_type": q.answer_type,
            },
        )
        for q in player.queries.values()
    ]
    return Task(
        name=f"netgauge_{cfg.app.name}",
        dataset=MemoryDataset(samples, name=f"{cfg.app.name} L{cfg.level} s{cfg.seed}"),
        solver=netgauge_agent(player),
        scorer=netgauge_scorer(player),
        version=app_version(cfg),
        metadata={"netgauge": {"app": cfg.app.name, "agent": agent, "split": split}},
    )


def _seed(seed: int | None, split: str) -> int:
    if split not in SPLITS:
        raise ConfigError(f"split={split!r}: expected one of {sorted(SPLITS)}")
    if seed is None:
        return seeds_of(split, 1)[0]
    if split_of(int(seed)) != split:
        raise ConfigError(
            f"seed={seed} belongs to the {split_of(int(seed))} split, not {split}; "
            f"seeds of {split}: {', '.join(map(str, seeds_of(split)))}, ..."
        )
    return int(seed)


class Player:
    """What the solver and scorer share: the cell's config, its app and its queries.
    (A plain class: `inspect eval` loads this file outside sys.modules, where a
    dataclass cannot resolve its annotations.)"""

    def __init__(self, cfg: DictConfig, app: App, context: int) -> None:
        self.cfg = cfg
        self.app = app
        self.context = context
        self.queries: dict[str, Query] = {}

    def cell(self, model: str) -> Cell:
        """The cell the episodes are rows of: the config's, with Inspect's model as its
        model (a path segment, so '/' becomes '--')."""
        name = re.sub(r"[^A-Za-z0-9_.-]+", "--", model)
        return dataclasses.replace(cell_from_config(self.cfg), model=name)

    def play(self, query: Query, cell: Cell, backend: InspectBackend) -> list[dict[str, Any]]:
        """One episode in an environment of its own (blocking: a worker thread's)."""
        agent = make_agent(self.cfg, self.app, models=_Models(backend))
        with self.app.environment() as env:
            return play(env, agent, query, cell, self.app)

    def records(self, query: Query, cell: Cell, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The episode's rows of `episodes`, `steps` and `calls`, and its cell's of `cells`."""
        digest = config_hash(run_hash(self.cfg), cell.model)
        episode, steps, calls = episode_records(
            self.app, cell, query, rows, digest, code_version(), Prices(self.cfg.model)
        )
        return {
            "episode": episode,
            "steps": steps,
            "calls": calls,
            "cell": cell_row(self.cfg, cell, digest),
        }


class _Models:
    """NetGauge's model pool as the agent sees it, handing out the one Inspect backend."""

    def __init__(self, backend: InspectBackend) -> None:
        self._backend = backend

    def backend(self, cfg: Any) -> InspectBackend:
        return self._backend


class InspectBackend:
    """NetGauge's ChatBackend over Inspect's model: `chat` blocks a worker thread started
    by `anyio.to_thread.run_sync` while the model's `generate` runs on Inspect's loop."""

    def __init__(self, model: Model, context: int) -> None:
        self._model = model
        self.name = str(model)
        self.context = context
        self.max_reply = model.config.max_tokens or DEFAULT_REPLY_TOKENS

    def chat(self, messages: Sequence[dict[str, str]], **options: Any) -> ChatResult:
        return anyio.from_thread.run(self._chat, list(messages), options)

    async def _chat(self, messages: list[dict[str, str]], options: dict[str, Any]) -> ChatResult:
        tools = [_tool(t["function"]) for t in options.get("tools", [])]
        config = GenerateConfig(max_tokens=self.max_reply)
        if "response_format" in options:
            spec = options["response_format"]["json_schema"]
            config = config.merge(
                GenerateConfig(
                    response_schema=ResponseSchema(
                        name=spec["name"],
                        json_schema=JSONSchema.model_validate(spec["schema"]),
                        strict=spec.get("strict"),
                    )
                )
            )
        started = time.perf_counter()
        try:
            output = await self._model.generate(
                [_message(m) for m in messages],
                tools=tools,
                tool_choice=_choice(options.get("tool_choice")) if tools else None,
                config=config,
            )
        except Exception as err:  # the model could not be reached: the environment's failure
            raise EnvironmentFailure(
                f"the Inspect model {self.name} failed: {type(err).__name__}: {err}"[:2000]
            ) from err
        latency = time.perf_counter() - started
        usage = output.usage
        completion = usage.output_tokens if usage else 0
        calls = output.message.tool_calls or []
        return ChatResult(
            text=output.message.text,
            prompt_tokens=usage.input_tokens if usage else 0,
            completion_tokens=completion,
            latency_s=latency,
            ttft_s=latency,
            tokens_per_s=completion / latency if latency > 0 else 0.0,
            finish_reason=FINISH.get(output.stop_reason, output.stop_reason),
            model=output.model,
            tool_calls=tuple(ToolCall(c.function, json.dumps(c.arguments)) for c in calls),
        )


def _message(message: dict[str, str]) -> ChatMessage:
    role, content = message["role"], message["content"]
    if role == "system":
        return ChatMessageSystem(content=content)
    if role == "assistant":
        return ChatMessageAssistant(content=content)
    return ChatMessageUser(content=content)


def _tool(function: dict[str, Any]) -> ToolInfo:
    return ToolInfo(
        name=function["name"],
        description=function.get("description", ""),
        parameters=ToolParams.model_validate(function.get("parameters", {})),
    )


def _choice(choice: Any) -> ToolChoice:
    """An OpenAI tool_choice as Inspect's."""
    if isinstance(choice, dict):
        return ToolFunction(name=choice["function"]["name"])
    return {"required": "any", "none": "none"}.get(str(choice), "auto")  # type: ignore[return-value]


@solver
def netgauge_agent(player: Player) -> Solver:
    """Plays the sample's query through NetGauge's environment with NetGauge's agent."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        query = player.queries[str(state.sample_id)]
        model = get_model()
        cell = player.cell(str(model))
        backend = InspectBackend(model, player.context)
        rows = await anyio.to_thread.run_sync(player.play, query, cell, backend)
        state.store.set(ROWS, rows)
        state.store.set(CELL, cell.as_dict())
        messages: list[ChatMessage] = [ChatMessageUser(content=query.prompt)]
        for row in rows:
            messages.append(ChatMessageAssistant(content=row["reply"], model=str(model)))
            shown = row["output"] or row["error"] or f"({row['status']})"
            messages.append(ChatMessageUser(content=shown, metadata={"status": row["status"]}))
        state.messages = messages
        state.output = ModelOutput.from_content(str(model), rows[-1]["reply"] if rows else "")
        state.completed = True
        return state

    return solve


@scorer(
    name=SCORER,
    metrics={"correct": [accuracy(), stderr()], "safe": [accuracy()], "score": [mean()]},
)
def netgauge_scorer(player: Player) -> Any:
    """The app's verdict on the episode played (NetGauge's score stage, one episode)."""

    async def score(state: TaskState, target: Target) -> Score:
        query = player.queries[str(state.sample_id)]
        cell = Cell.from_dict(state.store.get(CELL))
        rows = state.store.get(ROWS)
        records = await anyio.to_thread.run_sync(player.records, query, cell, rows)
        episode = records["episode"]
        explanation = episode["outcome"] + (f": {episode['error']}" if episode["error"] else "")
        return Score(
            value={k: float(episode[k]) for k in ("correct", "safe", "score")},
            answer=episode["answer"],
            explanation=explanation,
            metadata=records,
        )

    return score
