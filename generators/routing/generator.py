"""Seeded routing queries, each validated on a real network when generated.

Query i of (level, seed) is drawn with `random.Random(f"{seed}:{level}:{i}")` alone, so
n queries are a prefix of any larger set with the same arguments. A draw picks the
topology size (per-level ranges in the config), the fault types (L1: one; L2, L3: two
of different types, from NetArena's pairs) and each fault's variant and targets.

Validation, on a live lab of that size, against the app's intended state
(generators/routing/checks.py: ICMP, TCP and UDP flows; a draw failing it is redrawn):
  1. with several faults, each one alone must break a flow (no-op variants are dropped);
  2. all faults together must break a flow: a null agent, which changes nothing, fails;
  3. the oracle's fix commands, sent through the command sandbox like an agent's, must
     each run cleanly, never make a working flow fail, and end with every flow working
     (the oracle's list is cut where that happens, as the episode ends).
The faults' order of fixing is tried as drawn, then reversed. Only what the draw decides
rejects it: an injection or oracle command that exits non-zero, or a probe result. The
environment failing (a command killed at its time limit, a lab that cannot be reset)
raises EnvironmentFailure, which pipeline/querygen.py retries on the same draw, so a
loaded machine never turns a valid draw into a rejected one and the same seed always
gives the same queries.

A query's key is its topology and its faults as injected (`fault_key`; the prompt shows
only the topology, the faults are what the agent must find). It is computed from the
draw, so a draw whose key another seed slot owns or an earlier query of the seed took is
redrawn without touching a lab (pipeline/querygen.py).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from emulators.base import Emulator
from emulators.netcmd.sandbox import CommandSandbox, Status
from generators.lab.pool import LabPool, open_pool
from generators.routing import APP_VERSION, checks
from generators.routing.config import RoutingConfig
from generators.routing.environment import inject
from generators.routing.faults import DRAW, TYPES, Fault, InjectionFailed
from generators.routing.frr.episode import build_prompt as frr_prompt
from generators.routing.frr.faults import level_types
from generators.routing.frr.generator import FRR_LEVELS, FrrPool
from generators.routing.frr.generator import draw as frr_draw
from generators.routing.frr.generator import validate as frr_validate
from generators.routing.frr.topology import FrrTopology
from generators.routing.prompt import build_prompt
from generators.routing.topology import RoutingTopology
from pipeline.api import (
    ConfigError,
    EnvironmentFailure,
    KeyTracker,
    Query,
    query_id,
    query_key,
    query_rng,
    stamp,
    weighted_choice,
)

MAX_DRAWS = 30
R, I, A, D, W = TYPES  # noqa: E741 (NetArena's one-letter names of the five types)
# NetArena's Table 5: L2 pairs disable_routing with each other type, plus remove_ip and
# drop_traffic each with wrong_routing; L3 pairs disable_interface with remove_ip,
# drop_traffic and wrong_routing, plus remove_ip with drop_traffic.
PAIRS = {
    2: [(R, I), (R, A), (R, D), (R, W), (A, W), (D, W)],
    3: [(I, A), (I, D), (I, W), (A, D)],
}

SIZE_LEVEL = {"small": 1, "medium": 2, "large": 3}  # app.size: that level's size range

log = logging.getLogger(__name__)


def allowed_draws(cfg: RoutingConfig, level: int) -> list[tuple[str, ...]]:
    """The fault types (L1) or pairs (L2, L3) a level draws under app.faults."""
    chosen = set(cfg.faults or TYPES)
    draws = [(t,) for t in TYPES] if level == 1 else [tuple(p) for p in PAIRS[level]]
    kept = [d for d in draws if set(d) <= chosen]
    if not kept:
        raise ConfigError(
            f"app.faults={sorted(chosen)} leaves nothing to draw at level {level}; it draws "
            f"{', '.join('+'.join(d) for d in draws)}"
        )
    return kept


def draw(
    cfg: RoutingConfig,
    level: int,
    rng: random.Random,
    weights: Mapping[str, float] | None = None,
) -> tuple[RoutingTopology, list[Fault]]:
    """The topology and faults of one draw (no network involved); `weights` per operation
    label (failure-driven sampling) weigh the fault types or pairs."""
    size = cfg.sizes[SIZE_LEVEL[cfg.size] - 1 if cfg.size else level - 1]
    topo = RoutingTopology(rng.randint(*size.subnets), rng.randint(*size.hosts))
    if cfg.faults is None and weights is None:
        types = [rng.choice(TYPES)] if level == 1 else list(rng.choice(PAIRS[level]))
    else:  # app.faults: the level's types (L1) or pairs (L2, L3) made only of those
        options = allowed_draws(cfg, level)
        types = list(weighted_choice(rng, options, weights, label=lambda d: "+".join(sorted(d))))
    faults: list[Fault] = []
    for kind in types:
        used = {k for f in faults for k in f.subnets}
        faults.append(DRAW[kind](rng, topo, used))
    return topo, faults


# Variants with a free number: which number was drawn does not make another query (the
# agent finds and fixes the same thing), so their key is the fault without it.
FREE_NUMBER = {"rule_prohibit": "ip rule preference", "router_mtu": "MTU", "foreign": "address",
               # levels 4-5 (generators/routing/frr/faults.py)
               "area_mismatch": "area", "hello": "hello interval", "dead": "dead interval",
               "wrong_address": "neighbour address", "wrong_as": "AS number"}  # fmt: skip


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


def _fix(
    sandbox: CommandSandbox,
    emu: Emulator,
    topo: RoutingTopology,
    faults: list[Fault],
    protocols: tuple[str, ...],
) -> list[dict[str, str]] | str:
    """Play the faults' fixes (after they were injected); the commands used, or why not."""
    before = checks.observe(emu, topo, protocols)
    if before.full:
        return "the faults together cause no loss"
    used = []
    for fault in faults:
        for machine, command in fault.fix:
            result = sandbox.run(machine, command)
            if result.status in (Status.TIMEOUT, Status.OUTPUT_LIMIT):
                raise EnvironmentFailure(
                    f"oracle command `{command}` on {machine} was stopped: {result.reason}"
                )
            if result.status is not Status.OK:
                return f"oracle command `{command}` on {machine}: {result.status} {result.reason}"
            used.append({"machine": machine, "command": command})
            after = checks.observe(emu, topo, protocols)
            lost = after.lost_since(before)
            if lost:
                return f"oracle command `{command}` broke {lost}"
            if after.full:
                return used
            before = after
    failing = {p: len(r.failed) for p, r in before.by_protocol.items() if not r.full}
    return f"after every fix these flows still fail: {failing}"


def validate(
    pool: LabPool, topo: RoutingTopology, faults: list[Fault], protocols: tuple[str, ...]
) -> tuple[list[dict[str, str]], list[Fault]] | str:
    """(the oracle's commands, faults in fixing order) if the draw is valid, else why not;
    an EnvironmentFailure (not InjectionFailed) is the environment's, not the draw's."""
    emu, sandbox = pool.get(topo)
    try:
        if len(faults) > 1:
            for fault in faults:
                inject(emu, [fault])
                if checks.observe(emu, topo, protocols).full:
                    return f"{fault.type}/{fault.variant} alone causes no loss"
                emu, sandbox = pool.get(topo)
        why = ""
        for order in (faults, faults[::-1]):
            inject(emu, order)
            outcome = _fix(sandbox, emu, topo, order, protocols)
            emu, sandbox = pool.get(topo)
            if not isinstance(outcome, str):
                return outcome, order
            why = outcome
            if len(faults) == 1:
                break
    except InjectionFailed as err:  # the draw's fault cannot be made on this lab
        return str(err)
    return why


class RoutingQueryGenerator:
    """Draws and validates queries; owns the labs it validates on until closed."""

    def __init__(
        self,
        cfg: RoutingConfig,
        app_name: str = "routing",
        capacity: Callable[[int], object] | None = None,
    ) -> None:
        self.cfg = cfg
        self.app_name = app_name
        self._capacity = capacity  # the app's; it words a CapacityExhausted error
        self.rejected: dict[str, int] = {}  # why draws were dropped, counted

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        if level in FRR_LEVELS:
            if self.cfg.emulator != "mininet":
                raise ConfigError(
                    f"routing levels 4-5 (FRR) run on Mininet only; app.emulator="
                    f"{self.cfg.emulator!r} has levels 1-3 (README: routing levels 4-5)"
                )
            yield from self._generate_frr(level, seed, count, allow_repeats, weights)
            return
        if self.cfg.faults is not None:
            allowed_draws(self.cfg, level)  # a knob leaving nothing fails before any lab
        tracker = KeyTracker(
            self.app_name, level, seed, allow_repeats=allow_repeats, capacity=self._of(level)
        )
        with open_pool(self.cfg) as pool:
            for index in range(count):
                yield self._one(pool, level, seed, index, tracker, weights)

    def _generate_frr(
        self,
        level: int,
        seed: int,
        count: int,
        allow_repeats: bool,
        weights: Mapping[str, float] | None,
    ) -> Iterator[Query]:
        frr_types = level_types(level, self.cfg.faults)
        if not any(frr_types.values()):
            raise ConfigError(
                f"app.faults={self.cfg.faults} names no fault type of level {level}; it draws "
                f"{', '.join(t for ts in level_types(level, None).values() for t in ts)}"
            )
        tracker = KeyTracker(
            self.app_name, level, seed, allow_repeats=allow_repeats, capacity=self._of(level)
        )
        with FrrPool(self.cfg, max_live=min(2, self.cfg.max_live_topologies)) as pool:
            for index in range(count):
                yield self._one(pool, level, seed, index, tracker, weights)

    def _of(self, level: int) -> Callable[[], object] | None:
        """The app's capacity of `level`, for the tracker (a bare generator has none)."""
        capacity = self._capacity
        return None if capacity is None else lambda: capacity(level)

    def _frr_query(
        self,
        level: int,
        seed: int,
        index: int,
        topo: FrrTopology,
        faults: list[Fault],
        oracle: list[dict[str, str]],
    ) -> Query:
        truth: dict[str, Any] = {
            "topology": {"routers": topo.routers, "as_split": topo.split},
            "faults": [f.to_json() for f in faults],
            "oracle": oracle,
            "app_version": APP_VERSION,
        }
        protocols = tuple(self.cfg.probe.protocols)
        return Query(
            query_id=query_id(self.app_name, level, seed, index),
            app=self.app_name,
            level=level,
            seed=seed,
            index=index,
            prompt=frr_prompt(topo, self.cfg.max_turns, protocols),
            answer_type="reachability",
            operation="+".join(sorted(f.type for f in faults)),
            ground_truth=truth,
            env_key=topo.name,
        )

    def _one(
        self,
        pool: LabPool | FrrPool,
        level: int,
        seed: int,
        index: int,
        tracker: KeyTracker,
        weights: Mapping[str, float] | None = None,
    ) -> Query:
        """Query `index`: draw, validate on a live lab, redraw on rejection (the shared
        loop); levels 4-5 draw FRR labs, levels 1-3 plain ones."""
        rng = query_rng(seed, level, index)
        if isinstance(pool, FrrPool):
            draw_one, check, build = (
                frr_draw,
                (lambda t, f: frr_validate(pool, t, f)),
                self._frr_query,
            )
        else:
            protocols = tuple(self.cfg.probe.protocols)
            draw_one, check, build = (
                draw,
                (lambda t, f: validate(pool, t, f, protocols)),
                self._query,
            )

        def pick() -> tuple[str, tuple[Any, list[Fault]]]:
            topo, faults = draw_one(self.cfg, level, rng, weights)
            return fault_key(topo, faults), (topo, faults)

        def attempt(drawn: tuple[Any, list[Fault]]) -> Query | str:
            topo, faults = drawn
            outcome = check(topo, faults)
            if isinstance(outcome, str):
                key = "+".join(f"{f.type}/{f.variant}" for f in faults)
                self.rejected[key] = self.rejected.get(key, 0) + 1
                return outcome
            oracle, ordered = outcome
            return build(level, seed, index, topo, ordered, oracle)

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
            prompt=build_prompt(
                topo, self.cfg.max_turns, self.cfg.emulator, self.cfg.probe.protocols
            ),
            answer_type="reachability",
            operation="+".join(sorted(f.type for f in faults)),
            ground_truth=truth,
            env_key=topo.name,
        )
