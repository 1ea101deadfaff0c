"""What the Snakefile needs, as plain Python: the plan, path patterns, input functions.

The Snakefile and the `.smk` files hold no logic; they call this module, which is
tested without Snakemake.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.cells import Cell
from pipeline.errors import NetGaugeError
from pipeline.plan import Plan, load_plan

STAGE_CMD = f"{shlex.quote(sys.executable)} -m pipeline.stages"
WILDCARDS = {
    "app": r"[a-z0-9][a-z0-9_.-]*",
    "model": r"[a-z0-9][a-z0-9_.-]*",
    "agent": r"[a-z0-9][a-z0-9_.-]*",
    "level": r"\d+",
    "seed": r"\d+",
}
# A cell whose fields are Snakemake wildcards: Layout turns it into output patterns.
_WILDCARD_CELL = Cell("{app}", "{model}", "{agent}", "{level}", "{seed}", 0)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Workflow:
    plan: Plan

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Workflow:
        """The workflow for `--config grid=NAME data_dir=DIR`; config errors become
        Snakemake WorkflowErrors with our message."""
        unknown = set(config) - {"grid", "data_dir"}
        try:
            if unknown:
                raise NetGaugeError(
                    f"unknown --config key(s): {', '.join(sorted(unknown))}; "
                    "choose from: grid, data_dir"
                )
            return cls(
                load_plan(str(config.get("grid", "default")), str(config.get("data_dir", "data")))
            )
        except NetGaugeError as err:
            from snakemake.exceptions import WorkflowError

            raise WorkflowError(f"NetGauge: {err}") from None

    @property
    def root(self) -> Path:
        return self.plan.layout.root

    @property
    def data_dir(self) -> str:
        return shlex.quote(str(self.root))

    def pattern(self, table: str) -> str:
        """A shard's path with Snakemake wildcards, from the same Layout the stages use."""
        return str(getattr(self.plan.layout, table)(_WILDCARD_CELL))

    def rule_name(self, model: str) -> str:
        return "run_model_" + re.sub(r"\W", "_", model)

    def log(self, stage: str) -> str:
        cell = _WILDCARD_CELL
        part = cell.query_part if stage == "generate" else cell.part
        return str(self.root / "logs" / stage / part.replace("/", "_")) + ".log"

    def queries_param(self, wildcards: Any) -> int:
        return self.plan.queries_count(wildcards.app, int(wildcards.level), int(wildcards.seed))

    def cell_param(self, wildcards: Any) -> int:
        """The query count of the cell named by the wildcards."""
        key = (
            wildcards.app,
            wildcards.model,
            wildcards.agent,
            int(wildcards.level),
            int(wildcards.seed),
        )
        for cell in self.plan.cells:
            if (cell.app, cell.model, cell.agent, cell.level, cell.seed) == key:
                return cell.queries
        raise NetGaugeError(f"no cell {key} in grid '{self.plan.grid}'")

    @property
    def llm_models(self) -> list[str]:
        return sorted(self.plan.models)

    def model_shards(self, table: str, model: str) -> list[str]:
        """One shard per cell of `model` (its run job plays them all on one server)."""
        shards = [self._fill(self.pattern(table), c) for c in self.plan.model_cells(model)]
        return sorted(set(shards))  # cells of one model share their queries shards

    def cell_shards(self, table: str) -> list[str]:
        return [self._fill(self.pattern(table), cell) for cell in self.plan.cells]

    @staticmethod
    def _fill(pattern: str, cell: Cell) -> str:
        return pattern.format(
            app=cell.app, model=cell.model, agent=cell.agent, level=cell.level, seed=cell.seed
        )

    @property
    def plan_path(self) -> str:
        return str(self.plan.layout.plan(self.plan.grid))

    @property
    def summary_paths(self) -> list[str]:
        layout = self.plan.layout
        return [str(layout.summary(self.plan.grid)), str(layout.summary_text(self.plan.grid))]

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
