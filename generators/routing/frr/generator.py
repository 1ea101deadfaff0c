"""Seeded FRR queries (levels 4 and 5), each validated on a live FRR lab.

A draw picks the topology (routers per level from `app.frr_sizes`, or `app.size`) and
the faults (faults.draw_types: L4 two OSPF faults; L5 one OSPF, one BGP, one data-plane),
each on routers the others left where possible. Validation, on a lab of that topology
(generators/routing/frr/lab.py), from the healthy converged network each time:
  1. with several faults, each one alone must break a required flow (observable);
  2. all together must break one, still after the final settle window: a null agent fails;
  3. the oracle's fixes, sent through the command sandbox like an agent's, must each run
     cleanly and never make a working flow fail, and the network must end with every flow
     working and the whole intended protocol state (frr/intent.py), still after the final
     window (durable).
The faults' order of fixing is tried as drawn, then reversed. The key is the topology and
the faults as injected (generators/routing/generator.py's fault_key, a free number
counting once), so seeds and repeats behave as on levels 1-3.
"""

from __future__ import annotations

import logging
import random
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from emulators.netcmd.sandbox import Status
from generators.routing.faults import Fault, InjectionFailed
from generators.routing.frr.faults import DRAW, draw_types
from generators.routing.frr.lab import FrrLab
from generators.routing.frr.topology import FrrTopology
from pipeline.api import EnvironmentFailure

log = logging.getLogger(__name__)
FRR_LEVELS = (4, 5)
SIZES = {"small": (3, 4), "medium": (4, 5), "large": (5, 6)}  # routers at L4, L5


def routers_range(cfg: Any, level: int) -> tuple[int, int]:
    if getattr(cfg, "size", None):
        n = SIZES[cfg.size][level - 4]
        return n, n
    low, high = cfg.frr_sizes[level - 4]
    return int(low), int(high)


def draw(
    cfg: Any, level: int, rng: random.Random, weights: Mapping[str, float] | None = None
) -> tuple[FrrTopology, list[Fault]]:
    n = rng.randint(*routers_range(cfg, level))
    topo = FrrTopology(level, n, n // 2 if level == 5 else 0)
    faults: list[Fault] = []
    for kind in draw_types(rng, level, getattr(cfg, "faults", None), weights):
        used = {k for f in faults for k in f.subnets}
        faults.append(DRAW[kind](rng, topo, used))
    return topo, faults


class FrrPool:
    """Live FRR labs by topology name, least recently used stopped first."""

    def __init__(self, cfg: Any, max_live: int = 2) -> None:
        self.cfg = cfg
        self.max_live = max_live
        self._live: OrderedDict[str, FrrLab] = OrderedDict()
        self.builds = 0

    def get(self, topo: FrrTopology, *, fresh: bool = True) -> FrrLab:
        """The lab of `topo`; `fresh`: reset to the healthy converged network first."""
        lab = self._live.pop(topo.name, None)
        if lab is not None and fresh and lab.used:
            try:
                lab.reset()
            except BaseException as err:  # whatever the reset raised: never reused
                lab.close()
                if not isinstance(err, Exception):
                    raise
                log.warning("rebuilding %s: %s: %s", topo.name, type(err).__name__, err)
                lab = None
        if lab is None:
            while len(self._live) >= self.max_live:
                _, old = self._live.popitem(last=False)
                old.close()
            lab = FrrLab(topo, self.cfg).__enter__()
            self.builds += 1
        lab.used = True
        self._live[topo.name] = lab
        return lab

    @contextmanager
    def use(self, topo: FrrTopology) -> Iterator[FrrLab]:
        """`get` for one episode: a lab whose episode raised anything is closed and
        dropped, never reused (as LabPool.use)."""
        lab = self.get(topo)
        try:
            yield lab
        except BaseException:
            if self._live.get(topo.name) is lab:
                del self._live[topo.name]
            lab.close()
            raise

    def dirty(self, topo: FrrTopology) -> None:
        """Mark the lab of `topo` as needing a reset before its next use."""
        if topo.name in self._live:
            self._live[topo.name].used = True

    def close(self) -> None:
        """Close every live lab, each even when closing another raised (as LabPool.close)."""
        errors = []
        while self._live:
            _, lab = self._live.popitem()
            try:
                lab.close()
            except Exception as err:  # raised below, after the others
                errors.append(err)
        if errors:
            raise errors[0]

    def __enter__(self) -> FrrPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fix(lab: FrrLab, faults: list[Fault]) -> list[dict[str, str]] | str:
    before = lab.wait_broken()
    if before.full:
        return "the faults together cause no loss"
    assert lab.sandbox is not None
    used = []
    for fault in faults:
        for machine, command in fault.fix:
            result = lab.sandbox.run(machine, command)
            if result.status in (Status.TIMEOUT, Status.OUTPUT_LIMIT):
                raise EnvironmentFailure(
                    f"oracle command `{command}` on {machine} was stopped: {result.reason}"
                )
            if result.status is not Status.OK:
                return f"oracle command `{command}` on {machine}: {result.status} {result.output}"
            used.append({"machine": machine, "command": command})
            after = lab.after_change()  # as an episode's step judges it
            lost = after.lost_since(before)
            if lost:
                return f"oracle command `{command}` broke {lost}"
            if after.repaired:
                return used
            before = after
    failing = {p: len(r.failed) for p, r in before.by_protocol.items() if not r.full}
    gaps = [g.what for g in before.gaps or ()][:3]
    return f"after every fix these flows still fail: {failing}; protocol state lacking: {gaps}"


def _undo(lab: FrrLab, fault: Fault) -> bool:
    """Fix `fault` with the oracle's commands and wait until every flow works again."""
    assert lab.sandbox is not None
    for machine, command in fault.fix:
        if lab.sandbox.run(machine, command).status is not Status.OK:
            return False
    lab.retry_idle_sessions()
    return lab.wait_full()


def validate(
    pool: FrrPool, topo: FrrTopology, faults: list[Fault]
) -> tuple[list[dict[str, str]], list[Fault]] | str:
    """(the oracle's commands, faults in fixing order) if the draw is valid, else why not.
    One reset per order tried; between the single-fault checks a fault is undone by its
    own fix (a fix that does not bring the network back rejects the draw)."""
    try:
        lab = pool.get(topo)
        if len(faults) > 1:
            for fault in faults:
                lab.inject([fault])
                if lab.wait_broken(final=False).full:
                    pool.dirty(topo)
                    return f"{fault.type}/{fault.variant} alone causes no loss"
                if not _undo(lab, fault):
                    pool.dirty(topo)
                    return f"{fault.type}/{fault.variant}: its fix alone does not restore it"
        why = ""
        for n, order in enumerate((faults, faults[::-1])):
            if n:
                lab = pool.get(topo)
            lab.inject(order)
            outcome = _fix(lab, order)
            if not isinstance(outcome, str):
                pool.dirty(topo)  # healthy, but reset before the next query all the same
                return outcome, order
            why = outcome
            if len(faults) == 1:
                break
    except InjectionFailed as err:
        pool.dirty(topo)
        return str(err)
    return why
