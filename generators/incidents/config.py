"""Structured-config schema of the incidents app (conf/app/incidents.yaml), and its tiers.

A tier (`TIERS`, levels 6-8) fixes what a query holds and what the agent is given: how
many faults and benign anomalies, the lab sizes drawn, what the observation shows (the
failing pairs, or only their counts and a user's ticket), and the budgets (turns, bytes
read). The config's knobs narrow a tier (`topology`, `size`, `faults`) or choose the task;
they never widen one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generators.lab.pool import CommandConfig, ProbeConfig, int_in
from generators.netlab.spec import FAMILIES, SIZES
from pipeline.api import TASKS, ConfigError, operational

KIB = 1024


@dataclass(frozen=True)
class Tier:
    level: int
    faults: tuple[int, int]  # [min, max] faults per query
    benign: tuple[int, int]  # [min, max] benign anomalies per query
    sizes: tuple[str, ...]  # lab sizes drawn (netlab SIZES)
    turns: int  # the turn budget
    read_bytes: int  # the read budget: bytes of output an episode may read
    symptoms: str  # "pairs": failing pairs listed (bounded); "counts": counts only
    ticket: bool  # a user's ticket names one failing pair far from the cause
    composed: bool  # at least one masking pair or a distant symptom, proven live
    intent_only: int  # at least this many faults that lose no flow (intent or closed only)
    # A detect query that is not healthy holds `detect_faults` faults, none composed (no
    # ticket is shown, no fix is asked): with several flow-losing faults one ping would
    # tell; with `detect_silent`, every one of them loses no flow, so only auditing the
    # stated intent (paths, ECMP, VRRP, what stays closed) tells it from a healthy one.
    detect_faults: tuple[int, int]
    detect_silent: bool
    # [min, max] masking pairs a composed query draws (two faults on one element, the
    # second hidden until the first is fixed); with min 0 a pair is drawn half the time
    # where a ticket can be distant. The reference player's misses at level 8 were the
    # hidden end of a pair and coverage under the turn budget.
    pairs: tuple[int, int] = (0, 1)
    # [min, max] order traps a mitigate or localize query draws (faults/traps.py: a fault
    # keeping traffic off an element another breaks unseen by the protocols; fixing the
    # first one first breaks what held): 0 at every level until a measurement asks for them
    traps: tuple[int, int] = (0, 0)


TIERS = {
    6: Tier(
        6,
        (1, 1),
        (0, 0),
        ("small", "medium"),
        30,
        192 * KIB,
        "pairs",
        False,
        False,
        0,
        (1, 1),
        False,
    ),
    7: Tier(
        7,
        (2, 3),
        (1, 1),
        ("medium", "large"),
        40,
        256 * KIB,
        "counts",
        True,
        True,
        0,
        (1, 2),
        False,
    ),
    8: Tier(
        8,
        (4, 5),
        (2, 3),
        ("large", "xlarge"),
        50,
        320 * KIB,
        "counts",
        True,
        True,
        1,
        (1, 2),
        True,
        pairs=(1, 1),
    ),
}


@dataclass
class IncidentsConfig:
    name: str = "incidents"  # cell key: the conf/app/*.yaml stem
    kind: str = "incidents"  # implementation in the app registry
    task: str = "mitigate"  # mitigate | detect | localize (README: Task kinds)
    topology: str | None = None  # a netlab family (chain, ring, ...); None: every family
    size: str | None = None  # small | medium | large | xlarge at every level; None: the tier's
    faults: list[str] | None = None  # fault kinds or whole families drawn; None: every one
    max_turns: int | None = None  # None: the tier's budget (30 / 40 / 50)
    read_budget: int | None = None  # bytes an episode may read; None: the tier's (192-320 KiB)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    command: CommandConfig = field(default_factory=CommandConfig)
    max_live_labs: int = operational(2)  # labs an environment keeps running (LRU)

    def validate(self) -> None:
        """Raise ConfigError naming the first wrong key (called when configs are composed)."""
        validate_config(self)

    def turns(self, level: int) -> int:
        return self.max_turns if self.max_turns is not None else TIERS[level].turns

    def read_bytes(self, level: int) -> int:
        return self.read_budget if self.read_budget is not None else TIERS[level].read_bytes

    def sizes(self, level: int) -> tuple[str, ...]:
        return (self.size,) if self.size is not None else TIERS[level].sizes

    def families(self) -> tuple[str, ...]:
        return (self.topology,) if self.topology is not None else FAMILIES


def validate_config(cfg: IncidentsConfig, prefix: str = "app") -> None:
    if not isinstance(cfg.name, str) or not cfg.name:
        raise ConfigError(f"{prefix}.name must be a non-empty string, got {cfg.name!r}")
    if cfg.task not in TASKS:
        raise ConfigError(f"{prefix}.task must be one of {', '.join(TASKS)}, got {cfg.task!r}")
    if cfg.topology is not None and cfg.topology not in FAMILIES:
        raise ConfigError(
            f"{prefix}.topology must be null or one of {', '.join(FAMILIES)}, got {cfg.topology!r}"
        )
    if cfg.size is not None and cfg.size not in SIZES:
        raise ConfigError(
            f"{prefix}.size must be null or one of {', '.join(SIZES)}, got {cfg.size!r}"
        )
    if cfg.faults is not None:
        selected(cfg.faults, f"{prefix}.faults")
    if cfg.max_turns is not None:
        int_in(cfg.max_turns, f"{prefix}.max_turns", 1, 200)
    if cfg.read_budget is not None:
        int_in(cfg.read_budget, f"{prefix}.read_budget", 1024, 64 << 20)
    int_in(cfg.probe.timeout_ms, f"{prefix}.probe.timeout_ms", 20, 5000)
    int_in(cfg.probe.retries, f"{prefix}.probe.retries", 1, 5)
    if list(cfg.probe.protocols) != ["icmp", "tcp", "udp"]:
        raise ConfigError(
            f"{prefix}.probe.protocols must be [icmp, tcp, udp] (the intent: every host pair "
            f"over all three), got {list(cfg.probe.protocols)!r}"
        )
    timeout = cfg.command.timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 60:
        raise ConfigError(f"{prefix}.command.timeout_s must be in (0, 60], got {timeout!r}")
    int_in(cfg.command.output_bytes, f"{prefix}.command.output_bytes", 256, 1 << 20)
    int_in(cfg.max_live_labs, f"{prefix}.max_live_labs", 1, 8)


def selected(names: Any, key: str = "app.faults") -> frozenset[str]:
    """The fault kinds `names` (kind ids or family names) select; ConfigError naming the
    first name that is neither, or an empty or repeating list."""
    from generators.incidents.faults import kinds as catalogue

    if isinstance(names, str) or not list(names):
        raise ConfigError(f"{key} must be null or a non-empty list of kinds or families")
    names = list(names)
    if len(set(names)) != len(names):
        raise ConfigError(f"{key} lists a name twice: {names!r}")
    known = {k.id: k for k in catalogue.kinds()}
    out: set[str] = set()
    for name in names:
        if name in catalogue.FAMILIES:
            out |= {k for k, kind in known.items() if kind.family == name}
        elif name in known:
            out.add(name)
        else:
            raise ConfigError(
                f"{key}: {name!r} is neither a fault family ({', '.join(catalogue.FAMILIES)}) "
                f"nor a fault kind ({', '.join(sorted(known)) or 'none registered'})"
            )
    if not out:
        raise ConfigError(f"{key}={names!r} selects no registered fault kind")
    return frozenset(out)
