"""Order traps of the incidents app (faults/traps.py): pure draws and the proof's reading.

A steerer (`ospf.max_metric`) keeps traffic off a router that does not forward
(`dataplane.ip_forward_disabled` on the same router): the draw puts the shielded fault on
the steerer's element, the oracle fixes it first, and validation reads from the single
faults' states whether fixing the steerer first breaks a check that held. No lab here:
the live proof plays both orders (trapproof.py).
"""

from __future__ import annotations

import dataclasses
import random
from types import SimpleNamespace

import pytest

from generators.incidents import validate as validating
from generators.incidents.app import IncidentsApp
from generators.incidents.config import TIERS, IncidentsConfig
from generators.incidents.draw import draw
from generators.incidents.faults import kinds as catalogue
from generators.incidents.faults.kinds import Taken
from generators.incidents.faults.traps import draw_trap, shelters
from generators.incidents.specs import spec

TRAP_TIER = dataclasses.replace(TIERS[6], faults=(2, 2), traps=(1, 1))
LABS = [("ring", "small", 0), ("ring", "medium", 0), ("mesh", "small", 1), ("mesh", "medium", 1)]


def test_every_shield_names_a_registered_fault_kind():
    shields = {k.id: k.shields for k in catalogue.kinds() if k.shields}
    assert shields == {"ospf.max_metric": ("dataplane.ip_forward_disabled",)}
    for shielded in (s for ids in shields.values() for s in ids):
        assert not catalogue.kind(shielded).benign


@pytest.mark.parametrize(("family", "size", "variant"), LABS)
def test_the_shielded_fault_is_drawn_on_the_steerers_router_and_purely(family, size, variant):
    lab = spec(family, size, variant)
    steer, forward = (
        catalogue.kind("ospf.max_metric"),
        catalogue.kind("dataplane.ip_forward_disabled"),
    )
    for i in range(10):
        rng = random.Random(f"trap:{i}")
        t = steer.draw(rng, lab, Taken())
        a = draw_trap(rng, lab, t, forward, Taken())
        assert a is not None and a.kind == forward.id
        assert a.cause.device == t.cause.device  # the router the path now goes round
        assert f"router:{t.cause.device}" in a.elements and shelters(t, a)
        again = random.Random(f"trap:{i}")
        same = draw_trap(again, lab, steer.draw(again, lab, Taken()), forward, Taken())
        assert same == a
    # a kind the steerer does not shield is never drawn as its trap
    assert draw_trap(random.Random(0), lab, t, catalogue.kind("dataplane.blackhole_route")) is None


def test_a_taken_router_keeps_the_shielded_fault_off_it():
    lab = spec("ring", "medium", 0)
    rng = random.Random(3)
    t = catalogue.kind("ospf.max_metric").draw(rng, lab, Taken())
    busy = Taken(elements={f"sysctl:forward@{t.cause.device}"})
    assert draw_trap(rng, lab, t, catalogue.kind("dataplane.ip_forward_disabled"), busy) is None


@pytest.mark.parametrize(("family", "size", "variant"), LABS)
def test_a_tier_asking_for_a_trap_draws_one_and_the_oracle_fixes_the_shielded_first(
    family, size, variant
):
    lab = spec(family, size, variant)
    for i in range(10):
        d = draw(lab, TRAP_TIER, "mitigate", None, random.Random(i))
        assert not isinstance(d, str), d
        first, second = validating._order(d.faults)
        assert (first.kind, second.kind) == ("dataplane.ip_forward_disabled", "ospf.max_metric")
        assert shelters(second, first) and not shelters(first, second)


def test_a_tier_asking_for_a_trap_on_a_lab_without_a_steerer_says_so():
    d = draw(spec("chain", "small", 0), TRAP_TIER, "mitigate", None, random.Random(0))
    assert d == "chain-small-0: room for 0 of 1 order traps"


def test_traps_are_off_at_every_level_and_no_query_records_one():
    """Traps wait for the lead's measurement: no tier draws one (the draw then takes
    nothing from the query's stream, so levels 6-8 draw what they drew before; measured
    on 150 queries per level and task against main, see the branch's report)."""
    assert all(t.traps == (0, 0) for t in TIERS.values())
    queries = IncidentsApp(IncidentsConfig()).generator().generate(8, 0, 40, live=False)
    assert not any("traps" in q.ground_truth for q in queries)


def test_a_trap_is_proven_from_the_single_faults_states():
    """Fixing the steerer first leaves the shielded fault alone on its element: the trap
    is real when that state violates a check that held with every fault in."""
    t = SimpleNamespace(kind="ospf.max_metric", elements=frozenset({"router:r4"}))
    a = SimpleNamespace(
        kind="dataplane.ip_forward_disabled",
        elements=frozenset({"router:r4", "sysctl:forward@r4"}),
    )
    together = SimpleNamespace(violations=frozenset({"intent:path:h1>h7", "works:icmp:h4>h1"}))
    alone = {
        "dataplane.ip_forward_disabled": frozenset({"works:icmp:h4>h1", "works:icmp:h1>h7"}),
        "ospf.max_metric": frozenset({"intent:path:h1>h7"}),
    }
    assert validating._traps((a, t), together, alone) == [
        {
            "steerer": "ospf.max_metric",
            "shielded": "dataplane.ip_forward_disabled",
            "breaks": ["works:icmp:h1>h7"],
            "broken": 1,
        }
    ]
    harmless = {**alone, "dataplane.ip_forward_disabled": frozenset({"works:icmp:h4>h1"})}
    why = validating._traps((a, t), together, harmless)
    assert why == (
        "order trap: fixing ospf.max_metric before dataplane.ip_forward_disabled "
        "breaks no check that held"
    )
    t.elements = frozenset({"router:r2"})  # another router: no trap, nothing to prove
    assert validating._traps((a, t), together, harmless) == []


@pytest.mark.integration
def test_a_drawn_trap_proves_live_and_its_wrong_order_breaks_what_held():
    """ring-small-0 (5 routers): validation proves the trap (the oracle, the router's
    forwarding first, breaks nothing), and fixing the stub router first, played live as a
    step, breaks every check validation inferred from the single faults' states."""
    from generators.incidents.trapproof import prove_traps
    from generators.lab.frr.daemons import installed
    from tests.conftest import require, require_emulator

    require_emulator("mininet")
    missing = installed()
    require(missing is None, missing or "")
    [row] = prove_traps("ring", "small", 0, 1)
    assert row["order"] == ["dataplane.ip_forward_disabled", "ospf.max_metric"], row
    [trap] = row["traps"]
    assert trap["broken"] > 0 and row["wrong_order_broken"] >= trap["broken"]
    assert row["inferred_within_played"], row


def test_a_tier_asking_for_a_trap_draws_only_on_labs_that_hold_one(monkeypatch):
    """A minimum of one trap narrows the families (ring and mesh hold the stub router's
    places) and skips variants without a path intent, as the intent-only minimum does."""
    from generators.incidents import generator

    eight = dataclasses.replace(TIERS[8], traps=(1, 1))
    monkeypatch.setitem(generator.TIERS, 8, eight)
    queries = list(IncidentsApp(IncidentsConfig()).generator().generate(8, 0, 24, live=False))
    assert {q.ground_truth["lab"]["family"] for q in queries} == {"ring", "mesh"}
    for q in queries:
        faults = [catalogue.Fault.from_json(f) for f in q.ground_truth["faults"]]
        assert any(shelters(t, a) for t in faults for a in faults), q.key
