"""Stage `generate`: a cell's queries, seeded and validated by the app, as one shard."""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig
from tqdm import tqdm

from pipeline.build import app_version, layout, make_app, queries_hash
from pipeline.capacity import check_request
from pipeline.cells import cell_from_config
from pipeline.core import App, Query, canonical_json
from pipeline.errors import QueryGenerationError
from pipeline.focus import generate_kwargs, weights
from pipeline.heartbeat import waiting
from pipeline.records import read_shard, shard_hash, shard_rows, to_table, write_shard

log = logging.getLogger(__name__)


def generate(cfg: DictConfig, app: App | None = None) -> Path:
    """Make the cell's queries shard hold at least `cfg.queries` queries of `cfg.level`
    with `cfg.seed`. A shard of the same app settings that is long enough is kept as it
    is (a cell reads its prefix); a shorter or stale one is generated again, at the
    longer of the two lengths, so no cell that used it loses its queries."""
    app = app or make_app(cfg)
    cell = cell_from_config(cfg)
    path = layout(cfg).queries(cell)
    digest = queries_hash(cfg)
    have = shard_rows(path) if shard_hash(path) == digest else 0
    if have >= cfg.queries:
        log.info("%s already holds %d >= %d queries", path, have, cfg.queries)
        return path
    count = max(cfg.queries, have)
    if not cfg.allow_repeats:
        check_request(cfg.app.name, cfg.level, count, app.capacity(cfg.level))
    focus = weights(cfg)
    rows = []
    queries = app.generate(
        cfg.level,
        cfg.seed,
        count,
        allow_repeats=bool(cfg.allow_repeats),
        **generate_kwargs(app, focus),
    )
    stored = canonical_json(focus) if focus else ""
    task = str(cfg.app.get("task", "mitigate"))
    bar = tqdm(queries, total=count, desc=f"generate {cell.query_part}", unit="q")
    with waiting(f"the next query of {cell.query_part} (drawn, then validated live)"):
        for query in bar:
            if query.task != task:
                raise QueryGenerationError(
                    f"app '{cfg.app.name}' made {query.query_id} a {query.task} query; its "
                    f"config asks for task={task}"
                )
            rows.append(query_row(query, app_version(cfg), cell.app_variant) | {"focus": stored})
    write_shard("queries", to_table("queries", rows), path, config_hash=digest)
    log.info("wrote %d queries to %s", len(rows), path)
    return path


def stored_queries(cfg: DictConfig, app: App) -> list[Query] | None:
    """The cell's first `cfg.queries` queries from its shard when the shard was made with
    the same app settings and holds that many; else None (generate them)."""
    path = layout(cfg).queries(cell_from_config(cfg))
    if shard_hash(path) == queries_hash(cfg) and shard_rows(path) >= cfg.queries:
        return read_queries(path, limit=cfg.queries)
    return None


def query_row(query: Query, app_version: str, app_variant: str) -> dict[str, object]:
    return {
        "query_id": query.query_id,
        "app": query.app,
        "level": query.level,
        "seed": query.seed,
        "app_variant": app_variant,
        "query_index": query.index,
        "query_key": query.key or None,
        "app_version": app_version,
        "env_key": query.env_key,
        "operation": query.operation,
        "size": query.size,
        "task": query.task,
        "stratum": query.stratum,
        "answer_type": query.answer_type,
        "prompt": query.prompt,
        "ground_truth": query.ground_truth_json(),
        "focus": "",
    }


def read_queries(path: Path, limit: int | None = None) -> list[Query]:
    """The queries of a shard, in index order (the first `limit` of them)."""
    import json

    table = read_shard("queries", path)
    queries = [
        Query(
            query_id=row["query_id"],
            app=row["app"],
            level=row["level"],
            seed=row["seed"],
            index=row["query_index"],
            prompt=row["prompt"],
            answer_type=row["answer_type"],
            operation=row["operation"],
            size=row["size"],
            task=row["task"],
            stratum=row["stratum"],
            ground_truth=json.loads(row["ground_truth"]),
            env_key=row["env_key"],
            key=row["query_key"] or "",
        )
        for row in table.to_pylist()
    ]
    queries.sort(key=lambda q: q.index)
    return queries[:limit] if limit is not None else queries
