"""The data-plane, L2 and services kinds live, on one shared campus IncidentLab.

One small campus lab (VLANs on access switches, VRRP on the distribution pairs, dnsmasq
on srv1, the internet edge with NAT) proves a representative subset one kind after
another (generators/incidents/proof.py: observable, evidence through the read-only
sandbox, fix through the sandbox, verified return to the healthy lab); the new agent
tools run jailed on it, read-only; and the lab's kernel reset restores a port moved
between bridges (`master`, which the backend contract lab cannot show: it has no bridge).
Every kind of these families is proven by the `incidents_catalogue_dp` bench.
"""

from __future__ import annotations

import random

import pytest

from emulators.base import EMULATORS, Bridge, Device, Interface, Lab
from emulators.netcmd.sandbox import CommandSandbox, Status
from generators.incidents import daemons
from generators.incidents.faults import kinds as K
from generators.incidents.lab import IncidentLab
from generators.incidents.proof import Prover
from generators.lab.frr.daemons import installed
from generators.netlab import build
from tests.conftest import integration_fixture, require, require_emulator

SUBSET = (
    "dataplane.forward_drop",
    "dataplane.nat_masquerade_missing",
    "dataplane.mtu_mismatch",
    "l2.access_wrong_vlan",
    "services.dns_record_wrong",
    "services.dhcp_router_option_wrong",
    "services.vrrp_priority_inverted",
)


@pytest.fixture(scope="module")
@integration_fixture
def prover():
    require_emulator("mininet")
    require(installed() is None, installed() or "")
    require(daemons.installed() is None, daemons.installed() or "")
    with IncidentLab(build("campus", "small", 0)) as lab:
        lab.converge()
        yield Prover(lab)


@pytest.mark.parametrize("kind", SUBSET)
def test_a_kind_is_observable_evidenced_fixed_and_the_lab_comes_back(prover, kind):
    spec = prover.lab.spec
    fault = K.kind(kind).draw(random.Random(f"live:{kind}"), spec, K.Taken())
    assert fault is not None
    proof = prover.prove(fault)
    assert proof.ok, (proof.error, proof.to_json())
    assert proof.observed and all(e == "ok" for e in proof.evidence)
    assert set(proof.fixes) == {"ok"}


def test_a_benign_anomaly_changes_no_probe_and_its_evidence_shows_it(prover):
    fault = K.kind("dataplane.sinkhole_route").draw(random.Random(0), prover.lab.spec, K.Taken())
    proof = prover.prove_benign(fault)
    assert proof.ok, proof.to_json()


@pytest.mark.parametrize(
    ("machine", "command", "shows"),
    [
        ("h10_1", "traceroute -n -q 1 -w 1 -m 8 10.0.250.53", "10.0.250.53"),
        ("h10_1", "tracepath -n -m 8 10.0.250.53", "reached"),
        ("h10_1", "ping -c 1 -W 2 -M do -s 1472 10.0.250.53", "1 received"),
        ("h10_1", "dig @10.0.250.53 +short h21-1.lab", "10.2.21.11"),
        ("acc1", "bridge link show dev acc1-eth0", "master v10"),
        ("acc1", "bridge fdb show br v10", "v10"),
        ("srv1", "svcctl dns show", "host-record h10-1.lab,10.1.10.11"),
        ("dist1a", "svcctl vrrp show", "priority 150"),
        ("srv1", "svcctl dhcp show", "dhcp-option tag:l10,option:router,10.1.10.254"),
    ],
)
def test_the_new_tools_run_jailed_and_read_only(prover, machine, command, shows):
    result = prover.ro.run(machine, command)
    assert result.status is Status.OK, result.output
    assert shows in result.output, result.output


@pytest.mark.parametrize(
    ("machine", "command"),
    [
        ("acc1", "ip link set acc1-eth0 master v11"),
        ("srv1", "svcctl dns unset host-record h10-1.lab"),
        ("dist1a", "vtysh -c 'configure terminal' -c 'router ospf' -c 'passive-interface v10'"),
        ("dist1a", "iptables -I FORWARD -j DROP"),
    ],
)
def test_writes_are_blocked_in_a_read_only_episode(prover, machine, command):
    result = prover.ro.run(machine, command)
    assert result.status is Status.REJECTED, result.output
    assert "read-only" in result.output


def test_nothing_a_read_only_episode_sent_changed_the_lab(prover):
    assert prover.drift() == []


def test_a_reset_and_service_changes_restart_none_of_the_labs_jails(prover):
    """A lab's life (the routers' folders rewritten by a reset, DNS, DHCP and VRRP
    reconfigured and their daemons restarted) replaces no source of the lab's persistent
    jails: the same zygotes serve on (emulators/zygote/client.py restarts one whose
    source was replaced)."""
    lab, gate = prover.lab, prover.rw
    reads = [("dist1a", "vtysh -c 'show ip ospf neighbor'"), ("h10_1", "ip -br addr")]
    for machine, command in reads:
        assert gate.run(machine, command).status is Status.OK
    starts = {id(z): z.starts for z in lab.emu._zygotes.values()}
    assert len(starts) == 2  # the lab commands' jail and the vtysh one
    configs = lab.frr_configs()
    for group in {id(g): g for g in lab.daemons.values()}.values():
        group.stop()  # what a reset does to FRR (generators/incidents/labs.py: restore)
        group.write_configs({r: configs[r] for r in group.routers})
        group.start()
    lab.converge()
    for command in ("dns set host-record web.lab,10.0.1.11", "dns unset host-record web.lab",
                    "dhcp set dhcp-option tag:l10,option:router,10.1.10.253",
                    "dhcp set dhcp-option tag:l10,option:router,10.1.10.254"):  # fmt: skip
        assert gate.run("srv1", f"svcctl {command}").status is Status.OK
    for command in ("vrrp set priority 10 120", "vrrp set priority 10 150"):
        assert gate.run("dist1a", f"svcctl {command}").status is Status.OK
    for machine, command in reads:
        assert gate.run(machine, command).status is Status.OK
    assert {id(z): z.starts for z in lab.emu._zygotes.values()} == starts


@pytest.mark.parametrize(
    ("machine", "command", "said"),
    [
        ("srv1", "svcctl dns set interface nosuch0", "unknown interface nosuch0"),
        ("dist1a", "svcctl vrrp set track_interface 10 nosuch0", "Non-existent interface"),
    ],
)
def test_a_configuration_its_daemon_refuses_is_the_agents_failed_step(
    prover, machine, command, said
):
    """A value svcctl's grammar takes but the daemon refuses at start (an interface the
    device lacks) stops the service, as a real restart would: the agent's step fails with
    the daemon's own words and the episode goes on (it was an environment failure, which
    ends the episode blamed on the lab); the lab's restore brings the daemon back."""
    gate, service = prover.rw, command.split()[1]
    result = gate.run(machine, command)
    assert result.status is Status.FAILED, result
    assert said in result.output and "stopped" in result.output, result.output
    assert f"{service} on {machine} (stopped)" in gate.run(machine, f"svcctl {service} show").output
    assert prover.lab.restore_services() == [f"{machine}/{daemons.DAEMON_OF[service]}"]
    assert "(running)" in gate.run(machine, f"svcctl {service} show").output


@pytest.mark.integration
def test_the_reset_restores_a_ports_bridge():
    require_emulator("mininet")
    switch = Device(
        "s1",
        (Interface("s1-eth0", "a1"), Interface("s1-eth1", "a2")),
        role="switch",
        bridges=(Bridge("v1", ("s1-eth0", "s1-eth1")), Bridge("v2", ())),
    )
    hosts = [
        Device(f"h{i}", (Interface(f"h{i}-eth0", f"a{i}", (f"10.0.0.{i}/24",)),)) for i in (1, 2)
    ]
    lab = Lab("l2reset", (switch, *hosts), direct=("a1", "a2"))
    with EMULATORS.load("mininet")() as emu:
        emu.build(lab)
        emu.snapshot()
        sandbox = CommandSandbox(emu, ("s1", "h1", "h2"))
        assert sandbox.run("s1", "ip link set s1-eth0 master v2").status is Status.OK
        assert not emu.reachability().full
        emu.reset()
        shown = emu.run("s1", ["ip", "-o", "link", "show", "dev", "s1-eth0"], timeout_s=5)
        assert "master v1 " in shown.output
        assert emu.reachability().full
