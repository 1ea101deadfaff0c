"""How many distinct queries an app's level holds, and the plan-time check of a request.

Each app computes its own `Capacity` (`App.capacity(level)`): an exact enumeration where
the space is enumerable, else a lower bound or an estimate whose derivation `how` states.
`per_seed` is what one seed can get: seeds take only the keys of their slot
(pipeline/querygen.py), so about `total / SEED_SLOTS`, less where the generator balances
operations (then the scarcest operation decides).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError
from pipeline.files import write_whole

log = logging.getLogger(__name__)
_MEMO: dict[str, Capacity] = {}  # name -> capacity, for this process


@dataclass(frozen=True)
class Capacity:
    total: int | None  # distinct keys the level holds; None: effectively unbounded
    by_operation: dict[str, int | None]  # the same, per operation label
    exact: bool  # True: counted by enumeration; False: a lower bound or estimate (see how)
    per_seed: int | None  # queries one seed can get (the least over the seed slots)
    per_seed_by_operation: dict[str, int | None] = field(default_factory=dict)
    how: str = ""  # how the numbers were derived, one sentence

    def describe(self) -> str:
        """One line for error messages: per seed, in all, how."""

        def n(value: int | None) -> str:
            return "unbounded" if value is None else f"{value:,}"

        kind = "exactly" if self.exact else "at least"
        text = f"{n(self.per_seed)} per seed, {kind} {n(self.total)} in all"
        if self.per_seed_by_operation:
            ops = ", ".join(f"{op} {n(v)}" for op, v in sorted(self.per_seed_by_operation.items()))
            text += f" (per seed by operation: {ops})"
        return text + (f"; {self.how}" if self.how else "")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Capacity:
        return cls(**data)


def check_request(app_name: str, level: int, count: int, capacity: Capacity) -> None:
    """Raise ConfigError when one seed cannot get `count` distinct queries of `level`."""
    if capacity.per_seed is not None and count > capacity.per_seed:
        raise ConfigError(
            f"queries={count} exceeds what one seed can get from {app_name} level {level}: "
            f"{capacity.describe()}. Ask for at most {capacity.per_seed} queries per seed "
            "(spread a larger sample over more seeds, one per seed slot), widen the app, or "
            "set allow_repeats=true to keep repeats (marked, and counted once by the statistics)"
        )


def cached(name: str, cache_dir: Path | None, compute: Callable[[], Capacity]) -> Capacity:
    """`compute()`, remembered for this process under `name` (a fingerprint of what it
    depends on) and stored as `<cache_dir>/<name>.json` for later ones."""
    path = Path(cache_dir) / f"{name}.json" if cache_dir is not None else None
    found = _MEMO.get(name)
    if found is None and path is not None and path.exists():
        try:
            found = Capacity.from_json(json.loads(path.read_text()))
        except (ValueError, TypeError) as err:
            log.warning("ignoring unreadable capacity cache %s: %s", path, err)
    if found is None:
        found = compute()
    if path is not None and not path.exists():
        write_whole(path, json.dumps(found.to_json(), sort_keys=True).encode())
    _MEMO[name] = found
    return found
