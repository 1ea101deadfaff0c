"""Repeated trials: k plays of each query of a cell, each with its own sampling seed.

A grid's `trials: k` makes each of its cells k cells, trial 0 to k-1 (the top-level
config key `trial`). Trial 0 is the cell as it was (same variant, same paths, same
results: a grid without `trials`, or with `trials: 1`, is unchanged); trial t > 0 adds
`trial=t` to the cell's overrides, so it is a variant of its own whose `episodes` rows
carry `trial` = t and `trial_of` = trial 0's variant, which groups the k plays of a
query for pass@k and pass^k (analysis/sql/pass_at_k.sql).

The model's sampling seed of trial t is `trial_seed(model.seed, t)`: model.seed itself
for trial 0, and for t > 0 the first 31 bits of sha256("netgauge-trial:<seed>:<t>"), so
every trial's seed is fixed by the config alone and differs from the others'. A model
with no seed (`model.seed: null`, the server's own) cannot be repeated reproducibly:
trials > 0 of it are refused. Agents that use no model play the same query again (the
environment may still differ, e.g. timing in a lab).
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from omegaconf import OmegaConf

from pipeline.errors import ConfigError

TRIAL_KEY = "trial"  # the top-level config key; and the episodes column


def trial_seed(seed: int | None, trial: int) -> int | None:
    """The sampling seed of `trial` for a model whose config says `seed`."""
    if trial < 0:
        raise ConfigError(f"trial={trial} is out of range; expected an integer >= 0")
    if trial == 0:
        return seed
    if seed is None:
        raise ConfigError(
            f"trial={trial} needs an integer model.seed to derive its sampling seed from "
            "(model.seed is null: the server's own seed, which no rerun can repeat); "
            "set model.seed, e.g. model.seed=0"
        )
    digest = hashlib.sha256(f"netgauge-trial:{seed}:{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def trial_overrides(trial: int) -> tuple[str, ...]:
    """The overrides that make trial `trial` of a cell (none for trial 0)."""
    return (f"{TRIAL_KEY}={trial}",) if trial else ()


def trial_model(cfg: Any) -> Any:
    """The cell's model section with the trial's sampling seed (cfg.model itself for
    trial 0)."""
    trial = int(cfg.get(TRIAL_KEY, 0) or 0)
    if trial == 0:
        return cfg.model
    model = copy.deepcopy(cfg.model)  # still typed by its schema
    OmegaConf.set_readonly(model, False)
    model.seed = trial_seed(model.seed, trial)
    OmegaConf.set_readonly(model, True)
    return model
