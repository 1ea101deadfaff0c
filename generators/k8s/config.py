"""Structured-config schema of the k8s app (a Hydra / OmegaConf plain dataclass)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generators.k8s.callgraph import SIZES
from generators.k8s.faults import FAULT_TYPES
from pipeline.api import ConfigError, operational


@dataclass
class K8sConfig:
    name: str = "k8s"  # cell key: the conf/app/*.yaml stem
    kind: str = "k8s"  # implementation in the app registry
    max_turns: int = 10  # kubectl commands an agent may send per query
    kubectl_timeout_s: float = 10.0  # wall-clock limit of one kubectl command
    output_bytes: int = 16384  # kubectl output kept and shown; the rest is cut
    # Fault types queries are made of (FAULT_TYPES); None: each level's own combinations.
    faults: list[str] | None = None
    # Application size class (SIZES); None: Online Boutique (medium) at levels 1-3, every
    # size class of the generated applications at levels 4 and 5.
    size: str | None = None
    max_live_clusters: int = operational(9)  # emulated clusters kept up between episodes

    def validate(self) -> None:
        """Raise ConfigError naming the first wrong key (called when configs are composed)."""
        validate_config(self)


def _positive(value: Any, key: str, kind: type | tuple[type, ...]) -> None:
    if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
        raise ConfigError(f"{key} must be a positive number, got {value!r}")


def validate_config(cfg: K8sConfig, prefix: str = "app") -> None:
    if not isinstance(cfg.name, str) or not cfg.name:
        raise ConfigError(f"{prefix}.name must be a non-empty string, got {cfg.name!r}")
    _positive(cfg.max_turns, f"{prefix}.max_turns", int)
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
    if cfg.size is not None and cfg.size not in SIZES:
        raise ConfigError(
            f"{prefix}.size must be null or one of {', '.join(SIZES)}; got {cfg.size!r}"
        )
