"""What the Snakefile needs, as plain Python: the plan, path patterns, input functions.

The Snakefile and the `.smk` files hold no logic; they call this module, which is
tested without Snakemake.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.cells import Cell, Layout, data_root
from pipeline.config import GRID_AXES
from pipeline.core import canonical_json
from pipeline.errors import NetGaugeError
from pipeline.files import write_whole
from pipeline.plan import Plan, load_plan
from pipeline.records import shard_rows
from pipeline.registry import conf_dirs

# The rules send a job's output to its log; `3>&2` first hands the console over as file
# descriptor 3, where the job's heartbeat goes too (pipeline/heartbeat.py).
STAGE_CMD = f"NETGAUGE_CONSOLE_FD=3 {shlex.quote(sys.executable)} -m pipeline.stages 3>&2"
ANALYSIS_CMD = f"{shlex.quote(sys.executable)} -m analysis"  # summarize and report
_NAME = r"[a-z0-9][a-z0-9_.-]*"
WILDCARDS = {
    "app": _NAME,
    "model": _NAME,
    "agent": _NAME,
    "level": r"\d+",
    "seed": r"\d+",
    "queries": r"\d+",
    "variant": _NAME,
    "app_variant": _NAME,
}
# A cell whose fields are Snakemake wildcards: Layout turns it into output patterns.
_WILDCARD_CELL = Cell(
    "{app}", "{model}", "{agent}", "{level}", "{seed}", "{queries}", "{variant}", "{app_variant}"
)  # type: ignore[arg-type]
# `snakemake --config` keys: these two, and the grid's axes (pipeline/config.py).
CONFIG_KEYS = ("grid", "data_dir")


@dataclass(frozen=True)
class Workflow:
    plan: Plan

    @classmethod
    def from_config(cls, config: dict[str, Any], *, main: bool = True) -> Workflow:
        """The workflow for `--config grid=NAME data_dir=DIR [AXIS=VALUE ...]`, where an
        AXIS (apps, agents, models, levels, seeds, queries, variants) overrides the grid's;
        config errors become Snakemake WorkflowErrors with our message.

        `main` is false in the Snakemake processes a cluster job runs (two per job): they
        read the plan the main process checked and cached (`PlanCache`) instead of
        composing and checking every config again, which takes seconds per process."""
        unknown = set(config) - set(CONFIG_KEYS) - set(GRID_AXES)
        try:
            if unknown:
                raise NetGaugeError(
                    f"unknown --config key(s): {', '.join(sorted(unknown))}; "
                    f"choose from: {', '.join([*CONFIG_KEYS, *GRID_AXES])}"
                )
            axes = {k: v for k, v in config.items() if k in GRID_AXES}
            grid = str(config.get("grid", "default"))
            data_dir = str(config.get("data_dir", "data"))
            cache = PlanCache(grid, data_dir, axes)
            plan = None if main else cache.load()
            if plan is None:
                plan = load_plan(grid, data_dir, axes)
                if main:
                    cache.store(plan)
            return cls(plan)
        except NetGaugeError as err:
            from snakemake.exceptions import WorkflowError

            raise WorkflowError(f"NetGauge: {err}") from None

    @property
    def root(self) -> Path:
        return self.plan.layout.root

    @property
    def data_dir(self) -> str:
        return shlex.quote(str(self.root))

    @property
    def axes_param(self) -> str:
        """The plan stage's --axes argument: the axes this workflow overrides."""
        return shlex.quote(json.dumps(self.plan.axes, sort_keys=True))

    def pattern(self, table: str) -> str:
        """A shard's path with Snakemake wildcards, from the same Layout the stages use."""
        return str(getattr(self.plan.layout, table)(_WILDCARD_CELL))

    def rule_name(self, model: str) -> str:
        return "run_model_" + re.sub(r"\W", "_", model)

    def log(self, stage: str) -> str:
        cell = _WILDCARD_CELL
        part = cell.query_part if stage == "generate" else cell.part
        return str(self.root / "logs" / stage / part.replace("/", "_")) + ".log"

    def _cell(self, wildcards: Any) -> Cell:
        return self.plan.cell(
            (
                wildcards.app,
                wildcards.model,
                wildcards.agent,
                int(wildcards.level),
                int(wildcards.seed),
                int(wildcards.queries),
                wildcards.variant,
            )
        )

    def queries_param(self, wildcards: Any) -> int:
        """How many queries the generate job makes: what the grid needs, or what the shard
        already holds if that is more. So a grid asking fewer queries than a shard holds
        does not change the job's params (Snakemake would rerun it, and every cell after
        it), and one asking more does."""
        needed = self.plan.queries_count(
            wildcards.app, wildcards.app_variant, int(wildcards.level), int(wildcards.seed)
        )
        path = Path(self.pattern("queries").format(**dict(wildcards.items())))
        return max(needed, shard_rows(path))

    def app_sets(self, wildcards: Any) -> str:
        """`--set` arguments that make the queries shard's app variant."""
        overrides = self.plan.app_overrides(wildcards.app, wildcards.app_variant)
        return variant_args(overrides, wildcards.app_variant)

    def cell_sets(self, wildcards: Any) -> str:
        """`--set` arguments that make the cell's variant."""
        cell = self._cell(wildcards)
        return variant_args(cell.overrides, cell.variant)

    def queries_input(self, wildcards: Any) -> str:
        """The queries shard a cell reads (its app variant's)."""
        return str(self.plan.layout.queries(self._cell(wildcards)))

    @property
    def llm_models(self) -> list[str]:
        return sorted(self.plan.models)

    def model_shards(self, table: str, model: str) -> list[str]:
        """One shard per cell of `model` (its run job plays them all on one server)."""
        layout = self.plan.layout
        shards = [str(getattr(layout, table)(c)) for c in self.plan.model_cells(model)]
        return sorted(set(shards))  # cells of one model share their queries shards

    def cell_shards(self, table: str) -> list[str]:
        layout = self.plan.layout
        return [str(getattr(layout, table)(cell)) for cell in self.plan.cells]

    @property
    def plan_path(self) -> str:
        return str(self.plan.layout.plan(self.plan.name))

    @property
    def summary_paths(self) -> list[str]:
        layout = self.plan.layout
        return [str(layout.summary(self.plan.name)), str(layout.summary_text(self.plan.name))]

    @property
    def report_path(self) -> str:
        return str(self.plan.layout.report)

    def print_summary(self) -> None:
        text = Path(self.summary_paths[1])
        if text.exists():
            print("\n" + text.read_text(), file=sys.stderr)
            print(
                f'results:  {self.root / "results"}  (python -m analysis sql "...")',
                file=sys.stderr,
            )
            print(f"summary:  {text}", file=sys.stderr)
        if Path(self.report_path).exists():
            print(f"report:   {self.report_path}", file=sys.stderr)


@dataclass(frozen=True)
class PlanCache:
    """A checked plan, stored by the main Snakemake process for the processes of its jobs.

    Keyed by the `--config` values and a digest of every config file Hydra could read, so
    a changed config is never read from a stale entry; the main process always plans
    afresh and rewrites its entry. Entries live in <data>/work/plans/.
    """

    grid: str
    data_dir: str
    axes: dict[str, Any]

    @property
    def path(self) -> Path:
        digest = hashlib.sha256(canonical_json([self.grid, self.data_dir, self.axes]).encode())
        for root in conf_dirs():
            for path in sorted(root.rglob("*.yaml")):
                digest.update(str(path).encode() + b"\0" + path.read_bytes())
        return data_root(self.data_dir) / "work" / "plans" / f"{digest.hexdigest()[:24]}.json"

    def store(self, plan: Plan) -> None:
        fields = {k: getattr(plan, k) for k in ("name", "grid", "data_dir", "config", "models")}
        record = {**fields, "axes": plan.axes, "cells": [c.as_dict() for c in plan.cells]}
        write_whole(self.path, json.dumps(record, sort_keys=True))

    def load(self) -> Plan | None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            data = json.loads(self.path.read_text())
            cells = tuple(Cell.from_dict(c) for c in data["cells"])
            layout = Layout(data_root(data["data_dir"]))
            return Plan(
                data["name"], data["grid"], data["data_dir"], layout, cells,
                data["config"], data["models"], data["axes"],
            )  # fmt: skip
        return None


def variant_args(overrides: tuple[str, ...], variant: str) -> str:
    """Stage arguments for a variant: each override as --set, and the variant to check."""
    args = [f"--set={o}" for o in overrides] + [f"--variant={variant}"]
    return " ".join(shlex.quote(a) for a in args)
