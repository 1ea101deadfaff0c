"""Structured-config schema of the routing app (conf/app/routing.yaml).

Keys are named as in a composed run config (`app.probe.timeout_ms`, ...), so a
ConfigError message can be pasted straight into a Hydra override.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import ConfigError

EMULATORS = ("mininet",)


@dataclass
class LevelSize:
    subnets: list[int] = field(default_factory=lambda: [2, 4])  # [min, max] switches N, 2..8
    hosts: list[int] = field(default_factory=lambda: [1, 2])  # [min, max] hosts per switch, 1..4


def _default_sizes() -> list[LevelSize]:
    return [LevelSize([2, 3], [1, 2]), LevelSize([3, 5], [2, 3]), LevelSize([6, 8], [3, 4])]


@dataclass
class ProbeConfig:
    timeout_ms: int = 250  # fping's wait for a reply, per try
    retries: int = 1  # fping retries to a silent target before calling it unreachable


@dataclass
class CommandConfig:
    timeout_s: float = 5.0  # wall-clock limit of one agent command
    output_bytes: int = 8192  # output kept and shown; the command is stopped past it


@dataclass
class RoutingConfig:
    name: str = "routing"  # cell key: the conf/app/*.yaml stem
    kind: str = "routing"  # implementation in the app registry
    max_turns: int = 10  # agent commands per query
    emulator: str = "mininet"  # backend running the labs
    sizes: list[LevelSize] = field(default_factory=_default_sizes)  # per level 1, 2, 3
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    command: CommandConfig = field(default_factory=CommandConfig)
    max_live_topologies: int = 8  # topologies an environment keeps running (LRU)

    def validate(self) -> None:
        """Raise ConfigError naming the first wrong key (called when configs are composed)."""
        validate_config(self)


def _int_in(value: Any, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key} must be an integer from {low} to {high}, got {value!r}")
    return value


def validate_config(cfg: RoutingConfig, prefix: str = "app") -> None:
    if not isinstance(cfg.name, str) or not cfg.name:
        raise ConfigError(f"{prefix}.name must be a non-empty string, got {cfg.name!r}")
    _int_in(cfg.max_turns, f"{prefix}.max_turns", 1, 100)
    if cfg.emulator not in EMULATORS:
        raise ConfigError(
            f"{prefix}.emulator must be one of {list(EMULATORS)}, got {cfg.emulator!r}"
        )
    if len(cfg.sizes) != 3:
        raise ConfigError(f"{prefix}.sizes must list 3 levels, got {len(cfg.sizes)}")
    for level, size in enumerate(cfg.sizes, 1):
        for key, low, high in (("subnets", 2, 8), ("hosts", 1, 4)):
            pair = list(getattr(size, key))
            where = f"{prefix}.sizes[{level - 1}].{key}"
            if len(pair) != 2:
                raise ConfigError(f"{where} must be [min, max], got {pair!r}")
            lo, hi = (_int_in(v, where, low, high) for v in pair)
            if lo > hi:
                raise ConfigError(f"{where}: min {lo} exceeds max {hi}")
    _int_in(cfg.probe.timeout_ms, f"{prefix}.probe.timeout_ms", 20, 5000)
    _int_in(cfg.probe.retries, f"{prefix}.probe.retries", 0, 5)
    timeout = cfg.command.timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 60:
        raise ConfigError(f"{prefix}.command.timeout_s must be in (0, 60], got {timeout!r}")
    _int_in(cfg.command.output_bytes, f"{prefix}.command.output_bytes", 256, 1 << 20)
    _int_in(cfg.max_live_topologies, f"{prefix}.max_live_topologies", 1, 16)
