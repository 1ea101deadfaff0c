"""Cells of a grid and where their files live.

A cell is (app, model, agent, level, seed) plus a query count. Every path is a pure
function of the cell, in hive layout, so the DAG and direct runs write the same shards:

    <data>/results/queries/app=A/level=L/seed=S/part-0.parquet
    <data>/results/episodes/app=A/model=M/agent=G/level=L/seed=S/part-0.parquet
    <data>/results/steps/app=A/model=M/agent=G/level=L/seed=S/part-0.parquet
    <data>/results/calls/app=A/model=M/agent=G/level=L/seed=S/part-0.parquet
    <data>/work/transcripts/app=A/model=M/agent=G/level=L/seed=S/part-0.parquet
    <data>/work/partial/app=A/model=M/agent=G/level=L/seed=S/chunk-NNNNN.parquet
    <data>/plans/<grid>.json, <data>/summaries/<grid>.{parquet,md}, <data>/logs/...
    <data>/report/index.html (figures/, tables/ beside it)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from omegaconf import DictConfig

from pipeline.config import ROOT, check_choice

NO_MODEL = "none"


@dataclass(frozen=True, order=True)
class Cell:
    app: str
    model: str
    agent: str
    level: int
    seed: int
    queries: int

    @property
    def query_part(self) -> str:
        return f"app={self.app}/level={self.level}/seed={self.seed}"

    @property
    def part(self) -> str:
        return (
            f"app={self.app}/model={self.model}/agent={self.agent}"
            f"/level={self.level}/seed={self.seed}"
        )

    def overrides(self) -> list[str]:
        """Hydra overrides that compose this cell's config."""
        return [
            f"app={self.app}",
            f"agent={self.agent}",
            f"model={self.model}",
            f"level={self.level}",
            f"seed={self.seed}",
            f"queries={self.queries}",
        ]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def data_root(data_dir: str | Path) -> Path:
    path = Path(data_dir)
    return path if path.is_absolute() else ROOT / path


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
        return self.root / "cache"


def cell_from_config(cfg: DictConfig) -> Cell:
    """The cell a composed (single-run) config describes."""
    model = cfg.model.name if cfg.agent.uses_model else NO_MODEL
    return Cell(cfg.app.name, model, cfg.agent.name, cfg.level, cfg.seed, cfg.queries)


def grid_cells(grid: DictConfig, uses_model: dict[str, bool]) -> list[Cell]:
    """Every cell of a grid but the excluded; agents that need no model get model=none once."""
    excluded = [dict(entry) for entry in grid.get("exclude", [])]
    cells = set()
    for app in grid.apps:
        for agent in grid.agents:
            models = grid.models if uses_model[agent] else [NO_MODEL]
            for model in models:
                for level in grid.levels:
                    for seed in grid.seeds:
                        cell = Cell(app, model, agent, level, seed, grid.queries)
                        if not any(_matches(cell, entry) for entry in excluded):
                            cells.add(cell)
    return sorted(cells)


def _matches(cell: Cell, entry: dict[str, object]) -> bool:
    return all(str(getattr(cell, key)) == str(value) for key, value in entry.items())


def parse_cell(app: str, model: str, agent: str, level: int, seed: int, queries: int) -> Cell:
    """A cell from CLI arguments, with names checked against conf/."""
    check_choice("app", app)
    check_choice("agent", agent)
    if model != NO_MODEL:
        check_choice("model", model)
    return Cell(app, model, agent, int(level), int(seed), int(queries))
