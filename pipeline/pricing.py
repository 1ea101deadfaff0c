"""Money: prices per million tokens (conf/pricing.yaml) and the cost of model calls.

A model config names its pricing entry with `model.pricing` (null: the entry named like
the model config). Costs are computed from the token counts the calls already record:
`(prompt - cached) x input + cached x cached_input + completion x output`, per million.
A call whose model has no entry, or whose tokens were not reported, has no cost (None);
a call answered from the response cache (`calls.cache` 'hit', pipeline/serving/cache.py)
costs 0: its tokens, recorded as first measured, were not paid again. A cell's spent cost
is the sum of the costs that are known.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.errors import ConfigError

PRICING_FILE = Path(__file__).resolve().parent.parent / "conf" / "pricing.yaml"
KINDS = ("input", "cached_input", "output")
PER = 1_000_000
# `calls.cache` of a response-cache hit: pipeline.serving.client.HIT, which this module
# cannot import (serving's config reads prices; tests/test_cost.py checks they agree).
CACHE_HIT = "hit"


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens of each kind."""

    name: str  # the entry of conf/pricing.yaml
    input: float
    cached_input: float
    output: float
    note: str = ""

    def cost(self, prompt: int | None, completion: int | None, cached: int | None = 0) -> float:
        """The cost of one call in USD (tokens not reported count as none)."""
        prompt, completion, cached = prompt or 0, completion or 0, min(cached or 0, prompt or 0)
        return (
            (prompt - cached) * self.input + cached * self.cached_input + completion * self.output
        ) / PER


@functools.cache
def price_table(path: Path = PRICING_FILE) -> dict[str, Price]:
    """Every entry of the pricing file, checked: three non-negative prices each."""
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"cannot read the pricing file {path}: {err}") from err
    table: dict[str, Price] = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict) or set(entry) - {*KINDS, "note"} or set(KINDS) - set(entry):
            raise ConfigError(
                f"{path}: entry '{name}' must hold exactly {', '.join(KINDS)} (and a note)"
            )
        values = [entry[k] for k in KINDS]
        if not all(isinstance(v, int | float) and v >= 0 for v in values):
            raise ConfigError(f"{path}: entry '{name}' has a price that is not a number >= 0")
        table[str(name)] = Price(str(name), *map(float, values), str(entry.get("note", "")))
    return table


def price_of(model: Mapping[str, Any] | Any) -> Price | None:
    """The price of a model section (its `pricing` entry, else its own name), or None."""
    name = _get(model, "pricing") or _get(model, "name")
    table = price_table()
    if _get(model, "pricing") and name not in table:
        raise ConfigError(
            f"model.pricing='{name}' is not an entry of {PRICING_FILE}; "
            f"choose one of: {', '.join(sorted(table))}"
        )
    return table.get(str(name))


def _get(section: Any, key: str) -> Any:
    return section.get(key) if hasattr(section, "get") else getattr(section, key, None)


class Prices:
    """Prices by served model name (`calls.served_model`, the conf/model/ name): the cell's
    model as configured (with its overrides), any other model (a master model) as its own
    config says; a name with no config (a protocol agent's client) has no price."""

    def __init__(self, model: Mapping[str, Any] | Any) -> None:
        self._own = str(_get(model, "name"))
        self._known: dict[str, Price | None] = {self._own: price_of(model)}

    def get(self, served: str) -> Price | None:
        if served not in self._known:
            self._known[served] = _other(served)
        return self._known[served]

    def call_cost(self, call: Mapping[str, Any]) -> float | None:
        """One recorded call's cost (a transcript's call dict or a `calls` row); 0 for a
        response-cache hit, whose tokens were not paid again."""
        if call.get("cache") == CACHE_HIT:
            return 0.0
        price = self.get(str(call.get("model", call.get("served_model", ""))))
        prompt, completion = call.get("prompt_tokens"), call.get("completion_tokens")
        if price is None or (prompt is None and completion is None):
            return None
        return price.cost(prompt, completion, call.get("cached_tokens"))

    def calls_cost(self, calls: Iterable[Mapping[str, Any]]) -> float | None:
        """The summed cost of calls whose cost is known; None when none is."""
        known = [c for c in (self.call_cost(call) for call in calls) if c is not None]
        return sum(known) if known else None

    def rows_cost(self, rows: Iterable[Mapping[str, Any]]) -> float:
        """The cost of transcript rows (their `calls` JSON), 0 where nothing is known."""
        return sum(self.calls_cost(json.loads(row["calls"])) or 0.0 for row in rows)

    def used(self) -> dict[str, dict[str, Any]]:
        """The prices looked up so far, for the record (the cells table)."""
        return {
            served: {"entry": p.name, **{k: getattr(p, k) for k in KINDS}}
            for served, p in self._known.items()
            if p is not None
        }


@functools.cache
def _other(served: str) -> Price | None:
    from pipeline.config import load_choice  # composes conf/model/; only when a name is new

    try:
        return price_of(load_choice("model", served))
    except ConfigError:  # not a model config: a protocol agent's own name
        return None
