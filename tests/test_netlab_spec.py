"""NetSpec and the topology families (generators/netlab/): pure, seeded, sound.

Every family x size x the tier catalogue's 4 variants is built once (about 1 s) and held to
the invariants: same arguments give the same bytes (a pinned digest), the JSON round trip
is exact, names fit the emulator's rules, addresses are unique and in their plan, sizes
and xlarge host counts hold; then each family's own shape is checked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
from collections import Counter

import pytest

from generators.netlab import FAMILIES, SIZES, VARIANTS, NetSpec, build
from generators.netlab.checks import check, problems
from generators.netlab.intents import first_hops
from pipeline.core import canonical_json
from pipeline.errors import ConfigError

# Changes only when the families change on purpose (then bump spec.SPEC_VERSION if a
# field's meaning changed): every lab of every tier's catalogue, byte for byte.
CATALOGUE_DIGEST = "36681c98aa1e691b"


@pytest.fixture(scope="module")
def catalogue() -> list[NetSpec]:
    return [build(f, s, v) for f in FAMILIES for s in SIZES for v in range(VARIANTS)]


def test_same_arguments_same_bytes(catalogue):
    again = [build(s.family, s.size, s.variant) for s in catalogue[::7]]
    assert [canonical_json(s.to_json()) for s in again] == [
        canonical_json(s.to_json()) for s in catalogue[::7]
    ]
    digest = hashlib.sha256("".join(s.key for s in catalogue).encode()).hexdigest()[:16]
    assert digest == CATALOGUE_DIGEST
    assert len({s.key for s in catalogue}) == len(catalogue)  # every variant differs


def test_json_round_trip_is_exact_and_specs_are_hashable(catalogue):
    for spec in catalogue[::2]:
        text = json.dumps(spec.to_json())
        back = NetSpec.from_json(json.loads(text))
        assert back == spec and back.key == spec.key and hash(back) == hash(spec)
    assert len(set(catalogue)) == len(catalogue)


def test_every_lab_holds_the_invariants(catalogue):
    for spec in catalogue:
        assert problems(spec) == [], spec.name
        low, high = SIZES[spec.size]
        assert low <= len(spec.routers) <= high
        if spec.size == "xlarge":
            assert len(spec.hosts) >= 48, spec.name
        assert all(len(p.name) <= 15 for p in spec.ports)


def test_addresses_are_in_their_plan(catalogue):
    for spec in catalogue:
        assert [r.loopback for r in spec.routers] == [
            f"10.255.0.{n}" for n in range(1, len(spec.routers) + 1)
        ]
        for x in spec.links:
            assert x.subnet == f"172.16.{4 * x.id // 256}.{4 * x.id % 256}/30"
            assert ipaddress.IPv4Address(x.a_addr) in ipaddress.IPv4Network(x.subnet)
            assert spec.router(x.a).index < spec.router(x.b).index  # the lower index is .1
        for lan in spec.lans:
            net = ipaddress.IPv4Network(lan.subnet)
            assert net.prefixlen == 24 and net.subnet_of(ipaddress.IPv4Network("10.0.0.0/8"))
        servers = [h for h in spec.hosts if h.role == "server"]
        assert [h.name for h in servers] == ["srv1"] and servers[0].address.endswith(".53/24")
        assert {s.kind for s in spec.services} == {"dns", "dhcp"}


def test_a_broken_spec_is_refused_naming_what_broke():
    spec = build("chain", "small", 0)
    host = spec.hosts[1]
    twin = dataclasses.replace(host, address=spec.hosts[0].address)
    ports = tuple(
        dataclasses.replace(p, addresses=(twin.address,)) if p.device == host.name else p
        for p in spec.ports
    )
    broken = dataclasses.replace(spec, ports=ports)
    with pytest.raises(ConfigError, match=rf"address {spec.hosts[0].address[:-3]} is used 2"):
        check(broken)
    long_name = dataclasses.replace(spec.ports[0], name="r1-eth0-far-too-long")
    assert any("bad name" in p for p in problems(dataclasses.replace(spec, ports=(long_name,))))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("star", "small", 0), "family 'star': choose one of chain, ring"),
        (("ring", "huge", 0), "size 'huge': choose one of small, medium, large, xlarge"),
        (("ring", "small", -1), "variant -1"),
        (("ring", "small", 0, 9), "small labs have 4..6 routers, not 9"),
    ],
)
def test_bad_arguments_are_config_errors(args, message):
    with pytest.raises(ConfigError, match=message):
        build(*args)


def test_from_json_refuses_other_versions_and_unknown_fields():
    data = build("ring", "small", 0).to_json()
    with pytest.raises(ConfigError, match="version 0"):
        NetSpec.from_json({**data, "version": 0})
    data["routers"][0]["colour"] = "red"
    with pytest.raises(ConfigError, match=r"NetSpec.routers\[0\]: unknown field\(s\) \['colour'\]"):
        NetSpec.from_json(data)


def test_routers_fixes_the_count_and_names_the_lab():
    spec = build("leafspine", "xlarge", 0, routers=24)
    assert spec.name == "leafspine-xlarge-0-n24" and len(spec.routers) == 24
    assert [r.name for r in spec.routers if r.role == "spine"] == ["sp1", "sp2", "sp3", "sp4"]


def test_chain_variants_alternate_one_area_and_two_ases():
    one, two = build("chain", "medium", 0), build("chain", "medium", 1)
    assert not one.sessions and [a.id for a in one.areas] == ["0.0.0.0"]
    (session,) = two.sessions
    assert session.kind == "ebgp" and {session.a_asn, session.b_asn} == {65001, 65002}
    assert two.link(session.link).area is None  # the border link is not in OSPF
    for border in (session.a, session.b):
        assert two.router(border).redistribute == ("bgp",)
    assert len(two.adjacencies) == len(two.links) - 1
    end_to_end = one.paths[0]  # the longest first: r1 to rN over every link
    assert end_to_end.routers == tuple(r.name for r in one.routers)
    assert end_to_end.links == tuple(x.id for x in one.links)
    assert (end_to_end.source, end_to_end.target) == ("h1_1", f"h{len(one.routers)}_1")


def test_ring_and_mesh_have_redundancy_areas_backup_and_spare(catalogue):
    for spec in (s for s in catalogue if s.family in ("ring", "mesh")):
        roles = Counter(x.role for x in spec.links)
        assert (
            roles["backup"] == 1
            and spec.link(next(x.id for x in spec.links if x.role == "backup")).cost == 1000
        )
        assert roles["spare"] == spec.variant % 2
        areas = {a.id for a in spec.areas}
        assert areas == ({"0.0.0.0", "0.0.0.1"} if spec.variant % 4 in (2, 3) else {"0.0.0.0"})
        if len(areas) == 2:
            assert any(r.role == "abr" for r in spec.routers)
        if spec.family == "mesh":
            assert len(spec.links) - roles["spare"] == len(spec.routers) + -(
                -len(spec.routers) // 3
            )
        for intent in spec.paths:  # a path intent is a unique shortest path, hop by hop
            hops = zip(intent.routers[:-1], intent.routers[1:], intent.links, strict=True)
            for here, nxt, link in hops:
                assert first_hops(spec, here)[intent.routers[-1]][1] == {
                    (link, spec.link(link).end(here)[0])
                }
                assert spec.link(link).end(here)[2] == nxt


def test_leafspine_is_rfc7938_with_ecmp_over_every_spine(catalogue):
    for spec in (s for s in catalogue if s.family == "leafspine"):
        spines = [r for r in spec.routers if r.role == "spine"]
        leaves = [r for r in spec.routers if r.role != "spine"]
        assert len(spines) == max(2, len(spec.routers) // 6)
        assert {r.asn for r in spines} == {65000} and len({r.asn for r in leaves}) == len(leaves)
        assert len(spec.sessions) == len(spines) * len(leaves)
        assert all(s.kind == "ebgp" and s.link is not None for s in spec.sessions)
        assert not spec.ospf and spec.ecmp_width == len(spines)
        assert all(len(e.via) == len(spines) for e in spec.ecmp)


def test_campus_vlans_are_bridges_in_loop_free_trees(catalogue):
    for spec in (s for s in catalogue if s.family == "campus"):
        cores = [r for r in spec.routers if r.role == "core"]
        dists = [r for r in spec.routers if r.role == "dist"]
        assert len(cores) + len(dists) == len(spec.routers) and len(dists) % 2 == 0
        for lan in (x for x in spec.lans if x.vlan is not None):
            holders = [b for b in spec.bridges if b.vlan == lan.vlan]
            # one bridge on the access switch and one SVI per distribution router: a star
            assert sorted(b.device for b in holders) == sorted(
                [lan.switch, *(a.router for a in lan.routers)]
            )
            trunks = [m for t in spec.trunks for m in t.members if m[0] == lan.vlan]
            assert len(trunks) == len(holders) - 1  # a tree: edges = nodes - 1
            assert {a.address.rsplit(".", 1)[1] for a in lan.routers} == {"2/24", "3/24"}
        areas = {a.id: a.kind for a in spec.areas}
        assert len(areas) == 1 + len(dists) // 2 and areas["0.0.0.0"] == "normal"
        assert len(spec.vrrp) == sum(1 for x in spec.lans if x.vlan is not None)


def test_isp_has_route_reflectors_customers_and_a_multi_site_customer(catalogue):
    for spec in (s for s in catalogue if s.family == "isp"):
        providers = {r.asn for r in spec.routers if r.role != "ce"}
        assert len(providers) == {"small": 1, "medium": 2}.get(spec.size, 3)
        for asn in providers:
            members = [r.name for r in spec.routers if r.asn == asn]
            ibgp = [s for s in spec.sessions if s.kind == "ibgp" and s.a_asn == asn]
            rr = f"p{asn - 65000}r1"
            assert spec.router(rr).role == "rr"
            assert sorted(s.rr_client for s in ibgp) == sorted(m for m in members if m != rr)
            assert all(set(s.next_hop_self) == {s.a, s.b} for s in ibgp)
        ces = [r for r in spec.routers if r.role == "ce"]
        shared = [asn for asn, n in Counter(r.asn for r in ces).items() if n == 2]
        assert len(shared) == (1 if len(ces) >= 3 else 0)
        for s in spec.sessions:
            multi_site = [end for end, asn in ((s.a, s.a_asn), (s.b, s.b_asn)) if asn in shared]
            assert s.allowas_in == tuple(multi_site)
