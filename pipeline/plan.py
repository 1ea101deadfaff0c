"""Stage `plan`: a grid resolved into cells, with every config it names validated.

`load_plan` is what the Snakefile calls at parse time (through the compose API, never
`@hydra.main`), so an unknown name or a wrong type in any config the grid uses fails
before any job starts. Grid axes may be overridden (`snakemake --config queries=[5,10]`,
`load_plan(grid, axes={"queries": [5, 10]})`) with the same checks. Each cell's variant is
computed from its composed config (pipeline/variants.py), once per distinct
(app, agent, model, variant overrides).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from pipeline import registry
from pipeline.build import cell_config, make_app
from pipeline.capacity import check_request
from pipeline.cells import NO_MODEL, Cell, Layout, cell_from_config, cell_matches, data_root
from pipeline.config import (
    GRID_AXES,
    compose,
    has_task,
    load_choice,
    query_counts,
    to_plain,
    variant_overrides,
)
from pipeline.core import canonical_json
from pipeline.datadir import ensure_layout
from pipeline.errors import ConfigError
from pipeline.files import write_whole
from pipeline.preflight import check_cell
from pipeline.splits import check_seeds
from pipeline.trials import trial_overrides

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """A grid's cells. `name` is the grid's name, or "<grid>+<8 hex>" when some of its
    axes were overridden (so the plan, summary and report files of each stay apart)."""

    name: str
    grid: str
    data_dir: str
    layout: Layout
    cells: tuple[Cell, ...]
    config: dict
    models: dict[str, dict]  # resolved conf/model/ sections of the models the grid uses
    axes: dict[str, Any] = field(default_factory=dict)  # grid axes given as overrides

    def queries_count(self, app: str, app_variant: str, level: int, seed: int) -> int:
        """The longest query list the grid asks of one queries shard."""
        counts = [
            c.queries
            for c in self.cells
            if (c.app, c.app_variant, c.level, c.seed) == (app, app_variant, level, seed)
        ]
        if not counts:
            raise ConfigError(
                f"grid '{self.grid}' has no cell app={app} app_variant={app_variant} "
                f"level={level} seed={seed}"
            )
        return max(counts)

    def app_overrides(self, app: str, app_variant: str) -> tuple[str, ...]:
        """The overrides that make `app_variant` (those of any of its cells): its app.*
        settings and how its queries are drawn (`allow_repeats`, `focus.*`)."""
        for cell in self.cells:
            if (cell.app, cell.app_variant) == (app, app_variant):
                return tuple(o for o in cell.overrides if _makes_queries(o))
        raise ConfigError(f"grid '{self.grid}' has no cell app={app} app_variant={app_variant}")

    def cell(self, key: tuple) -> Cell:
        """The cell with this key (app, model, agent, level, seed, queries, variant)."""
        for cell in self.cells:
            if cell.key == key:
                return cell
        raise ConfigError(f"no cell {key} in grid '{self.grid}'")

    def model_cells(self, model: str) -> list[Cell]:
        return [c for c in self.cells if c.model == model]

    def threads(self, model: str, cores: int) -> int:
        """Threads a model's job asks for: on the CPU engine every core of a local run
        (`cores`, Snakemake's --cores; the engine binds its OpenMP threads to the job's
        CPUs, pipeline/serving/cpus.py), at least two; two otherwise (the client and the
        environments; the model runs on GPUs). A cluster executor passes cores=1."""
        return max(2, int(cores or 1)) if self.models[model]["kind"] == "vllm_cpu" else 2

    def gpus(self, model: str) -> int:
        """GPUs a model's server needs: its tensor-parallel size, on GPU engines only."""
        cfg = self.models[model]
        return int(cfg["tensor_parallel_size"]) if cfg["kind"] == "vllm" else 0

    def as_json(self) -> str:
        return canonical_json(
            {
                "name": self.name,
                "grid": self.grid,
                "config": self.config,
                "models": self.models,
                "cells": [c.as_dict() for c in self.cells],
            }
        )

    def write(self) -> Path:
        path = self.layout.plan(self.name)
        write_whole(path, self.as_json() + "\n")
        return path


def axis_overrides(axes: Mapping[str, Any]) -> list[str]:
    """`snakemake --config` axis values as Hydra overrides of the grid (names unchecked
    here: `validate` checks them with "did you mean")."""
    unknown = sorted(set(axes) - set(GRID_AXES))
    if unknown:
        raise ConfigError(
            f"unknown grid axis {', '.join(unknown)}; choose from: {', '.join(GRID_AXES)}"
        )
    out = []
    for axis, value in axes.items():
        if axis == "variants":
            entries = (
                value
                if isinstance(value, list) and all(isinstance(v, list) for v in value)
                else [value]
            )
            out.append(f"grid.variants={_hydra([list(e) for e in entries])}")
        elif axis == "trials":  # one integer, not a list
            out.append(f"++grid.trials={_integer(axis, value)}")
        else:
            values = list(value) if isinstance(value, list | tuple) else [value]
            if axis in ("levels", "seeds", "queries"):
                values = [_integer(axis, v) for v in values]
            # `++`: set even where the grid's file leaves the axis out (no shipped grid
            # names `tasks`; a plain override of an absent key is Hydra's error, not ours).
            out.append(f"++grid.{axis}={_hydra(values)}")
    return out


def _integer(axis: str, value: Any) -> int:
    """An integer axis value; Snakemake hands `--config queries=[5,10]` over as strings."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    raise ConfigError(f"grid axis '{axis}': {value!r} is not an integer (e.g. {axis}=[1,2])")


def _hydra(value: Any) -> str:
    """A Python value in Hydra's override grammar (strings always quoted)."""
    if isinstance(value, list):
        return "[" + ",".join(_hydra(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return _quote(str(value))
    if isinstance(value, int | float):
        return str(value)
    return _quote(str(value))


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def load_plan(
    grid: str, data_dir: str | Path = "data", axes: Mapping[str, Any] | None = None
) -> Plan:
    cfg = compose([f"grid={grid}", f"data_dir={data_dir}", *axis_overrides(axes or {})])
    agents = {name: load_choice("agent", name) for name in cfg.grid.agents}
    for name in cfg.grid.apps:
        load_choice("app", name)
    cells = tuple(_grid_cells(cfg.grid, agents, str(data_dir)))
    if cfg.grid.up_to_capacity:
        cells = clip_to_capacity(cells, str(data_dir))
    if not cells:
        raise ConfigError(f"grid '{cfg.grid.name}' excludes every cell it has")
    models = {
        name: OmegaConf.to_container(load_choice("model", name), resolve=True)
        for name in sorted({c.model for c in cells} - {NO_MODEL})
    }
    check_seeds(list(cfg.grid.seeds), cfg.grid.split, f"grid '{cfg.grid.name}'")
    check_capacities(cells, str(data_dir), f"grid '{cfg.grid.name}'")
    grid_plain = to_plain(cfg.grid)
    ensure_layout(data_root(data_dir))
    name = plan_name(cfg.grid.name, axes or {})
    root = data_root(data_dir)
    return Plan(
        name,
        cfg.grid.name,
        str(data_dir),
        Layout(root),
        cells,
        grid_plain,
        models,
        dict(axes or {}),
    )


def plan_name(grid: str, axes: Mapping[str, Any]) -> str:
    """The grid's name, suffixed with a digest of the axes it was given, if any."""
    if not axes:
        return grid
    return f"{grid}+{hashlib.sha256(canonical_json(dict(axes)).encode()).hexdigest()[:8]}"


def _grid_cells(grid: Any, agents: Mapping[str, Any], data_dir: str) -> list[Cell]:
    """Every cell of a grid but the excluded; agents that need no model get model=none."""

    excluded = [dict(entry) for entry in grid.get("exclude", [])]
    variants = [variant_overrides(v, f"grid '{grid.name}': variants entry") for v in grid.variants]
    counts = query_counts(grid.queries)
    found: dict[tuple, tuple[Cell, str]] = {}  # (app, agent, model, overrides) -> cell, task
    cells = set()
    for app, agent in itertools.product(grid.apps, grid.agents):
        models = grid.models if agents[agent].uses_model else [NO_MODEL]
        tasks = _tasks(grid, app, excluded)
        trials = [trial_overrides(t) for t in range(grid.trials)]  # trial 0: none
        for model, base, task, trial in itertools.product(models, variants, tasks, trials):
            overrides = base + task + trial
            combo = (app, agent, model, overrides)
            if combo not in found:
                # the variant depends on no level: compose it at one the app defines
                lowest = min(registry.APPS.get(str(load_choice("app", app).kind)).levels)
                draft = Cell(app, model, agent, lowest, 0, 1, overrides=overrides)
                cfg = cell_config(draft, data_dir)
                check_cell(cfg, probe=False)  # a missing agent.url fails here, not in a job
                found[combo] = cell_from_config(cfg), str(cfg.app.get("task", "mitigate"))
            (made, kind) = found[combo]
            for level, seed, count in itertools.product(grid.levels, grid.seeds, counts):
                cell = Cell(
                    app, model, agent, level, seed, count, made.variant, made.app_variant, overrides
                )
                if not any(_excludes(entry, cell, kind) for entry in excluded):
                    cells.add(cell)
    return sorted(cells)


def _tasks(grid: Any, app: str, excluded: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The grid's `tasks` for `app` as variant overrides: [()] without a tasks axis; a
    task the app does not offer is refused unless an exclude entry names the pair."""
    if not grid.tasks:
        return [()]
    node = load_choice("app", app)
    spec = registry.APPS.get(str(node.kind))
    out: list[tuple[str, ...]] = []
    for task in grid.tasks:
        if task not in spec.tasks:
            if any(set(e) <= {"app", "task"} and _pair(e, app, task) for e in excluded):
                continue
            raise ConfigError(
                f"grid '{grid.name}': app {app} does not offer task {task}; it offers "
                f"{', '.join(spec.tasks)} (or leave the pair out: exclude: "
                f"[{{app: {app}, task: {task}}}])"
            )
        has = has_task(registry.schema("app", str(node.kind)))
        out.append((f"app.task={task}",) if has else ())
    return out


def _pair(entry: Mapping[str, Any], app: str, task: str) -> bool:
    return str(entry.get("app", app)) == app and str(entry.get("task", task)) == task


def _excludes(entry: Mapping[str, Any], cell: Cell, task: str) -> bool:
    """Whether a grid's exclude entry matches `cell` (whose app plays `task`)."""
    if "task" in entry and str(entry["task"]) != task:
        return False
    return cell_matches(cell, {k: v for k, v in entry.items() if k != "task"})


def _capacities(cells: tuple[Cell, ...], data_dir: str) -> dict[tuple[str, str, int], Any]:
    """The capacity of every (app, app variant, level) the cells use (None: repeats allowed)."""

    apps: dict[tuple[str, str], Any] = {}
    out: dict[tuple[str, str, int], Any] = {}
    for cell in sorted(cells):
        key = (cell.app, cell.app_variant, cell.level)
        if key in out:
            continue
        cfg = cell_config(cell, data_dir)
        if cfg.allow_repeats:
            out[key] = None
            continue
        if (cell.app, cell.app_variant) not in apps:
            apps[cell.app, cell.app_variant] = make_app(cfg)
        out[key] = apps[cell.app, cell.app_variant].capacity(cell.level)
    return out


def clip_to_capacity(cells: tuple[Cell, ...], data_dir: str) -> tuple[Cell, ...]:
    """Each cell's query count cut to what one seed can get of its (app, level)."""
    found = _capacities(cells, data_dir)
    out = set()
    for cell in cells:
        capacity = found[cell.app, cell.app_variant, cell.level]
        limit = capacity.per_seed if capacity is not None else None
        if limit is not None and cell.queries > limit:
            log.info(
                "%s level %d: %d queries asked, %d per seed exist",
                cell.app,
                cell.level,
                cell.queries,
                limit,
            )
            cell = dataclasses.replace(cell, queries=limit)
        out.add(cell)
    return tuple(sorted(out))


def check_capacities(cells: tuple[Cell, ...], data_dir: str, where: str) -> None:
    """Every (app variant, level) can give one seed as many distinct queries as its
    longest cell asks, else a ConfigError naming the capacity, before any job runs."""
    longest: dict[tuple[str, str, int], int] = {}
    for cell in cells:
        key = (cell.app, cell.app_variant, cell.level)
        longest[key] = max(longest.get(key, 0), cell.queries)
    found = _capacities(cells, data_dir)
    for (app, app_variant, level), count in sorted(longest.items()):
        capacity = found[app, app_variant, level]
        if capacity is None:
            continue
        try:
            check_request(app, level, count, capacity)
        except ConfigError as err:
            raise ConfigError(f"{where}: {err} (or set the grid's up_to_capacity: true)") from None


def read_plan(data_dir: str | Path, name: str) -> list[Cell]:
    """The cells of the plan file `name` (a grid, or a grid with overridden axes) wrote."""
    path = Layout(data_root(data_dir)).plan(name)
    if not path.exists():
        raise ConfigError(
            f"no plan '{name}' in {path.parent}; run `python -m pipeline.stages plan "
            f"--grid {name.split('+')[0]}` or a sweep of that grid first"
        )
    data = json.loads(path.read_text())
    return [Cell.from_dict(cell) for cell in data["cells"]]


def _makes_queries(override: str) -> bool:
    """Whether a variant override changes the queries themselves (variants.py:
    the app section and `generation_settings`)."""
    key = override.partition("=")[0]
    return key.startswith(("app.", "focus.")) or key == "allow_repeats"
