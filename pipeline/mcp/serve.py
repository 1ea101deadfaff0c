"""Serving one episode to a person's MCP client: `python -m pipeline.mcp app=… level=… seed=…`.

The query is the cell's query number `index` (default 0), or the one named by `query=<id>`,
generated (or read) as a cell would. The episode's MCP server listens on loopback; its URL
is printed, and the episode is played like any agent's (runner.play: same tools, same
limits, same typed outcomes) until the app says done, the client calls `stop`, the turn
budget is used or a time limit passes. Then the verdict is printed. Nothing is written to
the results: this is for trying the tools by hand.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from pipeline.build import cell_from_config, layout, make_app
from pipeline.config import compose
from pipeline.core import StepResult, StepStatus
from pipeline.errors import ConfigError
from pipeline.generate import generate, read_queries
from pipeline.mcp.agent import MCPAgent
from pipeline.mcp.config import MCPAgentConfig
from pipeline.runner import play
from pipeline.scoring import judge

OWN_KEYS = ("index", "query", "turn_timeout_s", "episode_timeout_s")


def split_arguments(argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(Hydra overrides for the cell, this command's own keys)."""
    overrides, own = [], {}
    for item in argv:
        key, sep, value = item.partition("=")
        if sep and key in OWN_KEYS:
            own[key] = value
        else:
            overrides.append(item)
    return overrides, own


def serve(argv: Sequence[str], out: TextIO = sys.stdout) -> dict[str, Any]:
    """Play one episode with a person's MCP client; print and return its verdict."""

    overrides, own = split_arguments(argv)
    index = _integer(own.get("index", "0"), "index")
    agent_cfg = MCPAgentConfig(  # checked before any query is generated
        name="person",
        turn_timeout_s=_seconds(own.get("turn_timeout_s", "1800"), "turn_timeout_s"),
        episode_timeout_s=_seconds(own.get("episode_timeout_s", "14400"), "episode_timeout_s"),
    )
    agent_cfg.validate()
    cfg = compose([*overrides, f"queries={index + 1}"] if "query" not in own else overrides)
    app = make_app(cfg)
    generate(cfg, app)
    queries = read_queries(layout(cfg).queries(cell_from_config(cfg)))
    query = _pick(queries, index, own.get("query"))

    def announce(url: str) -> None:
        print(f"query {query.query_id}: MCP server (streamable HTTP) at\n  {url}", file=out)
        print(
            "connect your MCP client; the episode ends when the task is done, at stop, "
            "or at the turn budget",
            file=out,
            flush=True,
        )

    agent = MCPAgent(agent_cfg, app, announce=announce)
    with app.environment() as env:
        rows = play(env, agent, query, cell_from_config(cfg), app)
    steps = [
        StepResult(
            r["action"],
            StepStatus(r["status"]),
            r["output"],
            json.loads(r["evidence"]),
            error=r["error"],
            exec_s=r["exec_s"],
            answer=json.loads(r["answer"]) if r["answer"] else None,
        )
        for r in rows
    ]
    verdict = judge(app, query, steps)
    result = {
        "query_id": query.query_id,
        "outcome": str(verdict.outcome),
        "correct": verdict.correct,
        "safe": verdict.safe,
        "turns": len(rows),
        "error": verdict.error,
    }
    print(json.dumps(result), file=out, flush=True)
    return result


def _seconds(value: str, key: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{key}={value!r} is not a number of seconds (e.g. {key}=600)") from None


def _integer(value: str, key: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise ConfigError(f"{key}={value!r}: expected an integer >= 0")
    return number


def _pick(queries: list[Any], index: int, query_id: str | None) -> Any:
    if query_id is None:
        return queries[index]
    for query in queries:
        if query.query_id == query_id:
            return query
    raise ConfigError(
        f"query={query_id!r} is not among the cell's {len(queries)} queries "
        f"({queries[0].query_id} ...); set level, seed and queries to reach it"
    )
