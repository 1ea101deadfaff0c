"""Warm FRR labs (generators/lab/frr/): a lab that agents changed in every way the vtysh
grammar and the kernel tools allow is restored by configuration difference, without
restarting a daemon, and proven clean: every daemon's running configuration and the
configuration folders equal the healthy ones, the kernel equals its snapshot (FRR's routes
aside), the routing state is the healthy one (routes with next hops, every adjacency and
session) and the intended protocol state and every flow hold. One level-5 lab (OSPF and
BGP) serves every test here.
"""

from __future__ import annotations

import json

import pytest

from generators.lab.frr import confdiff
from generators.lab.frr.daemons import installed
from generators.lab.frr.pool import WarmPool
from generators.routing.config import RoutingConfig
from generators.routing.frr.generator import frr_pool
from generators.routing.frr.lab import FrrLab
from generators.routing.frr.topology import FrrTopology
from tests.conftest import integration_fixture, require, require_root

pytestmark = pytest.mark.integration
TOPO = FrrTopology(5, 4, 2)  # r1 r2 | r3 r4: AS 65001 and AS 65002, eBGP r2 - r3

# What agents do, as vtysh lines per router (through the sandbox: the grammar allows each).
VTYSH_CHANGES = [
    (
        "r1",
        [
            "configure terminal",
            "router ospf",
            "no network 10.100.1.0/30 area 0",
            "network 10.100.1.0/30 area 0.0.0.1",
            "redistribute connected",
            "timers throttle spf 100 200 400",
            "distance 150",
            "passive-interface default",
        ],
    ),
    (
        "r1",
        [
            "configure terminal",
            "interface r1-eth2",
            "ip ospf cost 77",
            "ip ospf hello-interval 3",
            "ip ospf dead-interval 12",
            "ip ospf mtu-ignore",
            "ip ospf authentication message-digest",
            "ip ospf message-digest-key 1 md5 k",
        ],
    ),
    (
        "r2",
        [
            "configure terminal",
            "ip prefix-list PL seq 5 deny 10.0.1.0/24",
            "ip prefix-list PL seq 10 permit 0.0.0.0/0 le 32",
            "route-map RM deny 10",
            "match ip address prefix-list PL",
            "exit",
            "route-map RM permit 20",
            "set metric 50",
            "exit",
            "router bgp 65001",
            "neighbor 10.100.2.2 shutdown",
            "neighbor 10.100.2.2 description x",
            "bgp bestpath as-path multipath-relax",
            "address-family ipv4 unicast",
            "neighbor 10.100.2.2 route-map RM out",
            "no network 10.0.2.0/24",
            "network 10.9.0.0/16",
            "redistribute ospf",
            "maximum-paths 4",
        ],
    ),
    (
        "r3",
        [
            "configure terminal",
            "router bgp 65002",
            "no neighbor 10.100.2.1",
            "neighbor 10.100.2.5 remote-as 65001",
            "bgp ebgp-requires-policy",
            "timers bgp 10 30",
        ],
    ),
    (
        "r4",
        [
            "configure terminal",
            "interface r4-eth1",
            "shutdown",
            "description cut",
            "ip address 10.99.0.1/24",
            "exit",
            "no ip forwarding",
        ],
    ),
    ("r4", ["configure terminal", "no router ospf"]),
    ("r2", ["write memory"]),
]
KERNEL_CHANGES = [
    ("r1", "ip route add 10.0.3.0/24 via 10.100.1.2"),  # a static route beside OSPF's
    ("r2", "ip route replace 10.0.1.0/24 via 10.100.1.1 dev r2-eth1"),  # over OSPF's
    ("r3", "ip route del 10.0.4.0/24"),  # one FRR installed
    ("r3", "iptables -A FORWARD -s 10.0.1.0/24 -j DROP"),
    ("r4", "ip link set r4-eth0 down"),
    ("h1", "ip route del default"),
]


@pytest.fixture(scope="module")
@integration_fixture
def pool():
    require_root("warm FRR labs need root (Mininet and FRR)")
    missing = installed()
    require(missing is None, missing or "")
    with frr_pool(RoutingConfig()) as warm:
        yield warm


def _clean(lab: FrrLab) -> None:
    """The lab is the healthy one, in every respect the restore proves."""
    assert lab.restarts == 0, "the restore fell back to restarting the daemons"
    now = lab.running_config()
    assert all(confdiff.same(now[key], text) for key, text in lab.healthy_config.items())
    for router in TOPO.frr_routers:
        assert not lab.daemons.files_differ(router, lab.configs[router])
    assert lab.read().digest == lab.target.digest
    assert lab.problems() == []


def test_every_allowed_change_is_restored_by_difference_and_proven(pool: WarmPool):
    with pool.use(TOPO) as lab:
        assert isinstance(lab, FrrLab)
        for machine, command in KERNEL_CHANGES:
            result = lab.sandbox.run(machine, command)
            assert result.status.value == "ok", (machine, command, result.output)
        for router, lines in VTYSH_CHANGES:
            said = " ".join(f"-c {json.dumps(line)}" for line in lines).replace('"', "'")
            result = lab.sandbox.run(router, f"vtysh {said}")
            assert result.status.value == "ok", (router, lines, result.output)
        changed = lab.running_config()
        assert sum(not confdiff.same(changed[k], t) for k, t in lab.healthy_config.items()) >= 5
        assert not lab.observe().full
        seconds = lab.restore()
        print(f"restored in {seconds:.2f} s")
        _clean(lab)
        assert seconds < 15


def test_faults_and_their_fixes_leave_a_lab_that_restores_at_once(pool: WarmPool):
    """The usual cycle: faults injected and fixed (a prefix-list left defined, an empty
    filter table), then the restore finds the differences and needs no convergence."""
    import random

    from generators.routing.frr.faults import DRAW

    with pool.use(TOPO) as lab:
        assert isinstance(lab, FrrLab)
        rng = random.Random(29)
        faults = [DRAW[kind](rng, TOPO, set()) for kind in ("bgp_filter", "drop_traffic")]
        lab.inject(faults)
        assert not lab.wait_broken().full
        for fault in faults:
            for machine, command in fault.fix:
                assert lab.sandbox.run(machine, command).status.value == "ok"
        assert lab.after_change().repaired
        lab.restore()
        _clean(lab)
