"""`model.cost_limit`: a cell stops starting episodes once its model calls cost that much.

The limit is checked between episodes, never inside one: an episode that started plays to
its end (so the spent cost may pass the limit by what the episodes in flight cost), and
every query not started by then is recorded as one `cost_limit` step (no action, no model
call) whose episode the app scores like any other that ended without acting. Nothing
played is lost; the cell's transcripts and result shards are written as usual. A resumed
cell counts what its checkpointed episodes cost.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig

from pipeline.pricing import Prices


@dataclass
class CostGuard:
    """The spent cost of one cell against its limit (USD); its episodes' threads add to it."""

    limit: float
    prices: Prices
    spent: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, cfg: DictConfig) -> CostGuard | None:
        """The cell's guard, or None when its model has no cost limit."""
        limit = cfg.model.get("cost_limit") if cfg.agent.uses_model else None
        return None if limit is None else cls(float(limit), Prices(cfg.model))

    def add(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Count the cost of one episode's transcript rows."""
        cost = self.prices.rows_cost(rows)
        with self._lock:
            self.spent += cost

    @property
    def reached(self) -> bool:
        return self.spent >= self.limit

    def reason(self) -> str:
        return (
            f"the cell's cost limit (model.cost_limit = {self.limit:g} USD) was reached "
            f"({self.spent:.6g} USD spent) before this query started"
        )
