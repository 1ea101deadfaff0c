"""`IncidentsApp`: the incidents app behind pipeline.core.App.

Generation and play need root, Mininet and FRR (queries are validated on live labs);
scoring needs neither: it reads only the query and the recorded steps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from generators.incidents import capacity as counting
from generators.incidents import scoring
from generators.incidents.config import IncidentsConfig, selected, validate_config
from generators.incidents.episode import IncidentsEnvironment
from generators.incidents.faults import kinds as catalogue
from generators.incidents.generator import IncidentsGenerator
from generators.lab.reply import Command, CommandReplyFormat
from pipeline.api import Capacity, Label, Query, StepResult, Verdict, Vocabulary

LOOK_COMMAND = "ip -br addr"  # the oracle's idle reply on the first router: it only looks
FEW_SHOT: tuple[tuple[str, str], ...] = (
    (
        "Checks failing now:\n  OSPF adjacencies not Full (router interface): 2: r3 r3-eth2, "
        "r4 r4-eth1",
        '{"machine": "r3", "command": "vtysh -c \'show ip ospf interface r3-eth2\'"}',
    ),
    (
        "Ticket: a user on h5_1 (10.2.5.11) cannot reach h2_1 (10.2.2.11) (TCP).",
        '{"machine": "h5_1", "command": "traceroute -n -q 1 -w 1 10.2.2.11"}',
    ),
)


def kind_weights(weights: Mapping[str, float] | None) -> dict[str, float] | None:
    """Per kind id, from weights per operation label (kinds joined by `+`)."""
    if weights is None:
        return None
    out: dict[str, float] = {}
    for label, weight in weights.items():
        for kind in label.split("+"):
            out[kind] = max(out.get(kind, 0.0), float(weight))
    return out


class IncidentsApp:
    """Generator, environment, oracle and scorer of the incidents app, versioned together."""

    reply_format = CommandReplyFormat(Command("r1", "vtysh -c 'show ip ospf neighbor'"))
    few_shot = FEW_SHOT

    def __init__(
        self,
        cfg: IncidentsConfig,
        cache_dir: Path | None = None,
        shared_data_dir: Path | None = None,
    ) -> None:
        validate_config(cfg)
        self.cfg = cfg
        self.name = cfg.name
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None

    def vocabulary(self, level: int) -> Vocabulary:
        """Every fault kind the config can draw at `level`, whatever the lab: the
        localize prompt lists them all (README: Task kinds). A kind bound to lab sizes
        (the security policy's, large and xlarge labs) only where the level draws them."""
        allowed = selected(self.cfg.faults) if self.cfg.faults is not None else None
        sizes = set(self.cfg.sizes(level))
        return Vocabulary(
            tuple(
                Label(k.id, k.meaning, k.component)
                for k in catalogue.kinds()
                if (allowed is None or k.id in allowed) and (k.sizes is None or k.sizes & sizes)
            )
        )

    def generator(self) -> IncidentsGenerator:
        return IncidentsGenerator(self.cfg, self.name, self.vocabulary, self.capacity)

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        """`weights`: per operation label (pipeline/focus.py), for failure-driven
        sampling; a kind weighs what the heaviest operation holding it weighs."""
        return self.generator().generate(
            level, seed, count, allow_repeats=allow_repeats, weights=kind_weights(weights)
        )

    def capacity(self, level: int) -> Capacity:
        return counting.capacity(self.cfg, level, self.cache_dir)

    def environment(self) -> IncidentsEnvironment:
        return IncidentsEnvironment(self.cfg)

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        replies = query.ground_truth["oracle"]
        if turn <= len(replies):
            return json.dumps(replies[turn - 1])
        if query.task != "mitigate" and replies:
            return json.dumps(replies[-1])
        router = query.ground_truth.get("faults", [{}])[0].get("cause", {}).get("device", "r1")
        return json.dumps({"machine": router, "command": LOOK_COMMAND})

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        return scoring.score(query, steps)
