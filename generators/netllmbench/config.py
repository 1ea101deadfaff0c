"""Structured-config schema of the netllmbench app (conf/app/netllmbench*.yaml).

Keys are named as in a composed run config (`app.sizes[2].hosts`, ...), so a ConfigError
message can be pasted straight into a Hydra override.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from generators.lab.pool import CommandConfig, ProbeConfig, int_in, validate_pool_config
from pipeline.errors import ConfigError
from pipeline.variants import operational


@dataclass
class LevelSize:
    routers: int = 1  # 1, or 2 joined by a transit switch with static routes
    switches: list[int] = field(default_factory=lambda: [2, 2])  # [min, max] LAN switches
    hosts: list[int] = field(default_factory=lambda: [3, 3])  # [min, max] hosts in all


def _default_sizes() -> list[LevelSize]:
    return [
        LevelSize(1, [2, 2], [3, 3]),
        LevelSize(1, [2, 3], [3, 4]),
        LevelSize(2, [3, 4], [4, 6]),
    ]


@dataclass
class NetLLMBenchConfig:
    name: str = "netllmbench"  # cell key: the conf/app/*.yaml stem
    kind: str = "netllmbench"  # implementation in the app registry
    attempts: int = 3  # tries an agent gets per task (NetLLMBench: 3)
    assist_failed_tasks: bool = True  # complete a failed task, so the next starts fair
    paper_lab_first: bool = True  # query 0 of level 2 is NetLLMBench's own lab (seeds 0, 4, ...)
    emulator: str = "mininet"  # backend running the labs: mininet | kathara
    sizes: list[LevelSize] = field(default_factory=_default_sizes)  # per level 1, 2, 3
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    command: CommandConfig = field(default_factory=CommandConfig)
    max_live_topologies: int = operational(4)  # labs an environment keeps running (LRU)

    def validate(self) -> None:
        """Raise ConfigError naming the first wrong key (called when configs are composed)."""
        validate_config(self)


def validate_config(cfg: NetLLMBenchConfig, prefix: str = "app") -> None:
    if not isinstance(cfg.name, str) or not cfg.name:
        raise ConfigError(f"{prefix}.name must be a non-empty string, got {cfg.name!r}")
    int_in(cfg.attempts, f"{prefix}.attempts", 1, 10)
    for key in ("assist_failed_tasks", "paper_lab_first"):
        if not isinstance(getattr(cfg, key), bool):
            raise ConfigError(f"{prefix}.{key} must be true or false, got {getattr(cfg, key)!r}")
    if len(cfg.sizes) != 3:
        raise ConfigError(f"{prefix}.sizes must list 3 levels, got {len(cfg.sizes)}")
    for level, size in enumerate(cfg.sizes, 1):
        where = f"{prefix}.sizes[{level - 1}]"
        int_in(size.routers, f"{where}.routers", 1, 2)
        bounds = {}
        for key, low, high in (("switches", size.routers, 6), ("hosts", 1, 10)):
            pair = list(getattr(size, key))
            if len(pair) != 2:
                raise ConfigError(f"{where}.{key} must be [min, max], got {pair!r}")
            lo, hi = (int_in(v, f"{where}.{key}", low, high) for v in pair)
            if lo > hi:
                raise ConfigError(f"{where}.{key}: min {lo} exceeds max {hi}")
            bounds[key] = (lo, hi)
        if bounds["hosts"][0] < bounds["switches"][1]:
            raise ConfigError(
                f"{where}: every switch needs a host, so hosts' min ({bounds['hosts'][0]}) must "
                f"be at least switches' max ({bounds['switches'][1]})"
            )
        if size.routers == 2 and bounds["switches"][0] < 2:
            raise ConfigError(f"{where}: two routers need at least 2 switches, one each")
    validate_pool_config(cfg, prefix)
