"""Structured-config schema of the MALT app (Hydra / OmegaConf plain dataclasses).

Keys are named as they appear in a composed run config (`app.topology.source`, ...), so a
ConfigError message can be pasted straight into a Hydra override.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from emulators.pysandbox.limits import SandboxLimits
from pipeline.errors import ConfigError

TOPOLOGY_SOURCES = ("synthetic", "file")


@dataclass
class TopologyConfig:
    # "file": Google's MALT example (or `path`); "synthetic": a seeded MALT-shaped topology.
    source: str = "file"
    # Text-proto file for source=file; None = <shared_data_dir>/malt/malt-example-final.textproto.
    path: str | None = None
    seed: int = 0  # synthetic topologies only: same seed and knobs -> same graph
    # Size knobs of synthetic topologies; the defaults give about Google's example (~5.5k nodes).
    jupiters: int = 1
    superblocks: int = 4  # per Jupiter fabric
    aggs_per_superblock: int = 4
    spineblocks: int = 4  # per Jupiter fabric
    switches_per_block_min: int = 12  # packet switches per aggregation / spine block
    switches_per_block_max: int = 20
    ports_per_switch_min: int = 12
    ports_per_switch_max: int = 20
    port_capacities_bps: list[int] = field(
        default_factory=lambda: [10_000_000_000, 40_000_000_000, 100_000_000_000]
    )


@dataclass
class MaltConfig:
    name: str = "malt"  # cell key: the conf/app/*.yaml stem (variants share the kind)
    kind: str = "malt"  # implementation in the app registry
    max_turns: int = 1  # replies an agent may send per query; a failed run may be retried
    topology: TopologyConfig = field(default_factory=TopologyConfig)
    sandbox: SandboxLimits = field(default_factory=SandboxLimits)

    def validate(self) -> None:
        """Raise ConfigError naming the first wrong key (called when configs are composed)."""
        validate_config(self)


def _int_at_least(value: Any, key: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{key} must be an integer >= {low}, got {value!r}")
    return value


def validate_topology_config(cfg: TopologyConfig, prefix: str = "app.topology") -> None:
    """Raise ConfigError naming the first wrong key of a topology config."""
    if cfg.source not in TOPOLOGY_SOURCES:
        raise ConfigError(
            f"{prefix}.source must be one of {list(TOPOLOGY_SOURCES)}, got {cfg.source!r}"
        )
    if cfg.path is not None and not isinstance(cfg.path, str):
        raise ConfigError(f"{prefix}.path must be a string path or null, got {cfg.path!r}")
    _int_at_least(cfg.seed, f"{prefix}.seed", 0)
    for key in ("jupiters", "superblocks", "aggs_per_superblock", "spineblocks"):
        _int_at_least(getattr(cfg, key), f"{prefix}.{key}", 1)
    for what in ("switches_per_block", "ports_per_switch"):
        low = _int_at_least(getattr(cfg, f"{what}_min"), f"{prefix}.{what}_min", 1)
        high = _int_at_least(getattr(cfg, f"{what}_max"), f"{prefix}.{what}_max", 1)
        if low > high:
            raise ConfigError(
                f"{prefix}.{what}_min ({low}) must not exceed {prefix}.{what}_max ({high})"
            )
    caps = list(cfg.port_capacities_bps)
    if not caps:
        raise ConfigError(f"{prefix}.port_capacities_bps must list at least one capacity")
    for cap in caps:
        _int_at_least(cap, f"{prefix}.port_capacities_bps", 1)


def validate_config(cfg: MaltConfig, prefix: str = "app") -> None:
    """Raise ConfigError naming the first wrong key of a MALT app config."""
    if not isinstance(cfg.name, str) or not cfg.name:
        raise ConfigError(f"{prefix}.name must be a non-empty string, got {cfg.name!r}")
    _int_at_least(cfg.max_turns, f"{prefix}.max_turns", 1)
    validate_topology_config(cfg.topology, f"{prefix}.topology")
    limits = cfg.sandbox
    for key in (f.name for f in fields(SandboxLimits)):
        value = getattr(limits, key, None)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(f"{prefix}.sandbox.{key} must be a positive number, got {value!r}")
