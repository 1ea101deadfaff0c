"""OSPF and BGP kinds of the incidents catalogue, live on one shared lab (prove.py).

One small ISP lab (OSPF and iBGP to a route reflector inside the provider, eBGP to
customers, one of them with two sites and dual-homed) plays a representative subset one
kind after another: an interface fault fixed with `ip` (MTU: ExStart), a session fault
(MD5 on one end), a distant one (next-hop-self missing: flows of another router fail)
and a benign anomaly (a decommissioned neighbour, no symptom). Each must be observable
(the benign one not), its evidence must match through the agent's sandbox, its fix through
the sandbox must bring back the exact healthy readings (running-config, FIB, kernel).
The bench `incidents_catalogue` plays every kind on every family it declares.
"""

from __future__ import annotations

import random

import pytest

from generators.incidents.faults.kinds import Taken, kind
from generators.incidents.faults.prove import Proof, ProofLab
from generators.lab.frr.daemons import installed
from generators.netlab import build
from tests.conftest import integration_fixture, require, require_emulator

pytestmark = pytest.mark.integration

LAB = ("isp", "small", 20)
# kind -> the symptom class its proof must show (None: a benign anomaly, none at all)
PLAYED = {
    "ospf.mtu_mismatch": "adjacencies",
    "bgp.md5_mismatch": "sessions",
    "bgp.next_hop_self_missing": "flows",
    "bgp.decommissioned_peer": None,
}


@pytest.fixture(scope="module")
@integration_fixture
def proofs() -> dict[str, Proof]:
    require_emulator("mininet")
    missing = installed()
    require(missing is None, missing or "")
    spec = build(*LAB)
    out = {}
    # No hold after the return here (the bench holds past the dead interval): the return
    # itself is still verified reading by reading.
    with ProofLab(spec, hold_s=0) as lab:
        for kid in PLAYED:
            fault = kind(kid).draw(random.Random(f"ci:{kid}"), spec, Taken())
            assert fault is not None, kid
            out[kid] = lab.prove(fault)
    return out


@pytest.mark.parametrize("kid", list(PLAYED))
def test_each_kind_breaks_what_it_claims_shows_its_evidence_and_its_fix_restores(proofs, kid):
    proof = proofs[kid]
    assert proof.error is None
    assert proof.evidence_ok, proof.evidence
    assert proof.restored, proof.symptoms
    if PLAYED[kid] is None:
        assert not proof.observable and proof.symptoms["classes"] == [] and proof.fix == []
    else:
        assert PLAYED[kid] in proof.symptoms["classes"]
        assert proof.fix and proof.fix_ok, proof.fix
    assert proof.ok
