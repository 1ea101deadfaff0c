"""The OSPF and BGP kinds of the incidents catalogue, without a lab (generators/incidents/faults/).

Every kind draws on every topology family it declares (100 seeded draws over the tier
catalogue's labs of that family), each draw is pure (same seed, same bytes: digests
pinned), fair (its fix and evidence pass the agent's command sandbox as sent, evidence
only reads), keeps out of what the query has taken, and names its cause on the lab; every
masking pair can be drawn on one element at the other end. The live proof is in
test_incidents_routing_live.py and the `incidents_catalogue` bench.
"""

from __future__ import annotations

import functools
import hashlib
import random

import pytest

from generators.incidents.faults import kinds as catalogue
from generators.incidents.faults.agentcheck import problems, read_only
from generators.incidents.faults.kinds import Fault, Taken
from generators.incidents.faults.masking import draw_masked
from generators.netlab import SIZES, VARIANTS, build
from pipeline.api import canonical_json

DRAWS = 100
MINE = ("ospf", "bgp")
KINDS = [k for k in catalogue.kinds(benign=None) if k.family in MINE]
PAIRS = [(k.id, family) for k in KINDS for family in sorted(k.topologies)]
# sha256 of the canonical JSON of a kind's 100 draws on one family, first 12 hex digits:
# a change here is a change of what queries hold (and of their keys).
DIGESTS: dict[str, str] = {
    "bgp.allowas_in_missing@isp": "752a74389358",
    "bgp.as_path_prepend@leafspine": "3f77842c565c",
    "bgp.backup_local_pref@isp": "54edd0f67253",
    "bgp.backup_prepend@isp": "e6a88b5e77de",
    "bgp.decommissioned_peer@chain": "b500f0780d98",
    "bgp.decommissioned_peer@isp": "f93dcdede99b",
    "bgp.decommissioned_peer@leafspine": "e11ecec31897",
    "bgp.ebgp_requires_policy@chain": "8d010d0c1744",
    "bgp.ebgp_requires_policy@isp": "cd5b6f352648",
    "bgp.ebgp_requires_policy@leafspine": "07c3ea875cd4",
    "bgp.ecmp_disabled@leafspine": "83e97b43afef",
    "bgp.local_pref_steering@leafspine": "cd788aa10c7b",
    "bgp.max_prefix@chain": "735f5b9a0339",
    "bgp.max_prefix@isp": "3d9cb620c39b",
    "bgp.max_prefix@leafspine": "cd1cba9c9f0e",
    "bgp.md5_mismatch@chain": "6a0621b325b7",
    "bgp.md5_mismatch@isp": "4420940ab208",
    "bgp.md5_mismatch@leafspine": "d6207fbea342",
    "bgp.neighbor_address@chain": "1247ba01c1ef",
    "bgp.neighbor_address@isp": "40a4baf5a12c",
    "bgp.neighbor_address@leafspine": "d9d09a87520a",
    "bgp.neighbor_shutdown@chain": "fd0fdf3763fd",
    "bgp.neighbor_shutdown@isp": "8538be5c8bce",
    "bgp.neighbor_shutdown@leafspine": "7b979181f68b",
    "bgp.network_missing@chain": "9d6260faf612",
    "bgp.network_missing@isp": "3d3db748aa03",
    "bgp.network_missing@leafspine": "b639224bb184",
    "bgp.next_hop_self_missing@isp": "67bf03d7742d",
    "bgp.prefix_list_deny@chain": "915b18d5a5a7",
    "bgp.prefix_list_deny@isp": "c53f5c5e2266",
    "bgp.prefix_list_deny@leafspine": "e9ceb52bb281",
    "bgp.remote_as@chain": "23db736f0d96",
    "bgp.remote_as@isp": "57927f907a21",
    "bgp.remote_as@leafspine": "0ea6ef97fee6",
    "bgp.route_map_deny@chain": "3e8b251a1a60",
    "bgp.route_map_deny@isp": "0d2872dbebef",
    "bgp.route_map_deny@leafspine": "eb1c57e2a0f2",
    "bgp.rr_client_missing@isp": "72cde0b02757",
    "ospf.area_mismatch@campus": "f843c8130db7",
    "ospf.area_mismatch@chain": "97863045c7a1",
    "ospf.area_mismatch@isp": "c4808b13306f",
    "ospf.area_mismatch@mesh": "5df15ae8ea3d",
    "ospf.area_mismatch@ring": "9e065bdae21a",
    "ospf.auth_mismatch@campus": "8616ca195988",
    "ospf.auth_mismatch@chain": "893a40423b30",
    "ospf.auth_mismatch@isp": "000e5d978332",
    "ospf.auth_mismatch@mesh": "4229fbd68245",
    "ospf.auth_mismatch@ring": "3560fbe22990",
    "ospf.backup_cost@mesh": "af97af9f1bca",
    "ospf.backup_cost@ring": "05504f44fb38",
    "ospf.cost_steering@mesh": "431e0239f4c5",
    "ospf.cost_steering@ring": "d65b3eae0f0c",
    "ospf.dead_mismatch@campus": "087c7f650169",
    "ospf.dead_mismatch@chain": "f9e45e9cd8dc",
    "ospf.dead_mismatch@isp": "c04c445df803",
    "ospf.dead_mismatch@mesh": "30d13fb0becb",
    "ospf.dead_mismatch@ring": "f6fc65b6ffe1",
    "ospf.duplicate_router_id@campus": "ab4920817ae7",
    "ospf.duplicate_router_id@chain": "0429cefdd80e",
    "ospf.duplicate_router_id@isp": "6bd4f3f72b0b",
    "ospf.duplicate_router_id@mesh": "b0df8508a9a9",
    "ospf.duplicate_router_id@ring": "e200f3b105e4",
    "ospf.fib_filter@campus": "5ba737b74c2e",
    "ospf.fib_filter@chain": "2bca482b4039",
    "ospf.fib_filter@mesh": "94383a1d1952",
    "ospf.fib_filter@ring": "6866370b0444",
    "ospf.hello_mismatch@campus": "d12809bfa8c3",
    "ospf.hello_mismatch@chain": "4e0ae9c771b9",
    "ospf.hello_mismatch@isp": "8e268cbf10dd",
    "ospf.hello_mismatch@mesh": "70f6b2a81ed4",
    "ospf.hello_mismatch@ring": "220cacf8ed6b",
    "ospf.max_metric@mesh": "2a2b93594f3a",
    "ospf.max_metric@ring": "2da9dcc3f185",
    "ospf.mtu_mismatch@campus": "3084147a80b8",
    "ospf.mtu_mismatch@chain": "f37b7c854fd1",
    "ospf.mtu_mismatch@isp": "6c50bb7c6059",
    "ospf.mtu_mismatch@mesh": "6711f78d004b",
    "ospf.mtu_mismatch@ring": "278445870d30",
    "ospf.network_missing@campus": "a283d185a2e0",
    "ospf.network_missing@chain": "287b28a5848b",
    "ospf.network_missing@isp": "a63e00122af5",
    "ospf.network_missing@mesh": "289a7cc6f825",
    "ospf.network_missing@ring": "ab290691cbf0",
    "ospf.network_type_mismatch@chain": "446eb1296378",
    "ospf.network_type_mismatch@mesh": "9a97eae5889a",
    "ospf.network_type_mismatch@ring": "aa87a4742564",
    "ospf.nssa_as_stub@campus": "10a597623559",
    "ospf.nssa_as_stub@mesh": "1c57e51db624",
    "ospf.nssa_as_stub@ring": "59adb87db723",
    "ospf.passive_link@campus": "f3641637325f",
    "ospf.passive_link@chain": "0252a566ee77",
    "ospf.passive_link@isp": "6a0d7b11b857",
    "ospf.passive_link@mesh": "6b5ef89d393c",
    "ospf.passive_link@ring": "6978d3cc5d5a",
    "ospf.redistribute_missing@chain": "05a5d08c9d3d",
    "ospf.stub_flag_mismatch@campus": "cd837358601a",
    "ospf.stub_flag_mismatch@mesh": "ba91a6bd0f55",
    "ospf.stub_flag_mismatch@ring": "34e54922587a",
}


@functools.cache
def labs(family: str) -> tuple:
    return tuple(build(family, size, v) for size in SIZES for v in range(VARIANTS))


@functools.cache
def draws(kind_id: str, family: str) -> tuple[tuple[object, Fault | None], ...]:
    kind = catalogue.kind(kind_id)
    specs = labs(family)
    out = []
    for i in range(DRAWS):
        spec = specs[i % len(specs)]
        out.append((spec, kind.draw(random.Random(f"test:{kind_id}:{family}:{i}"), spec, Taken())))
    return tuple(out)


def test_the_catalogue_has_at_least_14_ospf_and_14_bgp_faults_and_their_benign_twins():
    faults = [k for k in KINDS if not k.benign]
    assert sum(k.family == "ospf" for k in faults) >= 14
    assert sum(k.family == "bgp" for k in faults) >= 14
    assert {"ospf.backup_cost", "bgp.decommissioned_peer"} <= {k.id for k in KINDS if k.benign}
    for k in KINDS:
        assert k.meaning and k.component and k.topologies and k.checks, k.id
        assert ("benign" in k.checks) == k.benign, k.id


@pytest.mark.parametrize(("kind_id", "family"), PAIRS, ids=[f"{k}@{f}" for k, f in PAIRS])
def test_every_kind_draws_fairly_on_every_family_it_declares(kind_id, family):
    drawn = [(spec, f) for spec, f in draws(kind_id, family) if f is not None]
    assert drawn, f"{kind_id} never draws on {family}"
    for spec, fault in drawn:
        assert fault.kind == kind_id and fault.cause.kind == kind_id
        assert problems(fault, spec) == [], (spec.name, fault.summary)
        assert Fault.from_json(fault.to_json()) == fault
        assert fault.elements and fault.placement.split("-")[0] in {r.role for r in spec.routers}
    digest = hashlib.sha256(
        canonical_json([f.to_json() if f else None for _, f in draws(kind_id, family)]).encode()
    ).hexdigest()[:12]
    assert DIGESTS[f"{kind_id}@{family}"] == digest


@pytest.mark.parametrize("kind_id", [k.id for k in KINDS])
def test_a_draw_is_pure_and_keeps_out_of_what_is_taken(kind_id):
    kind = catalogue.kind(kind_id)
    for family in sorted(kind.topologies):
        for spec, fault in draws(kind_id, family)[:16]:
            if fault is None:
                continue
            again = kind.draw(random.Random("again"), spec, Taken())
            assert again == kind.draw(random.Random("again"), spec, Taken())
            other = kind.draw(random.Random("other"), spec, Taken(set(fault.elements)))
            assert other is None or not other.elements & fault.elements


def test_every_masking_pair_draws_on_one_element_at_the_other_end():
    found = set()
    for outer_kind in KINDS:
        for inner_id in outer_kind.masks:
            inner = catalogue.kind(inner_id)
            for family in sorted(outer_kind.topologies & inner.topologies):
                for spec, outer in draws(outer_kind.id, family)[:32]:
                    if outer is None:
                        continue
                    hidden = draw_masked(random.Random("pair"), spec, outer, inner)
                    if hidden is None:
                        continue
                    assert hidden.kind == inner_id and hidden.elements & outer.elements
                    assert hidden.cause.device != outer.cause.device
                    assert {i.device for i in hidden.inject}.isdisjoint(
                        {i.device for i in outer.inject}
                    )
                    found.add((outer_kind.id, inner_id))
    wanted = {(k.id, m) for k in KINDS for m in k.masks}
    assert wanted - found == set()


def test_benign_anomalies_have_no_fix_and_are_documented_on_the_device():
    for k in (k for k in KINDS if k.benign):
        for family in sorted(k.topologies):
            drawn = [f for _, f in draws(k.id, family) if f is not None]
            assert drawn, (k.id, family)
            for fault in drawn:
                assert fault.benign and fault.fix == ()
                text = " ".join(line for i in fault.inject for line in i.lines)
                documented = "description" in text or k.id == "ospf.backup_cost"
                assert documented, fault.summary


def test_the_agents_read_only_check_is_the_sandboxs():
    assert read_only("vtysh -c 'show ip ospf neighbor'")
    assert read_only("ip route get 10.2.3.11")
    assert not read_only("vtysh -c 'configure terminal' -c 'router ospf'")
    assert not read_only("ip link set r1-eth1 mtu 1500")
    assert not read_only("vtysh -c 'show ip ospf' ; reboot")
