"""Seeded routing queries, each validated on a real network when generated.

Query i of (level, seed) is drawn with `random.Random(f"{seed}:{level}:{i}")` alone, so
n queries are a prefix of any larger set with the same arguments. A draw picks the
topology size (per-level ranges in the config), the fault types (L1: one; L2, L3: two
of different types, from NetArena's pairs) and each fault's variant and targets.

Validation, on a live lab of that size (a draw failing it is redrawn):
  1. with several faults, each one alone must cause loss (no-op variants are dropped);
  2. all faults together must cause loss: a null agent, which changes nothing, fails;
  3. the oracle's fix commands, sent through the command sandbox like an agent's, must
     each run cleanly, never make a working pair fail, and end with full reachability
     (the oracle's list is cut where reachability becomes full, as the episode ends).
The faults' order of fixing is tried as drawn, then reversed.

A query's key is its topology and its faults as injected (`fault_key`; the prompt shows
only the topology, the faults are what the agent must find). It is computed from the
draw, so a draw whose key another seed slot owns or an earlier query of the seed took is
redrawn without touching a lab (pipeline/querygen.py).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from typing import Any

from emulators.base import Emulator
from emulators.netcmd.sandbox import CommandSandbox, Status
from generators.lab.pool import LabPool, open_pool
from generators.routing import APP_VERSION
from generators.routing.config import RoutingConfig
from generators.routing.environment import inject
from generators.routing.faults import DRAW, TYPES, Fault
from generators.routing.prompt import build_prompt
from generators.routing.topology import RoutingTopology
from pipeline.core import Query
from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.querygen import KeyTracker, query_id, query_key, query_rng, stamp

LEVELS = (1, 2, 3)
MAX_DRAWS = 30
R, I, A, D, W = TYPES  # noqa: E741 (NetArena's one-letter names of the five types)
# NetArena's table: L2 pairs disable_routing with the others, plus the remove_ip / drop /
# wrong-route pairs; L3 pairs the interface with the remaining types.
PAIRS = {
    2: [(R, I), (R, A), (R, D), (R, W), (A, D), (A, W), (D, W)],
    3: [(I, A), (I, D), (I, W)],
}

log = logging.getLogger(__name__)


def draw(cfg: RoutingConfig, level: int, rng: random.Random) -> tuple[RoutingTopology, list[Fault]]:
    """The topology and faults of one draw (no network involved)."""
    size = cfg.sizes[level - 1]
    topo = RoutingTopology(rng.randint(*size.subnets), rng.randint(*size.hosts))
    types = [rng.choice(TYPES)] if level == 1 else list(rng.choice(PAIRS[level]))
    faults: list[Fault] = []
    for kind in types:
        used = {k for f in faults for k in f.subnets}
        faults.append(DRAW[kind](rng, topo, used))
    return topo, faults


# Variants with a free number: which number was drawn does not make another query (the
# agent finds and fixes the same thing), so their key is the fault without it.
FREE_NUMBER = {"rule_prohibit": "ip rule preference", "router_mtu": "MTU", "foreign": "address"}


def fault_key(topo: RoutingTopology, faults: list[Fault]) -> str:
    """The key of a draw: the topology and the faults' injections, in any order; a fault
    whose variant only draws a free number (FREE_NUMBER) counts by its type, variant,
    subnets and the machines it touches."""
    injected = sorted(_structure(f) for f in faults)
    return query_key(topo.name, injected)


def _structure(fault: Fault) -> list:
    if fault.variant in FREE_NUMBER:
        machines = sorted({m for m, _ in fault.inject})
        return [fault.type, fault.variant, list(fault.subnets), machines]
    return [fault.type, fault.variant, [[m, list(a)] for m, a in fault.inject]]


def _fix(sandbox: CommandSandbox, emu: Emulator, faults: list[Fault]) -> list[dict[str, str]] | str:
    """Play the faults' fixes (after they were injected); the commands used, or why not."""
    before = emu.reachability()
    if before.full:
        return "the faults together cause no loss"
    used = []
    for fault in faults:
        for machine, command in fault.fix:
            result = sandbox.run(machine, command)
            if result.status is not Status.OK:
                return f"oracle command `{command}` on {machine}: {result.status} {result.reason}"
            used.append({"machine": machine, "command": command})
            after = emu.reachability()
            if after.lost_since(before):
                return f"oracle command `{command}` broke {after.lost_since(before)[:3]}"
            if after.full:
                return used
            before = after
    return f"after every fix {len(before.failed)} pairs still fail"


def validate(
    pool: LabPool, topo: RoutingTopology, faults: list[Fault]
) -> tuple[list[dict[str, str]], list[Fault]] | str:
    """(the oracle's commands, faults in fixing order) if the draw is valid, else why not."""
    emu, sandbox = pool.get(topo)
    if len(faults) > 1:
        for fault in faults:
            inject(emu, [fault])
            if emu.reachability().full:
                return f"{fault.type}/{fault.variant} alone causes no loss"
            emu, sandbox = pool.get(topo)
    why = ""
    for order in (faults, faults[::-1]):
        inject(emu, order)
        outcome = _fix(sandbox, emu, order)
        emu, sandbox = pool.get(topo)
        if not isinstance(outcome, str):
            return outcome, order
        why = outcome
        if len(faults) == 1:
            break
    return why


class RoutingQueryGenerator:
    """Draws and validates queries; owns the labs it validates on until closed."""

    def __init__(self, cfg: RoutingConfig, app_name: str = "routing") -> None:
        self.cfg = cfg
        self.app_name = app_name
        self.rejected: dict[str, int] = {}  # why draws were dropped, counted

    def generate(
        self, level: int, seed: int, count: int, *, allow_repeats: bool = False
    ) -> Iterator[Query]:
        if level not in LEVELS:
            raise ConfigError(f"level={level} is not defined for routing; choose one of {LEVELS}")
        from generators.routing.capacity import capacity

        tracker = KeyTracker(
            self.app_name,
            level,
            seed,
            allow_repeats=allow_repeats,
            capacity=lambda: capacity(self.cfg, level),
        )
        with open_pool(self.cfg) as pool:
            for index in range(count):
                yield self._one(pool, level, seed, index, tracker)

    def _one(self, pool: LabPool, level: int, seed: int, index: int, tracker: KeyTracker) -> Query:
        rng = query_rng(seed, level, index)

        def pick() -> tuple[str, tuple[RoutingTopology, list[Fault]]]:
            topo, faults = draw(self.cfg, level, rng)
            return fault_key(topo, faults), (topo, faults)

        def attempt(drawn: tuple[RoutingTopology, list[Fault]]) -> Query | str:
            topo, faults = drawn
            try:
                outcome = validate(pool, topo, faults)
            except EnvironmentFailure as err:  # an injection command failed: a bad variant
                outcome = str(err)
            if isinstance(outcome, str):
                key = "+".join(f"{f.type}/{f.variant}" for f in faults)
                self.rejected[key] = self.rejected.get(key, 0) + 1
                return outcome
            oracle, ordered = outcome
            return self._query(level, seed, index, topo, ordered, oracle)

        taken = tracker.take(index, pick, attempt, max_draws=MAX_DRAWS)
        return stamp(taken.value, taken)

    def _query(
        self,
        level: int,
        seed: int,
        index: int,
        topo: RoutingTopology,
        faults: list[Fault],
        oracle: list[dict[str, str]],
    ) -> Query:
        truth: dict[str, Any] = {
            "topology": {"subnets": topo.subnets, "hosts_per_subnet": topo.hosts},
            "faults": [f.to_json() for f in faults],
            "oracle": oracle,
            "app_version": APP_VERSION,
        }
        return Query(
            query_id=query_id(self.app_name, level, seed, index),
            app=self.app_name,
            level=level,
            seed=seed,
            index=index,
            prompt=build_prompt(topo, self.cfg.max_turns, self.cfg.emulator),
            answer_type="reachability",
            operation="+".join(sorted(f.type for f in faults)),
            ground_truth=truth,
            env_key=topo.name,
        )
