"""The data-plane, L2 and services kinds of the incidents catalogue, drawn without a lab.

Every kind draws on every topology family it declares; 100 seeded draws per family give
the same bytes on every machine (digest pinned: a change of what a seed draws is a
change of the catalogue, made on purpose); every fix passes the agent sandbox's argument
checks and writes, every evidence command passes them and only reads (so a read-only
localize episode can play it), every pattern compiles; a draw never names a device the
lab has not got. The live proof of each kind is tests/test_faults_dp_live.py (a subset)
and the `incidents_catalogue` bench (all of them).
"""

from __future__ import annotations

import hashlib
import random
import re
import shlex
from functools import cache

import pytest

from emulators.netcmd import policy, readonly, svcctl
from generators.incidents.edge import INET
from generators.incidents.faults import kinds as K
from generators.netlab import build
from generators.netlab.spec import NetSpec
from pipeline.api import canonical_json

MINE = ("dataplane", "l2", "services")
SEEDS = 100
# sha256 (16 hex) of the canonical JSON of the 100 draws per family (see _draws).
DIGESTS = {
    "dataplane": "73ed71757b79968a",
    "l2": "bf83bec68fe7c49a",
    "services": "829b93e08b8d249b",
}


@cache
def _spec(family: str, size: str, variant: int) -> NetSpec:
    return build(family, size, variant)


def _kinds(family: str) -> list[K.FaultKind]:
    """The family's kinds drawn on every lab size (the security policy's kinds, large and
    xlarge labs only, are tests/test_incidents_policy.py's)."""
    return [k for k in K.kinds() if k.family == family and k.sizes is None]


def _draws(family: str) -> list[tuple[NetSpec, K.Fault]]:
    """Seed s draws kind s mod n on small/medium variant s mod 4 of one of its topologies."""
    out = []
    kinds = _kinds(family)
    for seed in range(SEEDS):
        kind = kinds[seed % len(kinds)]
        rng = random.Random(f"faults_dp:{seed}")
        topologies = sorted(kind.topologies)
        spec = _spec(rng.choice(topologies), rng.choice(("small", "medium")), seed % 4)
        fault = kind.draw(rng, spec, K.Taken())
        if fault is not None:
            out.append((spec, fault))
    return out


def test_the_families_have_their_kinds():
    counts = {f: len(_kinds(f)) for f in MINE}
    assert counts["dataplane"] >= 14 and counts["l2"] >= 6 and counts["services"] >= 6, counts
    for kind in (k for f in MINE for k in _kinds(f)):
        assert (
            kind.meaning
            and kind.component
            and kind.topologies <= set(("chain", "ring", "mesh", "leafspine", "campus", "isp"))
        )


@pytest.mark.parametrize("kind", [k.id for f in MINE for k in _kinds(f)])
def test_every_kind_draws_on_its_topologies_and_the_draw_is_pure(kind):
    k = K.kind(kind)
    drawn = 0
    for family in sorted(k.topologies):
        for variant in range(4):
            spec = _spec(family, "small", variant)
            for seed in range(3):
                one = k.draw(random.Random(seed), spec, K.Taken())
                two = k.draw(random.Random(seed), spec, K.Taken())
                assert (one and one.to_json()) == (two and two.to_json())
                drawn += one is not None
    assert drawn, f"{kind} drew nothing on {sorted(k.topologies)}"


@pytest.mark.parametrize("family", MINE)
def test_100_draws_per_family_are_pinned(family):
    draws = _draws(family)
    assert len(draws) >= 80, f"{family}: only {len(draws)} of {SEEDS} seeds drew a fault"
    text = canonical_json([f.to_json() for _, f in draws])
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert digest == DIGESTS[family], f"{family} draws changed: {digest}"


def _checked(command: str):
    """(allowed, writes or why refused): the agent sandbox's view of one command."""
    words = shlex.split(command)
    if words[0] == "svcctl":
        parsed = svcctl.parse(words[1:])
        return True, not parsed.reads_only
    checked = policy.check(command)
    if not checked.allowed:
        return False, checked.reason
    return True, readonly.write_refusal(checked.argv) is not None


@pytest.mark.parametrize("family", MINE)
def test_fixes_write_and_evidence_reads_through_the_agents_checks(family):
    for spec, fault in _draws(family):
        devices = set(spec.devices) | {INET}
        assert fault.cause.kind == fault.kind and fault.cause.component
        assert fault.fix and fault.evidence and fault.inject
        for step in fault.inject:
            assert step.device in devices and step.how in K.HOW
            if step.how == "service":
                for line in step.lines:
                    svcctl.parse(line.split())
        for machine, command in fault.fix:
            assert machine in spec.devices
            assert _checked(command) == (True, True), (fault.kind, command)
        for ev in fault.evidence:
            assert ev.machine in spec.devices
            assert _checked(ev.command) == (True, False), (fault.kind, ev.command)
            re.compile(ev.pattern)


def test_a_taken_element_is_not_drawn_again():
    spec = _spec("campus", "small", 0)
    taken = K.Taken()
    first = K.kind("services.dns_record_wrong").draw(random.Random(1), spec, taken)
    taken.add(first)
    assert K.kind("services.dns_record_missing").draw(random.Random(1), spec, taken) is None


def test_benign_anomalies_draw_on_their_slots_and_have_no_fix():
    benign = [k for k in K.kinds(benign=True) if k.family in MINE and k.sizes is None]
    assert {k.id for k in benign} >= {"dataplane.sinkhole_route", "dataplane.telnet_denied"}
    for kind in benign:
        spec = _spec("campus", "small", 0)
        fault = kind.draw(random.Random(0), spec, K.Taken())
        assert fault is not None and fault.benign and fault.fix == ()
        for ev in fault.evidence:
            assert _checked(ev.command) == (True, False), ev.command
