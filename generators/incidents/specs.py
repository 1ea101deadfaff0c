"""The labs of the incidents app: a query names its lab by (family, size, variant).

`spec_of` rebuilds the NetSpec a query names (generators/netlab: pure, the same bytes on
every machine), memoised: a tier's catalogue is a few dozen labs, drawn from again and again.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from generators.netlab import build
from generators.netlab.spec import NetSpec


@functools.lru_cache(maxsize=256)
def spec(family: str, size: str, variant: int) -> NetSpec:
    return build(family, size, variant)


def spec_of(lab: Mapping[str, Any]) -> NetSpec:
    return spec(str(lab["family"]), str(lab["size"]), int(lab["variant"]))


def lab_json(s: NetSpec) -> dict[str, Any]:
    return {"family": s.family, "size": s.size, "variant": s.variant, "name": s.name}
