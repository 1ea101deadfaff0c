"""Structured-config schema of the MALT app (Hydra / OmegaConf plain dataclasses).

Keys are named as they appear in a composed run config (`app.topology.source`, ...), so a
ConfigError message can be pasted straight into a Hydra override.

Size classes (`app.size`, the capability panel's size axis): `SIZES` maps each class to
the synthetic topology's size keys; a topology of any origin is classed by its node
count (`size_class`), so Google's example (5,493 nodes) and the default synthetic
topology (5,321) are both `medium`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any

from emulators.pysandbox.limits import SandboxLimits
from generators.malt.operations import KNOWN, unknown
from pipeline.api import ConfigError

TOPOLOGY_SOURCES = ("synthetic", "file")
# The synthetic topology's size keys per size class; medium is the schema's default
# (about Google's example), small under a tenth of it, large about two and a half times.
SIZES: dict[str, dict[str, int]] = {
    "small": {
        "jupiters": 1,
        "superblocks": 2,
        "aggs_per_superblock": 2,
        "spineblocks": 2,
        "switches_per_block_min": 6,
        "switches_per_block_max": 10,
        "ports_per_switch_min": 6,
        "ports_per_switch_max": 10,
    },
    "medium": {
        "jupiters": 1,
        "superblocks": 4,
        "aggs_per_superblock": 4,
        "spineblocks": 4,
        "switches_per_block_min": 12,
        "switches_per_block_max": 20,
        "ports_per_switch_min": 12,
        "ports_per_switch_max": 20,
    },
    "large": {
        "jupiters": 1,
        "superblocks": 8,
        "aggs_per_superblock": 4,
        "spineblocks": 8,
        "switches_per_block_min": 14,
        "switches_per_block_max": 22,
        "ports_per_switch_min": 14,
        "ports_per_switch_max": 22,
    },
}
# Node counts that separate the classes (small < 2,000 <= medium < 10,000 <= large): the
# synthetic classes give about 460, 5,300 and 13,600 nodes.
SIZE_BOUNDS = (("small", 2_000), ("medium", 10_000))


def size_class(nodes: int) -> str:
    """The size class of a topology of `nodes` nodes."""
    return next((name for name, below in SIZE_BOUNDS if nodes < below), "large")


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
    # Operations drawn (operations.py: categories, level-4/5 templates); None: every one.
    operations: list[str] | None = None
    # Size class of the synthetic topology (SIZES); None: the topology keys as they are.
    size: str | None = None

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
    validate_knobs(cfg, prefix)
    limits = cfg.sandbox
    for key in (f.name for f in fields(SandboxLimits)):
        value = getattr(limits, key, None)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(f"{prefix}.sandbox.{key} must be a positive number, got {value!r}")


def validate_knobs(cfg: MaltConfig, prefix: str = "app") -> None:
    """Raise ConfigError naming a wrong `operations` or `size` (or one that cannot apply)."""
    if cfg.operations is not None:
        names = list(cfg.operations)
        if not names or not all(isinstance(n, str) for n in names):
            raise ConfigError(
                f"{prefix}.operations must be null or a non-empty list of operation names, "
                f"got {names!r}"
            )
        bad = unknown(names)
        if bad:
            raise ConfigError(
                f"{prefix}.operations holds unknown operations {bad}; choose from {sorted(KNOWN)}"
            )
    if cfg.size is None:
        return
    if cfg.size not in SIZES:
        raise ConfigError(f"{prefix}.size must be null or one of {list(SIZES)}, got {cfg.size!r}")
    if cfg.topology.source != "synthetic":
        raise ConfigError(
            f"{prefix}.size={cfg.size} applies to synthetic topologies only: a topology file "
            "(app.topology.source=file, e.g. malt_google) has the size it has, and its "
            "queries are classed by its node count (Google's example: medium); unset "
            f"{prefix}.size"
        )
    defaults = TopologyConfig()
    for key in SIZES[cfg.size]:
        if getattr(cfg.topology, key) != getattr(defaults, key):
            raise ConfigError(
                f"{prefix}.size={cfg.size} sets {prefix}.topology.{key} itself; set either "
                f"{prefix}.size or the topology's size keys, not both"
            )


def effective_topology(cfg: MaltConfig) -> TopologyConfig:
    """The topology config a MALT config stands for: its size class's keys applied."""
    if cfg.size is None:
        return cfg.topology
    return dataclasses.replace(cfg.topology, **SIZES[cfg.size])
