"""Stage `plan`: a grid resolved into cells, with every config it names validated.

`load_plan` is what the Snakefile calls at parse time (through the compose API, never
`@hydra.main`), so an unknown name or a wrong type in any config the grid uses fails
before any job starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from pipeline.cells import Cell, Layout, data_root, grid_cells
from pipeline.config import CONF_DIR, compose, section
from pipeline.core import canonical_json
from pipeline.errors import ConfigError


@dataclass(frozen=True)
class Plan:
    grid: str
    data_dir: str
    layout: Layout
    cells: tuple[Cell, ...]
    config: dict
    models: dict[str, dict]  # resolved conf/model/ sections of the models the grid uses

    def queries_count(self, app: str, level: int, seed: int) -> int:
        """The query count the grid asks of (app, level, seed)."""
        counts = [c.queries for c in self.cells if (c.app, c.level, c.seed) == (app, level, seed)]
        if not counts:
            raise ConfigError(f"grid '{self.grid}' has no cell app={app} level={level} seed={seed}")
        return max(counts)

    def model_cells(self, model: str) -> list[Cell]:
        return [c for c in self.cells if c.model == model]

    def gpus(self, model: str) -> int:
        """GPUs a model's server needs: its tensor-parallel size, on GPU engines only."""
        cfg = self.models[model]
        return int(cfg["tensor_parallel_size"]) if cfg["kind"] == "vllm" else 0

    def as_json(self) -> str:
        return canonical_json(
            {
                "grid": self.grid,
                "config": self.config,
                "models": self.models,
                "cells": [c.as_dict() for c in self.cells],
            }
        )

    def write(self) -> Path:
        path = self.layout.plan(self.grid)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.as_json() + "\n")
        tmp.replace(path)
        return path


def load_choice(group: str, name: str) -> DictConfig:
    """One config file of a group, checked against its schema."""
    cfg = OmegaConf.load(CONF_DIR / group / f"{name}.yaml")
    if cfg.get("name") != name:
        raise ConfigError(
            f"conf/{group}/{name}.yaml sets name '{cfg.get('name')}'; it must equal the file stem"
        )
    return section(group, cfg)


def load_plan(grid: str, data_dir: str | Path = "data") -> Plan:
    cfg = compose([f"grid={grid}", f"data_dir={data_dir}"])
    agents = {name: load_choice("agent", name) for name in cfg.grid.agents}
    for name in cfg.grid.apps:
        load_choice("app", name)
    uses_model = {name: bool(agent.uses_model) for name, agent in agents.items()}
    cells = tuple(grid_cells(cfg.grid, uses_model))
    models = {
        name: OmegaConf.to_container(load_choice("model", name), resolve=True)
        for name in sorted({c.model for c in cells} - {"none"})
    }
    grid_plain = OmegaConf.to_container(cfg.grid, resolve=True)
    return Plan(
        cfg.grid.name, str(data_dir), Layout(data_root(data_dir)), cells, grid_plain, models
    )


def read_plan(data_dir: str | Path, grid: str) -> list[Cell]:
    path = Layout(data_root(data_dir)).plan(grid)
    data = json.loads(path.read_text())
    return [Cell(**cell) for cell in data["cells"]]
