"""Seeded FRR queries (levels 4 and 5), each validated on a live FRR lab.

A draw picks the topology (routers per level from `app.frr_sizes`, or `app.size`) and
the faults (faults.draw_types: L4 two OSPF faults; L5 one OSPF, one BGP, one data-plane),
each on routers the others left where possible. Validation, on a warm lab of that topology
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
from collections.abc import Mapping
from typing import Any

from emulators.netcmd.sandbox import Status
from generators.lab.frr.pool import WarmPool
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


def frr_pool(cfg: Any) -> WarmPool:
    """A pool of warm FRR labs for `cfg` (generators/lab/frr/pool.py): labs built with the
    same probe, command and restore settings are shared by every pool of the process."""
    key = (
        f"routing:{cfg.probe.timeout_ms}:{cfg.probe.retries}:{','.join(cfg.probe.protocols)}:"
        f"{cfg.command.timeout_s}:{cfg.command.output_bytes}:{cfg.frr_restore}"
    )
    return WarmPool(lambda topo: FrrLab(topo, cfg), key, restore=cfg.frr_restore)


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


def _alone(lab: FrrLab, faults: list[Fault]) -> str | None:
    """Why a fault of several is not observable alone, or None: each one alone must break
    a flow, and its own fix must bring the network back."""
    for fault in faults:
        lab.inject([fault])
        if lab.wait_broken(final=False).full:
            return f"{fault.type}/{fault.variant} alone causes no loss"
        if not _undo(lab, fault):
            return f"{fault.type}/{fault.variant}: its fix alone does not restore it"
    return None


def _try(
    pool: WarmPool, topo: FrrTopology, order: list[Fault], alone: bool
) -> tuple[list[dict[str, str]] | str, bool]:
    """On a lab proven healthy: (with `alone`, the single-fault checks, then) the faults
    injected in `order` and the oracle's fixes played. (the outcome, whether it rejects the
    draw whatever the other order does: a single-fault check failed, or a fault could not
    be injected, which is the draw's, so the lab is kept)."""
    with pool.use(topo) as lab:
        assert isinstance(lab, FrrLab)
        try:
            why = _alone(lab, order) if alone else None
            if why is not None:
                return why, True
            lab.inject(order)
        except InjectionFailed as err:
            return str(err), True
        return _fix(lab, order), False


def validate(
    pool: WarmPool, topo: FrrTopology, faults: list[Fault]
) -> tuple[list[dict[str, str]], list[Fault]] | str:
    """(the oracle's commands, faults in fixing order) if the draw is valid, else why not.
    Each order tried starts from a lab proven healthy (a lease restores it); between the
    single-fault checks a fault is undone by its own fix (a fix that does not bring the
    network back rejects the draw), and the first order follows them on the same lab.
    The orders: as drawn, then reversed; the last one's failure is the reason."""
    why = ""
    for n, order in enumerate((faults, faults[::-1])):
        outcome, final = _try(pool, topo, order, alone=n == 0 and len(faults) > 1)
        if not isinstance(outcome, str):
            return outcome, order
        why = outcome
        if final or len(faults) == 1:
            break
    return why
