"""Structured-config schema of the routing app (conf/app/routing.yaml).

Keys are named as in a composed run config (`app.probe.timeout_ms`, ...), so a
ConfigError message can be pasted straight into a Hydra override.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from generators.lab.pool import CommandConfig, ProbeConfig, int_in, validate_pool_config
from generators.routing.faults import TYPES
from generators.routing.frr.faults import TYPES as FRR_TYPES
from pipeline.api import ConfigError, operational


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
    frr_sizes: list[list[int]] = field(  # routers [min, max] at levels 4 and 5 (FRR)
        default_factory=lambda: [[3, 4], [4, 5]]
    )
    faults: list[str] | None = None  # fault types drawn (levels 1-5); None: every one
    size: str | None = None  # small | medium | large: a fixed size at every level; None: ranges
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    command: CommandConfig = field(default_factory=CommandConfig)
    max_live_topologies: int = operational(8)  # topologies an environment keeps running (LRU)

    def validate(self) -> None:
        """Raise ConfigError naming the first wrong key (called when configs are composed)."""
        validate_config(self)


SIZES = ("small", "medium", "large")


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
    if len(cfg.frr_sizes) != 2:
        raise ConfigError(f"{prefix}.frr_sizes must list levels 4 and 5, got {cfg.frr_sizes!r}")
    for level, pair in zip((4, 5), cfg.frr_sizes, strict=True):
        where = f"{prefix}.frr_sizes[{level - 4}]"
        if len(list(pair)) != 2:
            raise ConfigError(f"{where} must be [min, max], got {pair!r}")
        lo, hi = (int_in(v, where, 3 if level == 4 else 4, 6) for v in pair)
        if lo > hi:
            raise ConfigError(f"{where}: min {lo} exceeds max {hi}")
    if cfg.size is not None and cfg.size not in SIZES:
        raise ConfigError(f"{prefix}.size must be null or one of {list(SIZES)}, got {cfg.size!r}")
    if cfg.faults is not None:
        faults = list(cfg.faults)
        known = (*TYPES, *FRR_TYPES)
        wrong = [f for f in faults if f not in known]
        if not faults or wrong or len(set(faults)) != len(faults):
            raise ConfigError(
                f"{prefix}.faults must be null or a list of distinct fault types from "
                f"{', '.join(known)}; got {faults!r}"
            )
    validate_pool_config(cfg, prefix)
    if "icmp" not in cfg.probe.protocols:
        raise ConfigError(
            f"{prefix}.probe.protocols must include icmp (the reachability matrix agents see), "
            f"got {list(cfg.probe.protocols)!r}"
        )
