"""Seeded NetLLMBench queries, each validated on a live lab when generated.

Query i of (level, seed) is drawn with `random.Random(f"{seed}:{level}:{i}")` alone, so
n queries are a prefix of any larger set with the same arguments. A draw picks the lab
(lab.draw_network, sized per level from the config), the ping's source and target (on
different switches; behind different routers when there are two), and a task order that
respects the dependencies (tasks.order).

  L1  one task of a paper-sized chain, on a lab prepared up to that task;
  L2  the whole chain (NetLLMBench's nine tasks when the lab has three hosts); with
      `paper_lab_first`, query 0 is NetLLMBench's own lab in its own order (for the
      seeds of the slot that owns its key, 0, 4, ...: a key belongs to one slot);
  L3  the chain on a larger lab with two routers and static routes between them;
  L4  two routers, less scaffolding: the tasks as goals over an addressing plan by role
      (goals.py), no interface names, a scenario of task kinds played (the rest in
      service before the agent starts), the lab's interfaces described;
  L5  as L4 on a chain of three or more routers, the final ping across the chain.

Knobs (config.py): `size` sizes every level's lab by class; `tasks` selects the kind of
level 1's task and the scenarios of levels 4 and 5 (levels 2 and 3 play NetLLMBench's
whole chain and refuse it). Failure-driven sampling (`weights`, pipeline/focus.py) draws
level 1's task kind and levels 4 and 5's scenario by weight; without weights and knobs,
levels 1-3 draw byte for byte what they always drew.

Validation plays the oracle through the command sandbox on a live lab, as the episode
would: each played task must not hold before its command (so a null agent fails), its
command must run cleanly and complete it, no command may undo an earlier task or break
an expected flow, and the network it leaves must work end to end (checks.py). Only what
the draw decides rejects it; the environment failing (a command killed at its time limit,
a lab that cannot be reset) raises EnvironmentFailure, retried on the same draw by
pipeline/querygen.py, so the same seed always gives the same queries.

A query's key is the lab with its addressing plan, the tasks prepared before the agent
starts (as a set: their order leaves the same state) and the tasks it plays, in order
(`task_key`). It is computed from the draw, so a draw whose key another seed slot owns or
an earlier query of the seed took is redrawn without touching a lab
(pipeline/querygen.py).
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator, Mapping
from typing import Any

from emulators.netcmd.sandbox import Status
from generators.lab.pool import LabPool, open_pool
from generators.netllmbench import APP_VERSION
from generators.netllmbench.capacity import capacity
from generators.netllmbench.config import LEVELS, NetLLMBenchConfig, level_size
from generators.netllmbench.environment import TaskChain, attempts_of, prepare, query_tasks
from generators.netllmbench.goals import GOAL_LEVELS, build_goal_prompt, scenarios
from generators.netllmbench.lab import Network, Size, draw_network, paper_network
from generators.netllmbench.prompt import build_prompt
from generators.netllmbench.tasks import Task, order, tasks_of
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

__all__ = ["LEVELS", "NetLLMBenchQueryGenerator", "draw", "task_key", "validate"]
MAX_DRAWS = 10
PAPER_PING = ("h3", "h2")  # NetLLMBench pings H2 from H3

log = logging.getLogger(__name__)


def ping_pair(net: Network, rng: random.Random, across: bool = False) -> tuple[str, str]:
    """A source and a target host on different switches (behind different routers when
    there are two or more; `across`: behind the two ends of the chain)."""
    switch = {h: net.port(h).switch for h in net.hosts}
    router = {h: net.router_on(switch[h]).device for h in net.hosts}
    far = len(net.routers) > 1
    ends = {net.routers[0], net.routers[-1]}
    pairs = [
        (a, b)
        for a in net.hosts
        for b in net.hosts
        if switch[a] != switch[b]
        and (not far or router[a] != router[b])
        and (not across or {router[a], router[b]} == ends)
    ]
    return rng.choice(pairs)


Drawn = tuple[Network, list[Task], int, str]  # lab, tasks in playing order, prepared, operation


def draw(
    cfg: NetLLMBenchConfig,
    level: int,
    index: int,
    rng: random.Random,
    paper: bool = True,
    weights: Mapping[str, float] | None = None,
) -> Drawn:
    """(lab, every task in playing order, how many are prepared before the agent starts,
    the operation label); `paper`: query 0 of level 2 may be NetLLMBench's own lab."""
    if level in GOAL_LEVELS:
        return _draw_goal(cfg, level, rng, weights)
    # NetLLMBench's own lab has its own size: a cell of a size class draws query 0 too
    if level == 2 and index == 0 and cfg.paper_lab_first and paper and cfg.size is None:
        net = paper_network()
        tasks = tasks_of(net, PAPER_PING)
        return net, tasks, 0, f"chain{len(tasks)}"
    spec = level_size(cfg, level)
    switches = rng.randint(*spec.switches)
    size = Size(spec.routers, switches, rng.randint(max(spec.hosts[0], switches), spec.hosts[1]))
    net = draw_network(rng, size)
    tasks = order(tasks_of(net, ping_pair(net, rng)), rng)
    if level != 1:
        return net, tasks, 0, f"chain{len(tasks)}"
    if cfg.tasks is None and weights is None:
        first = rng.randrange(len(tasks))  # as every earlier version drew it
    else:
        held = sorted({t.kind for t in tasks} & set(cfg.tasks or [t.kind for t in tasks]))
        kind = weighted_choice(rng, held, weights)
        first = rng.choice([k for k, t in enumerate(tasks) if t.kind == kind])
    return net, tasks, first, tasks[first].kind


def _draw_goal(
    cfg: NetLLMBenchConfig, level: int, rng: random.Random, weights: Mapping[str, float] | None
) -> Drawn:
    spec = level_size(cfg, level)
    switches = rng.randint(*spec.switches)
    size = Size(spec.routers, switches, rng.randint(max(spec.hosts[0], switches), spec.hosts[1]))
    net = draw_network(rng, size, described=True)
    scenario = weighted_choice(rng, scenarios(cfg.tasks), weights, label=lambda s: s.name)
    every = tasks_of(net, ping_pair(net, rng, across=level == 5))
    prepared = [t for t in every if t.kind not in scenario.kinds]
    played = [t for t in every if t.kind in scenario.kinds]
    played = order(played, rng, done=[t.label for t in prepared])
    return net, prepared + played, len(prepared), scenario.name


def check_level(cfg: NetLLMBenchConfig, level: int, weights: Mapping[str, float] | None) -> None:
    """Raise ConfigError when the knobs or weights cannot apply to `level`."""
    if level in (2, 3) and (cfg.tasks is not None or weights is not None):
        raise ConfigError(
            f"level={level} plays NetLLMBench's whole chain: app.tasks and failure-driven "
            "sampling (focus.results) apply to levels 1, 4 and 5"
        )
    if level in GOAL_LEVELS and not scenarios(cfg.tasks):
        raise ConfigError(
            f"app.tasks={cfg.tasks} selects no scenario of level {level}: each needs "
            "[route] at least (generators/netllmbench/goals.py)"
        )
    if level == 1 and cfg.tasks is not None:
        kinds = set(cfg.tasks) - ({"route"} if level_size(cfg, 1).routers == 1 else set())
        if not kinds:
            raise ConfigError(f"app.tasks={cfg.tasks}: level 1 has one router, so no route")


def task_key(net: Network, tasks: list[Task], first: int, level: int) -> str:
    """The key of a draw; see the module docstring."""
    played = tasks[first:] if level > 1 else tasks[first : first + 1]
    prepared = sorted(t.label for t in tasks[:first])
    return query_key(net.to_json(), prepared, [t.to_json() for t in played])


def validate(pool: LabPool, cfg: NetLLMBenchConfig, query: Query) -> str | None:
    """Play the oracle on a live lab; None if the query is valid, else why not."""
    net, prepared, tasks = query_tasks(query)
    emu, sandbox = pool.get(net)
    prepare(emu, prepared)
    chain = TaskChain(query, emu, sandbox, net, prepared, tasks, cfg)
    for turn, command in enumerate(query.ground_truth["oracle"], 1):
        step = chain.step(json.dumps(command))
        ev = step.evidence
        if ev.get("sandbox") in (Status.TIMEOUT, Status.OUTPUT_LIMIT):
            raise EnvironmentFailure(
                f"oracle turn {turn} (`{command['command']}` on {command['machine']}) was "
                f"stopped: {step.error}"
            )
        if ev.get("sandbox") != Status.OK or not ev["solved"] or ev["broken"] or ev["broke_flows"]:
            return (
                f"oracle turn {turn} ({ev['task']}: `{command['command']}` on "
                f"{command['machine']}): sandbox {ev.get('sandbox')}, solved {ev['solved']}, "
                f"undid {ev['broken']}, broke {ev['broke_flows']}: {step.output[:200]}"
            )
    if ev["undone"] or ev["failing"]:
        return f"after the oracle: undone {ev['undone']}, failing {ev['failing']}"
    return None


class NetLLMBenchQueryGenerator:
    """Draws and validates queries; owns the labs it validates on until closed."""

    def __init__(self, cfg: NetLLMBenchConfig, app_name: str = "netllmbench") -> None:
        self.cfg = cfg
        self.app_name = app_name

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        check_level(self.cfg, level, weights)

        tracker = KeyTracker(
            self.app_name,
            level,
            seed,
            allow_repeats=allow_repeats,
            capacity=lambda: capacity(self.cfg, level),
        )
        with open_pool(self.cfg) as pool:
            for index in range(count):
                yield self._one(pool, level, seed, index, tracker, weights)

    def _one(
        self,
        pool: LabPool,
        level: int,
        seed: int,
        index: int,
        tracker: KeyTracker,
        weights: Mapping[str, float] | None = None,
    ) -> Query:
        rng = query_rng(seed, level, index)

        picks = []

        def pick() -> tuple[str, Drawn]:
            # NetLLMBench's own lab is one key: only its slot's seeds (0, 4, ...) get it.
            drawn = draw(self.cfg, level, index, rng, paper=not picks, weights=weights)
            net, tasks, first, _ = drawn
            picks.append(net.name)
            return task_key(net, tasks, first, level), drawn

        def attempt(drawn: Drawn) -> Query | str:
            query = self.query(level, seed, index, drawn)
            why = validate(pool, self.cfg, query)
            return query if why is None else why

        taken = tracker.take(index, pick, attempt, max_draws=MAX_DRAWS)
        return stamp(taken.value, taken)

    def query(self, level: int, seed: int, index: int, drawn: Drawn) -> Query:
        """The query of a draw (not validated)."""
        net, tasks, first, operation = drawn
        played = tasks[first:] if level > 1 else tasks[first : first + 1]
        truth: dict[str, Any] = {
            "network": net.to_json(),
            "tasks": [t.to_json() for t in tasks[: first + len(played)]],
            "first": first,
            "oracle": [{"machine": t.device, "command": t.command()} for t in played],
            "app_version": APP_VERSION,
        }
        return Query(
            query_id=query_id(self.app_name, level, seed, index),
            app=self.app_name,
            level=level,
            seed=seed,
            index=index,
            prompt=self._prompt(level, net, played, tasks[:first]),
            answer_type="configuration",
            operation=operation,
            ground_truth=truth,
            env_key=net.name,
            size=self.cfg.size or "",
        )

    def _prompt(self, level: int, net: Network, played: list[Task], prepared: list[Task]) -> str:
        if level in GOAL_LEVELS:
            attempts = attempts_of(self.cfg, level)
            return build_goal_prompt(net, played, prepared, self.cfg.emulator, attempts)
        return build_prompt(net, played, prepared, self.cfg)
