"""What the Snakefile needs, as plain Python: the plan, path patterns, input functions.

The Snakefile and the `.smk` files hold no logic; they call this module, which is
tested without Snakemake.
"""

from __future__ import annotations

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
_QUERY_PART = "app={app}/level={level}/seed={seed}"
_CELL_PART = "app={app}/model={model}/agent={agent}/level={level}/seed={seed}"


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
        """The output pattern (with Snakemake wildcards) of a per-cell or per-query shard."""
        base = {
            "queries": "results/queries",
            "episodes": "results/episodes",
            "steps": "results/steps",
            "transcripts": "work/transcripts",
        }[table]
        part = _QUERY_PART if table == "queries" else _CELL_PART
        return str(self.root / base / part / "part-0.parquet")

    def log(self, stage: str) -> str:
        part = _QUERY_PART if stage == "generate" else _CELL_PART
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

    def print_summary(self) -> None:
        text = Path(self.summary_paths[1])
        if text.exists():
            print("\n" + text.read_text(), file=sys.stderr)
            print(
                f'results:  {self.root / "results"}  (python -m analysis sql "...")',
                file=sys.stderr,
            )
            print(f"summary:  {text}", file=sys.stderr)
