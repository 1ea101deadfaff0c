"""Stage `generate`: a cell's queries, seeded and validated by the app, as one shard."""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig
from tqdm import tqdm

from pipeline.build import layout, make_app, queries_hash
from pipeline.cells import cell_from_config
from pipeline.core import App, Query
from pipeline.records import read_shard, to_table, write_shard

log = logging.getLogger(__name__)


def generate(cfg: DictConfig, app: App | None = None) -> Path:
    """Generate `cfg.queries` queries of `cfg.level` with `cfg.seed`; write the shard."""
    app = app or make_app(cfg)
    cell = cell_from_config(cfg)
    path = layout(cfg).queries(cell)
    rows = []
    queries = app.generate(cfg.level, cfg.seed, cfg.queries)
    for query in tqdm(queries, total=cfg.queries, desc=f"generate {cell.query_part}", unit="q"):
        rows.append(query_row(query, app.version))
    write_shard("queries", to_table("queries", rows), path, config_hash=queries_hash(cfg, app))
    log.info("wrote %d queries to %s", len(rows), path)
    return path


def query_row(query: Query, app_version: str) -> dict[str, object]:
    return {
        "query_id": query.query_id,
        "app": query.app,
        "level": query.level,
        "seed": query.seed,
        "query_index": query.index,
        "app_version": app_version,
        "env_key": query.env_key,
        "operation": query.operation,
        "answer_type": query.answer_type,
        "prompt": query.prompt,
        "ground_truth": query.ground_truth_json(),
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
            ground_truth=json.loads(row["ground_truth"]),
            env_key=row["env_key"],
        )
        for row in table.to_pylist()
    ]
    queries.sort(key=lambda q: q.index)
    return queries[:limit] if limit is not None else queries
