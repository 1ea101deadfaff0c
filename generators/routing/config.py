"""Structured-config schema of the routing app (conf/app/routing.yaml).

Keys are named as in a composed run config (`app.probe.timeout_ms`, ...), so a
ConfigError message can be pasted straight into a Hydra override.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from generators.lab.pool import CommandConfig, ProbeConfig, int_in, validate_pool_config
from pipeline.errors import ConfigError
from pipeline.variants import operational


@dataclass
class LevelSize:
    subnets: list[int] = field(default_factory=lambda: [2, 4])  # [min, max] switches N, 2..8
    hosts: list[int] = field(default_factory=lambda: [1, 2])  # [min, max] hosts per switch, 1..4


def _default_sizes() -> list[LevelSize]:
    return [LevelSize([2, 3], [1, 2]), LevelSize([3, 5], [2, 3]), LevelSize([6, 8], [3, 4])]


@dataclass
class RoutingConfig:
    name: str = "routing"  # cell key: the conf/app/*.yaml stem
    kind: str = "routing"  # implementation in the app registry
    max_turns: int = 10  # agent commands per query
    emulator: str = "mininet"  # backend running the labs: mininet | kathara
    sizes: list[LevelSize] = field(default_factory=_default_sizes)  # per level 1, 2, 3
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    command: CommandConfig = field(default_factory=CommandConfig)
    max_live_topologies: int = operational(8)  # topologies an environment keeps running (LRU)

    def validate(self) -> None:
        """Raise ConfigError naming the first wrong key (called when configs are composed)."""
        validate_config(self)


def validate_config(cfg: RoutingConfig, prefix: str = "app") -> None:
    if not isinstance(cfg.name, str) or not cfg.name:
        raise ConfigError(f"{prefix}.name must be a non-empty string, got {cfg.name!r}")
    int_in(cfg.max_turns, f"{prefix}.max_turns", 1, 100)
    if len(cfg.sizes) != 3:
        raise ConfigError(f"{prefix}.sizes must list 3 levels, got {len(cfg.sizes)}")
    for level, size in enumerate(cfg.sizes, 1):
        for key, low, high in (("subnets", 2, 8), ("hosts", 1, 4)):
            pair = list(getattr(size, key))
            where = f"{prefix}.sizes[{level - 1}].{key}"
            if len(pair) != 2:
                raise ConfigError(f"{where} must be [min, max], got {pair!r}")
            lo, hi = (int_in(v, where, low, high) for v in pair)
            if lo > hi:
                raise ConfigError(f"{where}: min {lo} exceeds max {hi}")
    validate_pool_config(cfg, prefix)
    if "icmp" not in cfg.probe.protocols:
        raise ConfigError(
            f"{prefix}.probe.protocols must include icmp (the reachability matrix agents see), "
            f"got {list(cfg.probe.protocols)!r}"
        )
