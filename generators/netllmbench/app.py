"""`NetLLMBenchApp`: NetLLMBench's configuration tasks behind pipeline.core.App.

Generation and play need root and an emulator (queries are validated on a live lab);
scoring needs neither: it reads only the query and the recorded steps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from generators.lab.reply import Command, CommandReplyFormat
from generators.netllmbench import capacity, scoring
from generators.netllmbench.config import NetLLMBenchConfig, validate_config
from generators.netllmbench.environment import NetLLMBenchEnvironment
from generators.netllmbench.generator import NetLLMBenchQueryGenerator
from pipeline.api import Capacity, Query, StepResult, Verdict

# After the last task: look, change nothing (the episode has ended by then anyway).
IDLE_COMMAND = {"machine": "r1", "command": "ip -br addr"}
# Tasks in the style of the app's observations, answered the way we would answer them.
FEW_SHOT: tuple[tuple[str, str], ...] = (
    (
        "Task 1 of 9: Give host pc2 the IPv4 address 10.4.7.20/24 on its interface eth0.",
        '{"machine": "pc2", "command": "ip addr add 10.4.7.20/24 dev eth0"}',
    ),
    (
        "Task 6 of 9: Set the default gateway of pc2 to 10.4.7.1 (gw1's address on its subnet).",
        '{"machine": "pc2", "command": "ip route add default via 10.4.7.1"}',
    ),
    (
        "Task 9 of 9: From pc3, ping pc2 (10.4.7.20) 3 times; every reply must arrive.",
        '{"machine": "pc3", "command": "ping -c 3 10.4.7.20"}',
    ),
)


class NetLLMBenchApp:
    """Generator, environment, oracle and scorer of the netllmbench app, versioned together."""

    reply_format = CommandReplyFormat(Command("h1", "ip addr add 192.168.1.10/24 dev eth0"))
    few_shot = FEW_SHOT

    def __init__(
        self,
        cfg: NetLLMBenchConfig,
        cache_dir: Path | None = None,
        shared_data_dir: Path | None = None,
    ) -> None:
        validate_config(cfg)
        self.cfg = cfg
        self.name = cfg.name

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        """Queries of `level`; `weights` (failure-driven sampling, levels 1, 4 and 5) weigh
        the operation labels: level 1's task kind, levels 4 and 5's scenario."""
        generator = NetLLMBenchQueryGenerator(self.cfg, app_name=self.name)
        return generator.generate(level, seed, count, allow_repeats=allow_repeats, weights=weights)

    def capacity(self, level: int) -> Capacity:
        """Distinct queries of `level`: a lower bound (generators/netllmbench/capacity.py)."""
        return capacity.capacity(self.cfg, level)

    def environment(self) -> NetLLMBenchEnvironment:
        return NetLLMBenchEnvironment(self.cfg)

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        commands = query.ground_truth["oracle"]
        return json.dumps(commands[turn - 1] if turn <= len(commands) else IDLE_COMMAND)

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        return scoring.score(query, steps)
