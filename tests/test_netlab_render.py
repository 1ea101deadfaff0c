"""Rendering a NetSpec (generators/netlab/): the emulators' Lab, FRR configuration per router
and daemon, and the prompt's inventory and intent. Pure and fast; the daemons' own check
of every configuration shape and the live labs are in tests/test_netlab_live.py.
"""

from __future__ import annotations

from collections import Counter

import pytest

from generators.netlab import FAMILIES, SIZES, VARIANTS, build
from generators.netlab.describe import describe
from generators.netlab.frrconf import all_configs, configs, home_area

INVENTORY_MAX_CHARS = 6000  # a 28-router lab's inventory and intent stay readable


@pytest.fixture(scope="module")
def catalogue():
    return [build(f, s, v) for f in FAMILIES for s in SIZES for v in range(VARIANTS)]


def test_every_lab_renders_to_a_valid_lab_model(catalogue):
    for spec in catalogue:
        lab = spec.to_lab()
        lab.validate()
        assert [d.name for d in lab.devices] == list(spec.devices)
        ends = Counter(i.domain for d in lab.devices for i in d.interfaces)
        assert set(lab.direct) == {d for d, n in ends.items() if n == 2}
        for r in spec.routers:
            device = lab.device(r.name)
            assert device.role == "router" and device.loopbacks == (f"{r.loopback}/32",)
            assert ("net.ipv4.ip_forward", "1") in device.sysctls
        for h in spec.hosts:
            assert lab.device(h.name).startup == (
                ("ip", "route", "add", "default", "via", h.gateway),
            )


def test_the_lab_carries_descriptions_and_the_spare_port_down():
    spec = build("mesh", "small", 1)
    lab = spec.to_lab()
    backup = next(x for x in spec.links if x.role == "backup")
    spare = next(x for x in spec.links if x.role == "spare")
    intf = {i.name: i for i in lab.device(backup.a).interfaces}[backup.a_intf]
    assert intf.alias == f"BACKUP to {backup.b} {backup.b_intf}: cost 1000 by design"
    down = {i.name: i for i in lab.device(spare.a).interfaces}[spare.a_intf]
    assert not down.up and down.addresses == () and down.alias.startswith("SPARE to ")
    far = {i.name: i for i in lab.device(spare.b).interfaces}[spare.b_intf]
    assert far.up and far.addresses == ()


def test_rendering_is_deterministic(catalogue):
    for spec in catalogue[::5]:
        again = build(spec.family, spec.size, spec.variant)
        assert all_configs(again) == all_configs(spec)
        assert describe(again) == describe(spec)
        assert again.to_lab() == spec.to_lab()


def test_ospf_configuration_follows_the_spec():
    spec = build("ring", "small", 7)  # two areas, area 1 a stub
    stub = next(a.id for a in spec.areas if a.kind == "stub")
    for r in spec.routers:
        text = configs(spec, r.name)["ospfd"]
        assert f" ospf router-id {r.loopback}\n" in text
        assert f" network {r.loopback}/32 area {home_area(spec, r.name)}\n" in text
        in_stub = any(stub in (x.area,) for x in spec.links_of(r.name))
        assert (f" area {stub} stub\n" in text) == in_stub
        for x in spec.links_of(r.name):
            intf = x.end(r.name)[0]
            if x.role == "spare":
                assert f"interface {intf}\n" not in text and x.subnet not in text
            else:
                assert f"interface {intf}\n ip ospf network point-to-point\n" in text
                assert f" network {x.subnet} area {x.area}\n" in text
                assert f" ip ospf cost {x.cost}\n" in text.split(f"interface {intf}\n")[1]
        lan = next(lan for lan in spec.lans if lan.routers[0].router == r.name)
        assert f"interface {lan.routers[0].intf}\n ip ospf passive\n" in text


def test_bgp_configuration_follows_the_sessions():
    spec = build("isp", "small", 20)  # a multi-site customer, dual-homed CEs
    for s in spec.sessions:
        for me in (s.a, s.b):
            _, address, asn = s.peer_of(me)
            text = configs(spec, me)["bgpd"]
            assert f" neighbor {address} remote-as {asn}\n" in text
            assert (f"  neighbor {address} next-hop-self\n" in text) == (me in s.next_hop_self)
            assert (f"  neighbor {address} allowas-in 1\n" in text) == (me in s.allowas_in)
            client = f"  neighbor {address} route-reflector-client\n" in text
            assert client == (s.rr_client is not None and s.rr_client != me)
            ibgp_source = f" neighbor {address} update-source {spec.router(me).loopback}\n"
            assert (ibgp_source in text) == (s.kind == "ibgp")
    assert any(s.allowas_in for s in spec.sessions)
    ce = next(r for r in spec.routers if r.role == "ce")
    assert "ospfd" not in configs(spec, ce.name)
    assert f"  network {ce.bgp_networks[0]}\n" in configs(spec, ce.name)["bgpd"]


def test_leafspine_ecmp_is_configured_over_every_spine():
    spec = build("leafspine", "medium", 0)
    spines = sum(1 for r in spec.routers if r.role == "spine")
    for r in spec.routers:
        assert set(configs(spec, r.name)) == {"zebra", "bgpd"}
        text = configs(spec, r.name)["bgpd"]
        assert f"  maximum-paths {spines}\n" in text and "maximum-paths ibgp" not in text


def test_inventories_are_bounded_and_name_every_router(catalogue):
    for spec in catalogue:
        text = describe(spec)
        assert len(text) <= INVENTORY_MAX_CHARS, (spec.name, len(text))
        lines = text.splitlines()
        for r in spec.routers:
            assert sum(line.startswith(f"  {r.name} ") for line in lines) == 1, r.name
        for sw in spec.switches:
            assert any(line.startswith(f"  {sw.name} ") for line in lines)
        if spec.family == "leafspine":
            assert "every leaf has one link to each spine" in text
        else:
            assert all(f"{x.a}-{x.b}" in text for x in spec.links)
    chain = build("chain", "medium", 1)
    assert "The borders" in describe(chain) and "redistribute BGP into OSPF" in describe(chain)
