"""Validating the draws of the next queries ahead, in worker threads, each on a lab of its own.

Validating an FRR draw mostly waits (protocol timers, probe rounds), so several can run at
once. Which queries a seed yields must not depend on it: queries are still taken one by one
in index order by the key tracker (pipeline/querygen.py), which redraws on a taken key or a
rejection. What runs ahead is only the validation of each upcoming query's first draw,
which its own random stream fixes whatever came before (query_rng(seed, level, index));
when the tracker asks for a draw's validation, the result computed ahead is used if there
is one (waiting for it if it is still running), else the draw is validated then. A
validation is a pure function of the draw (its lab is proven healthy first), so ahead or
not, the same draws are accepted and rejected, and the same queries come out. A worker's
environment failure is not kept: that draw is validated again when asked for (and the
failure, if it repeats, reaches the tracker as before).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Self

from generators.routing.faults import Fault
from generators.routing.frr.topology import FrrTopology
from pipeline.api import EnvironmentFailure, canonical_json

log = logging.getLogger(__name__)
Outcome = Any  # what the validation returns: (oracle, ordered faults) or why not
Validate = Callable[[FrrTopology, list[Fault]], Outcome]


def draw_id(topo: FrrTopology, faults: Sequence[Fault]) -> str:
    """A draw exactly (the free numbers too: two draws of one key may differ in them)."""
    return canonical_json([topo.name, [f.to_json() for f in faults]])


class Ahead:
    """See the module docstring. `workers` <= 1: every draw validated when asked for."""

    def __init__(self, validate: Validate, workers: int) -> None:
        self._validate = validate
        self.workers = max(1, workers)
        self._executor = ThreadPoolExecutor(self.workers, "frr-ahead") if workers > 1 else None
        self._futures: dict[str, Future[Outcome]] = {}
        self.used = 0  # validations taken from ahead

    def schedule(self, draws: Sequence[tuple[FrrTopology, list[Fault]]]) -> None:
        """Validate these draws (the next queries' first draws) ahead; one started for
        another draw is dropped (its query was taken another way), one already started
        for these is not started again."""
        if self._executor is None:
            return
        wanted = {draw_id(topo, faults): (topo, faults) for topo, faults in draws}
        for ident in [i for i in self._futures if i not in wanted]:
            self._futures.pop(ident).cancel()  # a running one finishes, unread
        for ident, (topo, faults) in wanted.items():
            if ident not in self._futures:
                self._futures[ident] = self._executor.submit(self._validate, topo, faults)

    def result(self, topo: FrrTopology, faults: list[Fault]) -> Outcome:
        """The draw's validation: the one run ahead, or one run now."""
        future = self._futures.pop(draw_id(topo, faults), None)
        if future is not None:
            try:
                outcome = future.result()
            except EnvironmentFailure as err:
                log.warning("validating %s ahead failed, again now: %s", topo.name, err)
            else:
                self.used += 1
                return outcome
        return self._validate(topo, faults)

    def close(self) -> None:
        """Stop what has not started; wait for what runs (its lab goes back to the pool)."""
        if self._executor is not None:
            for future in self._futures.values():
                future.cancel()
            self._executor.shutdown(wait=True)
            self._futures.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
