"""Structured-config schema of the netllmbench app (conf/app/netllmbench*.yaml).

Keys are named as in a composed run config (`app.sizes[2].hosts`, ...), so a ConfigError
message can be pasted straight into a Hydra override.

Knobs independent of level (each value is a variant, so a multirun gives labelled cells):
`size` (small, medium, large: `SIZES` gives the LAN switches and hosts of each, and the
routers of level 5's chain; null: `sizes`, per level) and `tasks` (the task kinds the
agent plays: level 1's one task, levels 4 and 5's scenarios; null: all).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from generators.lab.pool import CommandConfig, ProbeConfig, int_in, validate_pool_config
from generators.netllmbench import APP
from pipeline.api import ConfigError, operational

KINDS = ("host_ip", "router_ip", "route", "gateway", "ping")  # as tasks.KINDS
LEVELS = APP.levels
ROUTERS = {1: (1, 1), 2: (1, 1), 3: (2, 2), 4: (2, 2), 5: (3, 6)}  # allowed per level


@dataclass
class LevelSize:
    routers: int = 1  # 1; 2 joined by a transit switch; 3 or more in a chain (level 5)
    switches: list[int] = field(default_factory=lambda: [2, 2])  # [min, max] LAN switches
    hosts: list[int] = field(default_factory=lambda: [3, 3])  # [min, max] hosts in all


def _default_sizes() -> list[LevelSize]:
    return [
        LevelSize(1, [2, 2], [3, 3]),
        LevelSize(1, [2, 3], [3, 4]),
        LevelSize(2, [3, 4], [4, 6]),
        LevelSize(2, [3, 4], [4, 6]),
        LevelSize(3, [3, 4], [4, 6]),
    ]


# Size classes (`app.size`): LAN switches and hosts beyond the routers' own LANs, and the
# routers of level 5 (levels 1-4 keep theirs: the router count defines them).
SIZES = {
    "small": {"extra_switches": [0, 0], "extra_hosts": [0, 0], "chain": 3},
    "medium": {"extra_switches": [1, 2], "extra_hosts": [0, 2], "chain": 3},
    "large": {"extra_switches": [2, 3], "extra_hosts": [2, 4], "chain": 4},
}


@dataclass
class NetLLMBenchConfig:
    name: str = "netllmbench"  # cell key: the conf/app/*.yaml stem
    kind: str = "netllmbench"  # implementation in the app registry
    attempts: int = 3  # tries an agent gets per task (NetLLMBench: 3)
    assist_failed_tasks: bool = True  # complete a failed task, so the next starts fair
    paper_lab_first: bool = True  # L2 query 0 is NetLLMBench's lab (seeds 0, 4, ...; no size)
    emulator: str = "mininet"  # backend running the labs: mininet | kathara
    sizes: list[LevelSize] = field(default_factory=_default_sizes)  # per level 1 to 5
    size: str | None = None  # size class (SIZES) at every level; None: `sizes`
    tasks: list[str] | None = None  # task kinds the agent plays (KINDS); None: all
    goal_attempts: int = 5  # attempts per task at levels 4 and 5 (reading costs one)
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
    int_in(cfg.goal_attempts, f"{prefix}.goal_attempts", 1, 10)
    for key in ("assist_failed_tasks", "paper_lab_first"):
        if not isinstance(getattr(cfg, key), bool):
            raise ConfigError(f"{prefix}.{key} must be true or false, got {getattr(cfg, key)!r}")
    if len(cfg.sizes) != len(LEVELS):
        raise ConfigError(f"{prefix}.sizes must list {len(LEVELS)} levels, got {len(cfg.sizes)}")
    for level, size in enumerate(cfg.sizes, 1):
        where = f"{prefix}.sizes[{level - 1}]"
        int_in(size.routers, f"{where}.routers", *ROUTERS[level])
        bounds = {}
        for key, low, high in (("switches", size.routers, 8), ("hosts", 1, 12)):
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
    if cfg.size is not None and cfg.size not in SIZES:
        raise ConfigError(f"{prefix}.size must be null or one of {list(SIZES)}, got {cfg.size!r}")
    if cfg.tasks is not None:
        kinds = list(cfg.tasks)
        wrong = [k for k in kinds if k not in KINDS]
        if not kinds or wrong or len(set(kinds)) != len(kinds):
            raise ConfigError(
                f"{prefix}.tasks must be null or a list of distinct task kinds from "
                f"{', '.join(KINDS)}; got {kinds!r}"
                + (f" ({wrong[0]!r} is not one)" if wrong else "")
            )
    validate_pool_config(cfg, prefix)


def level_size(cfg: NetLLMBenchConfig, level: int) -> LevelSize:
    """The lab size queries of `level` are drawn at: `sizes`, or the `size` class."""
    if cfg.size is None:
        return cfg.sizes[level - 1]
    spec = SIZES[cfg.size]
    routers = spec["chain"] if level == 5 else ROUTERS[level][0]
    lans = max(2, routers)
    switches = [lans + n for n in spec["extra_switches"]]
    hosts = [switches[1] + n for n in spec["extra_hosts"]]
    return LevelSize(routers, switches, hosts)
