"""Train and test splits: which seeds may be evaluated and which exported for training.

Within one app variant and level, seeds that fall in different key slots never share a
query (pipeline/querygen.py: seed s draws only keys whose slot is s % SEED_SLOTS). The
splits are sets of slots, so a test seed and a train seed can never hold the same query:

    test   slots 0, 1   seeds 0, 1, 4, 5, 8, 9, ...   (grids evaluate these by default)
    train  slots 2, 3   seeds 2, 3, 6, 7, ...         (analysis.export writes these)

Seeds of one split that share a slot (0 and 4) may repeat queries between them; a grid
with both is refused (pipeline/plan.py). The export also refuses, by key, any query the
data directory already holds evaluated results for (analysis/export.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.errors import ConfigError
from pipeline.querygen import SEED_SLOTS, seed_slot

SPLITS: dict[str, tuple[int, ...]] = {"test": (0, 1), "train": (2, 3)}
assert sorted(s for slots in SPLITS.values() for s in slots) == list(range(SEED_SLOTS))


def split_of(seed: int) -> str:
    """The split a seed belongs to."""
    slot = seed_slot(seed)
    return next(name for name, slots in SPLITS.items() if slot in slots)


def seeds_of(split: str, count: int = 4) -> list[int]:
    """The first `count` seeds of a split, e.g. seeds_of("train", 2) == [2, 3]."""
    check_split(split)
    out, seed = [], 0
    while len(out) < count:
        if split_of(seed) == split:
            out.append(seed)
        seed += 1
    return out


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ConfigError(f"unknown split '{split}'; choose one of: {', '.join(SPLITS)}")
    return split


def check_seeds(seeds: list[int], split: str, where: str) -> None:
    """Every seed is in `split`, and no two share a key slot."""
    check_split(split)
    wrong = [s for s in seeds if split_of(s) != split]
    if wrong:
        raise ConfigError(
            f"{where}: seed(s) {', '.join(map(str, wrong))} belong to the "
            f"'{split_of(wrong[0])}' split, not '{split}'; {split} seeds are "
            f"{', '.join(map(str, seeds_of(split)))}, ... (seed % {SEED_SLOTS} in "
            f"{list(SPLITS[split])})"
        )
    one_per_slot(seeds, split, where)


def one_per_slot(seeds: Sequence[int], split: str, where: str) -> None:
    """No two of `seeds` share a key slot (their queries could repeat)."""
    by_slot: dict[int, int] = {}
    for seed in seeds:
        other = by_slot.setdefault(seed_slot(seed), seed)
        if other != seed:
            raise ConfigError(
                f"{where}: seeds {other} and {seed} share key slot {seed_slot(seed)} "
                f"(seed % {SEED_SLOTS}), so their queries may repeat; use at most one seed "
                f"per slot, e.g. {', '.join(map(str, seeds_of(split)))}"
            )


def check_run_seeds(overrides: Sequence[str]) -> list[str]:
    """The `seed=` sweep of a direct run (`python -m pipeline.run -m seed=0,1`) checked as a
    grid's seeds are: seeds sharing a key slot are refused (ConfigError). Seeds outside
    the test split are allowed, with a warning returned for each (their queries are the
    ones `analysis.export` writes for training). Sweep syntax other than a comma list of
    integers (e.g. `range(...)`) is left to Hydra."""
    seeds: list[int] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if sep and key.lstrip("+") == "seed":
            try:
                seeds = [int(v) for v in value.split(",")]
            except ValueError:
                return []
    one_per_slot(seeds, "test", f"seed={','.join(map(str, seeds))}")
    return [
        f"seed {seed} is in the '{split_of(seed)}' split: analysis.export writes its queries "
        f"as training data; evaluate test seeds ({', '.join(map(str, seeds_of('test')))}, ...) "
        "to keep results uncontaminated"
        for seed in seeds
        if split_of(seed) != "test"
    ]
