"""Every app that declares prefix queries (AppSpec.prefix_queries) has them: the first m
queries of a run of n are byte for byte (as stored rows) a run of m, at its lowest level and
at a level with variety caps, from a fresh app each time (no cache shared between runs).

The draws are the apps' own; what is faked is the live validation of the lab apps (a
lab's verdict on one draw, which depends on that draw only), accepting every draw, or
`live=False` where the app has it (incidents). So this checks what could make query i
depend on the count: the draw loop, the key tracker, the strata caps and their room.
"""

from __future__ import annotations

import contextlib

import pytest

from pipeline.api import load_app
from pipeline.core import canonical_json
from pipeline.generate import query_row
from pipeline.registry import APPS

DECLARING = [kind for kind in APPS.names() if APPS.get(kind).prefix_queries]
# Per kind: the levels checked (the lowest, and one with variety caps or FRR labs).
LEVELS = {
    "malt": (1, 6),
    "k8s": (1, 6),
    "netllmbench": (1, 5),
    "routing": (1, 4),
    "incidents": (6, 8),
}


def _pure(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake the live validation of the lab apps (see the module docstring)."""
    if kind == "netllmbench":
        from generators.netllmbench import generator

        monkeypatch.setattr(generator, "open_pool", lambda cfg: contextlib.nullcontext())
        monkeypatch.setattr(generator, "validate", lambda pool, cfg, query: None)
    elif kind == "routing":
        from generators.routing import generator

        monkeypatch.setattr(generator, "open_pool", lambda cfg: contextlib.nullcontext())
        monkeypatch.setattr(generator, "frr_pool", lambda cfg: contextlib.nullcontext())
        monkeypatch.setattr(generator, "validate", lambda pool, topo, faults, p: ([], faults))
        monkeypatch.setattr(generator, "frr_validate", lambda pool, topo, faults: ([], faults))


def _rows(kind: str, level: int, count: int, data: str) -> list[str]:
    app = load_app(f"app={kind}", f"level={level}", f"data_dir={data}")  # a fresh one
    if kind == "incidents":
        queries = app.generator().generate(level, 1, count, live=False)
    else:
        queries = app.generate(level, 1, count)
    return [canonical_json(query_row(q, "v", "base")) for q in queries]


def test_the_shipped_apps_declare_prefix_queries():
    assert sorted(DECLARING) == sorted(LEVELS)


@pytest.mark.parametrize("kind", DECLARING)
def test_the_first_m_queries_of_n_are_a_run_of_m(kind, tmp_path, monkeypatch):
    _pure(kind, monkeypatch)
    for level in LEVELS[kind]:
        many = _rows(kind, level, 14, str(tmp_path))
        few = _rows(kind, level, 6, str(tmp_path))
        assert len(many) == 14 and many[:6] == few, (kind, level)
