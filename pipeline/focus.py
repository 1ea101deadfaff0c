"""Failure-driven sampling (NetArena §5.2): draw more of what an agent failed.

With `focus.results=<data dir of an earlier run>`, a cell's queries are drawn with a
weight per operation label (the template or fault combination, `episodes.operation`)
instead of uniformly:

    weight(op) = (failure rate of op in that run + smoothing) ** strength

over the earlier run's episodes of the same app and level (and of `focus.agent`,
"model/agent", when set; every agent otherwise). An operation the earlier run never
played keeps weight 1.0 as the app treats missing labels. The weights are part of the
queries' identity (the app variant, the queries hash) and are stored in every query row
(`queries.focus`: the run they came from, the agent, the weights), so a "hard set" for
an agent is reproducible: the same earlier results give the same weights and the same
queries, byte for byte. The settings' schema is `pipeline.config.FocusConfig`.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError, DataError
from pipeline.views import connect

DECIMALS = 6  # weights are rounded so equal runs give equal bytes


def weights(cfg: Any) -> dict[str, Any] | None:
    """The focus of a composed config: {"results", "agent", "weights"}, or None when off."""
    focus = cfg.get("focus")
    if focus is None or focus.get("results") is None:
        return None
    results = Path(str(focus.results))
    if not (results / "results").is_dir():
        raise DataError(
            f"focus.results={focus.results}: no results/ folder there; it must be the "
            "data directory of an earlier run"
        )
    where, params = "app = $app AND level = $level", {"app": cfg.app.name, "level": cfg.level}
    if focus.agent:
        model, agent = str(focus.agent).split("/")
        where += " AND model = $model AND agent = $agent"
        params |= {"model": model, "agent": agent}
    rows = (
        connect(results)
        .execute(
            f"SELECT operation, avg((NOT correct)::INT) FROM episodes WHERE {where} "
            "GROUP BY operation ORDER BY operation",
            params,
        )
        .fetchall()
    )
    if not rows:
        raise DataError(
            f"focus.results={focus.results} holds no episodes of app {cfg.app.name} level "
            f"{cfg.level}" + (f" by {focus.agent}" if focus.agent else "")
        )
    found = {
        op: round((rate + float(focus.smoothing)) ** float(focus.strength), DECIMALS)
        for op, rate in rows
    }
    return {"results": str(results.resolve()), "agent": focus.agent, "weights": found}


def generate_kwargs(app: Any, focus: dict[str, Any] | None) -> dict[str, Any]:
    """The `weights` argument for `app.generate`, checking the app can take it."""
    if focus is None:
        return {}
    accepts = inspect.signature(app.generate).parameters
    if "weights" not in accepts:
        raise ConfigError(
            f"app '{app.name}' does not support failure-driven sampling (its generate() "
            "takes no weights); unset focus.results"
        )
    return {"weights": focus["weights"]}
