"""`RoutingApp`: the routing troubleshooting app behind pipeline.core.App.

Generation and play both need root and Mininet (queries are validated on a live
network); scoring needs neither: it reads only the query and the recorded steps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from generators.lab.reply import Command, CommandReplyFormat
from generators.routing import capacity, scoring
from generators.routing.config import RoutingConfig, validate_config
from generators.routing.environment import RoutingEnvironment
from generators.routing.generator import RoutingQueryGenerator
from generators.routing.observations import changes
from pipeline.api import Capacity, Query, StepResult, Verdict

IDLE_COMMAND = {"machine": "r0", "command": "ip -br addr"}  # after the fixes: look, change nothing
IDLE_COMMAND_FRR = {"machine": "r1", "command": "ip -br addr"}  # levels 4-5 have no r0
# Situations in the style of the app's observations, answered the way we would answer them.
FEW_SHOT: tuple[tuple[str, str], ...] = (
    (
        "h1_1 cannot ping any machine of subnet s2; r0 can ping everyone.\n"
        "*** Results: 33% dropped (8/12 received)",
        '{"machine": "r0", "command": "ip route show"}',
    ),
    (
        "r0$ ip route show\n10.0.1.0/24 dev r0-eth1 proto kernel scope link src 10.0.1.1\n"
        "(no route for 10.0.2.0/24; r0-eth2 is DOWN)",
        '{"machine": "r0", "command": "ip link set r0-eth2 up"}',
    ),
)


class RoutingApp:
    """Generator, environment, oracle and scorer of the routing app, versioned together."""

    reply_format = CommandReplyFormat(Command("r0", "ip route show"))
    few_shot = FEW_SHOT
    # agent.context.observations=changes: later matrices as their changes
    observation_changes = staticmethod(changes)

    def __init__(
        self, cfg: RoutingConfig, cache_dir: Path | None = None, shared_data_dir: Path | None = None
    ) -> None:
        validate_config(cfg)
        self.cfg = cfg
        self.name = cfg.name
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        """`weights`: per operation label, for failure-driven sampling (pipeline/focus.py);
        None draws what every seed always drew."""
        generator = RoutingQueryGenerator(self.cfg, app_name=self.name, capacity=self.capacity)
        return generator.generate(level, seed, count, allow_repeats=allow_repeats, weights=weights)

    def capacity(self, level: int) -> Capacity:
        """Distinct queries of `level`: a counting formula (generators/routing/capacity.py)."""
        return capacity.capacity(self.cfg, level)

    def environment(self) -> RoutingEnvironment:
        return RoutingEnvironment(self.cfg)

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        commands = query.ground_truth["oracle"]
        idle = IDLE_COMMAND_FRR if query.level >= 4 else IDLE_COMMAND
        command = commands[turn - 1] if turn <= len(commands) else idle
        return json.dumps(command)

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        return scoring.score(query, steps)
