"""Cells of a grid and where their files live.

A cell is (app, model, agent, level, seed, queries, variant): the readable cell key plus
the variant, which names every other result-changing setting (pipeline/variants.py).
Every path is a pure function of the cell, in hive layout, so the DAG and direct runs
write the same shards and every path field is a DuckDB column:

    <data>/results/queries/app=A/app_variant=V/level=L/seed=S/part-0.parquet
    <data>/results/<table>/app=A/model=M/agent=G/level=L/seed=S/queries=N/variant=V/part-0.parquet
        for <table> in episodes, steps, calls, cells
    <data>/work/transcripts/<same cell part>/part-0.parquet
    <data>/work/partial/<same cell part>/chunk-NNNNN.parquet
    <data>/plans/<grid>.json, <data>/summaries/<grid>.{parquet,md}, <data>/logs/...
    <data>/cache/<app>/... (or $NETGAUGE_CACHE_DIR/<app>/...)
    <data>/cache/responses/<2 hex>/<sha256>.json (models with cache: true)
    <data>/report/index.html (figures/, tables/ beside it)

A queries shard depends on the app's settings only (`app_variant`) and holds the longest
query list asked of it so far: a cell of n queries reads its first n (smaller sets are
prefixes of larger ones).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from omegaconf import DictConfig

from pipeline.config import check_choice, data_root
from pipeline.variants import BASE, variant_of

__all__ = [
    "NO_MODEL",
    "Cell",
    "Layout",
    "cell_from_config",
    "cell_matches",
    "data_root",
    "parse_cell",
]

NO_MODEL = "none"
CACHE_DIR_ENV = "NETGAUGE_CACHE_DIR"  # where Layout.cache lives, if not <data>/cache


@dataclass(frozen=True, order=True)
class Cell:
    app: str
    model: str
    agent: str
    level: int
    seed: int
    queries: int
    variant: str = BASE
    app_variant: str = BASE
    # The overrides that make the variant (not part of the identity: the variant is).
    overrides: tuple[str, ...] = field(default=(), compare=False)

    @property
    def query_part(self) -> str:
        return f"app={self.app}/app_variant={self.app_variant}/level={self.level}/seed={self.seed}"

    @property
    def part(self) -> str:
        return (
            f"app={self.app}/model={self.model}/agent={self.agent}"
            f"/level={self.level}/seed={self.seed}/queries={self.queries}/variant={self.variant}"
        )

    @property
    def key(self) -> tuple[str, str, str, int, int, int, str]:
        return (
            self.app, self.model, self.agent, self.level, self.seed, self.queries, self.variant
        )  # fmt: skip

    def overrides_all(self) -> list[str]:
        """Hydra overrides that compose this cell's config."""
        return [
            f"app={self.app}",
            f"agent={self.agent}",
            f"model={self.model}",
            f"level={self.level}",
            f"seed={self.seed}",
            f"queries={self.queries}",
            *self.overrides,
        ]

    def columns(self) -> dict[str, object]:
        """The cell's columns in every result row."""
        return {
            "app": self.app,
            "model": self.model,
            "agent": self.agent,
            "level": self.level,
            "seed": self.seed,
            "queries": self.queries,
            "variant": self.variant,
        }

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["overrides"] = list(self.overrides)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Cell:
        data = dict(data)
        data["overrides"] = tuple(data.get("overrides") or ())  # type: ignore[arg-type]
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Layout:
    """Paths under one data directory."""

    root: Path

    def queries(self, cell: Cell) -> Path:
        return self.root / "results" / "queries" / cell.query_part / "part-0.parquet"

    def transcripts(self, cell: Cell) -> Path:
        return self.root / "work" / "transcripts" / cell.part / "part-0.parquet"

    def partial(self, cell: Cell) -> Path:
        return self.root / "work" / "partial" / cell.part

    def episodes(self, cell: Cell) -> Path:
        return self.root / "results" / "episodes" / cell.part / "part-0.parquet"

    def steps(self, cell: Cell) -> Path:
        return self.root / "results" / "steps" / cell.part / "part-0.parquet"

    def calls(self, cell: Cell) -> Path:
        return self.root / "results" / "calls" / cell.part / "part-0.parquet"

    def cells(self, cell: Cell) -> Path:
        return self.root / "results" / "cells" / cell.part / "part-0.parquet"

    def plan(self, grid: str) -> Path:
        return self.root / "plans" / f"{grid}.json"

    def summary(self, grid: str) -> Path:
        return self.root / "summaries" / f"{grid}.parquet"

    def summary_text(self, grid: str) -> Path:
        return self.root / "summaries" / f"{grid}.md"

    @property
    def report(self) -> Path:
        return self.root / "report" / "index.html"

    def log(self, stage: str, name: str) -> Path:
        return self.root / "logs" / stage / f"{name}.log"

    @property
    def cache(self) -> Path:
        """Derived, content-addressed files (capacities, parsed topologies): every entry is
        named by a fingerprint of what it depends on, so data directories may share one
        (`$NETGAUGE_CACHE_DIR`) and compute each entry once."""
        shared = os.environ.get(CACHE_DIR_ENV)
        return Path(shared) if shared else self.root / "cache"


def cell_from_config(cfg: DictConfig) -> Cell:
    """The cell a composed (single-run) config describes, its variant computed from it."""
    model = cfg.model.name if cfg.agent.uses_model else NO_MODEL
    variant = variant_of(cfg)
    return Cell(
        cfg.app.name,
        model,
        cfg.agent.name,
        cfg.level,
        cfg.seed,
        cfg.queries,
        variant.name,
        variant.app_variant,
    )


def cell_matches(cell: Cell, entry: dict[str, object]) -> bool:
    """Whether a grid's exclude entry (some cell keys -> values) matches `cell`."""
    return all(str(getattr(cell, key)) == str(value) for key, value in entry.items())


def parse_cell(
    app: str,
    model: str,
    agent: str,
    level: int,
    seed: int,
    queries: int,
    overrides: tuple[str, ...] = (),
) -> Cell:
    """A cell from CLI arguments, with names checked against conf/. Its variant is not
    known until its config is composed (`cell_from_config`); it carries the overrides."""
    check_choice("app", app)
    check_choice("agent", agent)
    if model != NO_MODEL:
        check_choice("model", model)
    return Cell(app, model, agent, int(level), int(seed), int(queries), overrides=tuple(overrides))
