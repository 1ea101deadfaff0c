"""The lab model's wiring extensions (emulators/base.py), run against every backend: direct
point-to-point domains, bridges inside a device (a switch's VLAN, a router's SVI),
loopback addresses, interface descriptions and ports kept down.

The lab: h1 -- r0 -- sw1 -- h2, every segment a direct domain; r0 routes between h1's
subnet on r0-eth1 and h2's on its bridge v20 (an SVI over r0-eth2); sw1 bridges its two
ports in v20; r0 holds 10.255.0.1/32 on lo and a spare port r0-eth3 to h3, kept down.
"""

from __future__ import annotations

import pytest

from emulators.base import EMULATORS, Bridge, Device, Interface, Lab
from emulators.probe import PROTOCOLS, Flow
from pipeline.errors import ConfigError
from tests.conftest import integration_fixture, require_emulator

DIRECT = ("d1", "d2", "d3", "d4")


def wired_lab() -> Lab:
    def host(name: str, domain: str, addr: str, gw: str) -> Device:
        intf = Interface(f"{name}-eth0", domain, (addr,), alias=f"host {name}")
        return Device(name, (intf,), startup=(("ip", "route", "add", "default", "via", gw),))

    router = Device(
        "r0",
        (
            Interface("r0-eth1", "d1", ("10.0.1.1/24",), alias="LAN 10.0.1.0/24"),
            Interface("r0-eth2", "d2", alias="trunk to sw1 VLAN 20"),
            Interface("r0-eth3", "d4", alias="SPARE to h3: keep down", up=False),
        ),
        sysctls=(("net.ipv4.ip_forward", "1"), ("net.ipv4.conf.v20.send_redirects", "0")),
        role="router",
        bridges=(Bridge("v20", ("r0-eth2",), ("10.0.2.1/24",), alias="SVI VLAN 20"),),
        loopbacks=("10.255.0.1/32",),
    )
    switch = Device(
        "sw1",
        (Interface("sw1-eth0", "d2"), Interface("sw1-eth1", "d3")),
        role="switch",
        bridges=(Bridge("v20", ("sw1-eth0", "sw1-eth1"), alias="VLAN 20"),),
    )
    return Lab(
        "wiring",
        (
            router,
            switch,
            host("h1", "d1", "10.0.1.2/24", "10.0.1.1"),
            host("h2", "d3", "10.0.2.2/24", "10.0.2.1"),
            host("h3", "d4", "10.0.3.2/24", "10.0.3.1"),
        ),
        direct=DIRECT,
    )


@pytest.fixture(scope="module", params=EMULATORS.names())
@integration_fixture
def emu(request):  # one lab per backend: the reset test restores what the first one saw
    require_emulator(request.param)
    with EMULATORS.load(request.param)() as emulator:
        emulator.build(wired_lab())
        emulator.snapshot()
        yield emulator


def _out(emu, device: str, *argv: str) -> str:
    return emu.run(device, list(argv), timeout_s=5, output_bytes=65536).output


def test_bridges_loopbacks_aliases_and_down_ports_are_built(emu):
    flows = [Flow(s, t, a, p) for s, t, a in (("h1", "h2", "10.0.2.2"), ("h2", "h1", "10.0.1.2"),
             ("h1", "r0", "10.255.0.1")) for p in PROTOCOLS]  # fmt: skip
    assert [f for f, ok in emu.probe(flows).items() if not ok] == []
    links = _out(emu, "sw1", "ip", "-o", "link", "show")
    assert "sw1-eth0@" in links and "master v20" in links.split("sw1-eth1@")[1].split("\n")[0]
    r0 = _out(emu, "r0", "ip", "-d", "-o", "link", "show")
    assert "alias SVI VLAN 20" in r0 and "alias LAN 10.0.1.0/24" in r0
    spare = next(line for line in r0.splitlines() if "r0-eth3@" in line)
    assert "state DOWN" in spare and "alias SPARE to h3: keep down" in spare
    assert "inet 10.255.0.1/32" in _out(emu, "r0", "ip", "-4", "addr", "show", "dev", "lo")
    if emu.backend == "mininet":  # a direct domain is a veth pair: no switch node at all
        assert emu._net.switches == []


def test_reset_restores_bridge_membership_and_descriptions(emu):
    emu.run("sw1", ["ip", "link", "set", "dev", "sw1-eth1", "nomaster"], timeout_s=5,
            output_bytes=100)  # fmt: skip
    emu.run("r0", ["ip", "link", "set", "dev", "r0-eth1", "alias", "x"], timeout_s=5,
            output_bytes=100)  # fmt: skip
    flow, control = Flow("h1", "h2", "10.0.2.2"), Flow("h1", "r0", "10.0.1.1")
    assert emu.probe([flow, control]) == {flow: False, control: True}
    emu.reset()
    assert emu.probe([flow]) == {flow: True}
    assert "alias LAN 10.0.1.0/24" in _out(emu, "r0", "ip", "-d", "-o", "link", "show", "r0-eth1")


def test_the_lab_model_refuses_bad_wiring():
    lab = wired_lab()
    lab.validate()
    three = Lab("bad", (*lab.devices, Device("h4", (Interface("h4-eth0", "d1"),))), DIRECT)
    with pytest.raises(ConfigError, match=r"direct domain 'd1' joins \['r0', 'h1', 'h4'\]"):
        three.validate()
    r0 = lab.devices[0]
    stray = Device("r0", r0.interfaces, bridges=(Bridge("v30", ("r0-eth9",)),))
    with pytest.raises(ConfigError, match="port 'r0-eth9' is not an interface"):
        Lab("bad", (stray, *lab.devices[1:]), DIRECT).validate()
    clash = Device("r0", r0.interfaces, bridges=(Bridge("r0-eth1", ()),))
    with pytest.raises(ConfigError, match="bridge 'r0-eth1': a free interface name"):
        Lab("bad", (clash, *lab.devices[1:]), DIRECT).validate()
    noisy = Device("r0", (Interface("r0-eth1", "d1", alias="two\nlines"),))
    with pytest.raises(ConfigError, match="alias 'two\\\\nlines' is not printable"):
        Lab("bad", (noisy, *lab.devices[1:]), DIRECT).validate()
