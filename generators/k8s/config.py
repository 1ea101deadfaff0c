"""Structured-config schema of the k8s app (a Hydra / OmegaConf plain dataclass)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generators.k8s.callgraph import SIZES
from generators.k8s.estate import ESTATES_PER_SIZE
from generators.k8s.estate import SIZES as TIER_SIZES
from generators.k8s.faults import FAULT_TYPES
from pipeline.api import TASKS, ConfigError, operational

MAX_TURNS = 10  # levels 1-5's turn budget (levels 6-8: their tier's, tiers.py)


@dataclass
class K8sConfig:
    name: str = "k8s"  # cell key: the conf/app/*.yaml stem
    kind: str = "k8s"  # implementation in the app registry
    # kubectl commands an agent may send per query; None: the level's budget (10 at levels
    # 1-5; 20, 30, 30 at levels 6, 7, 8).
    max_turns: int | None = None
    kubectl_timeout_s: float = 10.0  # wall-clock limit of one kubectl command
    output_bytes: int = 16384  # kubectl output kept and shown; the rest is cut
    # Fault types queries are made of (FAULT_TYPES); None: each level's own combinations.
    faults: list[str] | None = None
    # Application size class (SIZES; xlarge too at levels 6-8); None: Online Boutique
    # (medium) at levels 1-3, every size class of the generated applications at levels 4
    # and 5, the tier's sizes at levels 6-8.
    size: str | None = None
    task: str = "mitigate"  # mitigate | detect | localize (detect, localize: levels 6-8)
    # Levels 6-8: the one estate of each size queries run on (0 .. ESTATES_PER_SIZE - 1);
    # None: every estate of the tier's sizes.
    estate: int | None = None
    # emulated clusters kept up between episodes (12: every estate of levels 6 and 7)
    max_live_clusters: int = operational(12)

    def validate(self) -> None:
        """Raise ConfigError naming the first wrong key (called when configs are composed)."""
        validate_config(self)


def _positive(value: Any, key: str, kind: type | tuple[type, ...]) -> None:
    if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
        raise ConfigError(f"{key} must be a positive number, got {value!r}")


def validate_config(cfg: K8sConfig, prefix: str = "app") -> None:
    if not isinstance(cfg.name, str) or not cfg.name:
        raise ConfigError(f"{prefix}.name must be a non-empty string, got {cfg.name!r}")
    if cfg.max_turns is not None:
        _positive(cfg.max_turns, f"{prefix}.max_turns", int)
    if cfg.estate is not None and (
        isinstance(cfg.estate, bool)
        or not isinstance(cfg.estate, int)
        or not 0 <= cfg.estate < ESTATES_PER_SIZE
    ):
        raise ConfigError(
            f"{prefix}.estate must be null or an estate from 0 to {ESTATES_PER_SIZE - 1}; "
            f"got {cfg.estate!r}"
        )
    if cfg.task not in TASKS:
        raise ConfigError(f"{prefix}.task must be one of {', '.join(TASKS)}; got {cfg.task!r}")
    _positive(cfg.kubectl_timeout_s, f"{prefix}.kubectl_timeout_s", (int, float))
    _positive(cfg.output_bytes, f"{prefix}.output_bytes", int)
    _positive(cfg.max_live_clusters, f"{prefix}.max_live_clusters", int)
    if cfg.faults is not None:
        faults = list(cfg.faults)
        wrong = [f for f in faults if f not in FAULT_TYPES]
        if not faults or wrong or len(set(faults)) != len(faults):
            raise ConfigError(
                f"{prefix}.faults must be null or a list of distinct fault types from "
                f"{', '.join(FAULT_TYPES)}; got {faults!r}"
                + (f" ({wrong[0]!r} is not one)" if wrong else "")
            )
    sizes = sorted({*SIZES, *TIER_SIZES})
    if cfg.size is not None and cfg.size not in sizes:
        raise ConfigError(
            f"{prefix}.size must be null or one of {', '.join(sizes)}; got {cfg.size!r}"
        )
