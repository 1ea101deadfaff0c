"""`model.cost_limit`: a cell stops starting episodes once its model calls cost that much.

The limit is checked between episodes, never inside one: an episode that started plays to
its end (so the spent cost may pass the limit by what the episodes in flight cost), and
every query not started by then is recorded as one `cost_limit` step (no action, no model
call) whose episode the app scores like any other that ended without acting. Nothing
played is lost; the cell's transcripts and result shards are written as usual. A resumed
cell counts what its checkpointed episodes cost.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig

from pipeline.core import Query, StepResult, StepStatus
from pipeline.pricing import Prices

log = logging.getLogger(__name__)


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

    def not_started(
        self, todo: queue.Queue[Query], cell: str
    ) -> Iterator[tuple[Query, StepResult]]:
        """Every query left in `todo`, with the `cost_limit` step it is recorded as."""
        left = 0
        while True:
            try:
                query = todo.get_nowait()
            except queue.Empty:
                break
            left += 1
            yield query, StepResult("", StepStatus.COST_LIMIT, "", error=self.reason(), done=True)
        log.warning("%s: %s; %d queries recorded as cost_limit", cell, self.reason(), left)
