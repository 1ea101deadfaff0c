"""Routing levels 4-5 (FRR) without a network: vtysh's grammar, seeded draws, knobs,
capacity, configurations and prompts."""

from __future__ import annotations

import json
import random
import shlex

import pytest

from emulators.netcmd import vtysh
from emulators.netcmd.policy import check
from generators.lab.frr.reading import bgp_peers as _bgp_peers
from generators.routing.capacity import capacity
from generators.routing.config import RoutingConfig, validate_config
from generators.routing.frr.episode import build_prompt, render
from generators.routing.frr.faults import BGP, DATA, OSPF, TYPES
from generators.routing.frr.generator import draw
from generators.routing.frr.topology import FrrTopology
from generators.routing.generator import fault_key
from pipeline.core import canonical_json
from pipeline.errors import ConfigError

DAEMONS = ("zebra", "ospfd", "bgpd")


def refusal(args: str) -> str | None:
    return vtysh.check_vtysh(shlex.split(args), DAEMONS).reason


@pytest.mark.parametrize(
    "args",
    [
        "-c 'show ip ospf neighbor'",
        "-c 'conf t' -c 'router ospf' -c 'network 10.0.1.0/24 area 0'",
        "--command='show running-config'",
        "--comm 'show bgp summary'",  # a unique prefix of --command
        "-Ec 'show ip route'",  # clustered: -E then -c with the next word
        "-dbgpd -c 'show bgp summary'",
        "-d ospfd -c 'sh ip ospf int'",
        "-c 'wr mem'",
        "-c 'write file'",
        "-n -c 'do show ip route'",
        "-c '! a comment'",
        "-c 'conf t' -c 'interface r1-eth2' -c 'no ip ospf passive'",
    ],
)
def test_vtysh_allows_what_an_operator_needs(args):
    assert refusal(args) is None


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("-f /etc/shadow", "file"),
        ("--inputfile=/etc/shadow", "file"),
        ("--inp /etc/shadow", "file"),
        ("-b", "boot"),
        ("--vty_socket /run/netgauge-frr/other/r1/vty -c 'show version'", "socket"),
        ("--vty=/tmp -c 'show version'", "socket"),
        ("--config_dir /tmp -c 'show version'", "configuration folder"),
        ("-N other -c 'show version'", "path space"),
        ("-H /tmp/h -c 'show version'", "history"),
        ("-w", "integrated"),
        ("-d ripd -c 'show version'", "ripd"),
        ("-ddummy -c 'show version'", "dummy"),
        ("show version", "no operands"),
        ("", "needs one or more -c"),
        ("-c 'conf t' -c 'log file /tmp/x.log'", "path"),
        ("-c 'conf t' -c 'log file x.log'", "log"),
        ("-c 'conf t' -c 'lo f x'", "log"),
        ("-c 'copy running-config startup-config'", "copy"),
        ("-c 'start-shell'", "start-shell"),
        ("-c 'st'", "start-shell"),
        ("-c 'do ping 10.0.1.2'", "ping"),
        ("-c 'conf t' -c 'banner motd file /etc/shadow'", "path"),
        ("-c 'conf t' -c 'banner motd line hi'", "banner"),
        ("-c 'conf t' -c 'no service integrated-vtysh-config'", "service"),
        ("-c 'conf t' -c 'password x'", "password"),
        ("-c 'conf t' -c 'hostname x'", "hostname"),
        ("-c 'write integrated'", "write memory"),
        ("-c 'conf t' -c 'router bgp 65001' -c 'dump bgp all x 10'", "dump"),
        ("-c 'e'", "enable"),
        ("-c 'frobnicate'", "not an allowed command"),
        ("-x", "invalid option"),
    ],
)
def test_vtysh_refuses_files_host_and_foreign_sockets(args, why):
    reason = refusal(args)
    assert reason is not None and why in reason, reason


def test_vtysh_limits_lines():
    many = " ".join(["-c 'show version'"] * (vtysh.MAX_LINES + 1))
    assert "at most" in refusal(many)
    assert "longer" in refusal(f"-c 'show {'x' * vtysh.MAX_LINE_CHARS}'")


def test_policy_reads_vtysh_and_still_refuses_shell_syntax():
    assert check("vtysh -c 'show ip route'").allowed
    assert check("/usr/bin/vtysh -c 'show ip route'").allowed
    assert not check("vtysh -c 'show ip route' ; cat /etc/shadow").allowed
    assert not check("vtysh -c 'show run' | grep x").allowed
    assert not check("vtysh -f /etc/shadow").allowed


def test_read_only_lines():
    assert vtysh.read_only(("show ip route", "do show run", "! x"))
    assert not vtysh.read_only(("sh run",))  # show or shutdown: settle to be safe
    assert not vtysh.read_only(("show ip route", "conf t"))


def test_forced_socket_and_jail_hold_only_the_router():
    command = vtysh.check_vtysh(["-c", "show version"], DAEMONS)
    argv = vtysh.argv("/usr/bin/vtysh", command)
    assert argv[:3] == ["/usr/bin/vtysh", "--vty_socket", vtysh.VTY_DIR]
    pytest.importorskip("pwd").getpwnam("frr") if _has_frr() else pytest.skip("no frr user")
    jail = vtysh.jail("/usr/bin/vtysh", "/run/netgauge-frr/ngrx/r2").argv(argv)
    binds = [jail[i + 1 : i + 3] for i, a in enumerate(jail) if a in ("--bind", "--ro-bind")]
    assert ["/run/netgauge-frr/ngrx/r2/vty", vtysh.VTY_DIR] in binds
    assert not any(a == "--bind" for a in jail)  # nothing writable
    assert "--unshare-user" in jail and "CAP_NET_ADMIN" not in jail


def _has_frr() -> bool:
    import pwd

    try:
        pwd.getpwnam("frr")
        return True
    except KeyError:
        return False


# -- draws ---------------------------------------------------------------------------------
def _json(drawn) -> str:
    topo, faults = drawn
    return canonical_json([topo.name, [f.to_json() for f in faults]])


@pytest.mark.parametrize("level", [4, 5])
def test_draws_are_seeded_and_shaped(level):
    cfg = RoutingConfig()
    for i in range(60):
        first = draw(cfg, level, random.Random(f"0:{level}:{i}"))
        assert _json(first) == _json(draw(cfg, level, random.Random(f"0:{level}:{i}")))
        topo, faults = first
        types = [f.type for f in faults]
        low, high = cfg.frr_sizes[level - 4]
        assert low <= topo.routers <= high
        if level == 4:
            assert len(faults) == 2 and len(set(types)) == 2 and set(types) <= set(OSPF)
        else:
            assert len(faults) == 3
            assert {t in OSPF for t in types} == {True, False}
            assert sum(t in BGP for t in types) == 1 and sum(t in DATA for t in types) == 1
        for fault in faults:
            assert fault.fix and all(m in topo.machines for m, _ in fault.fix)
            assert all(check(c).allowed for _, c in fault.fix), fault.fix


def test_faults_and_size_knobs():
    cfg = RoutingConfig(faults=["ospf_passive", "bgp_filter", "drop_traffic"], size="large")
    for i in range(20):
        topo, faults = draw(cfg, 5, random.Random(i))
        assert topo.routers == 6
        assert sorted(f.type for f in faults) == ["bgp_filter", "drop_traffic", "ospf_passive"]
    topo, faults = draw(RoutingConfig(faults=["ospf_area"]), 4, random.Random(1))
    assert [f.type for f in faults] == ["ospf_area", "ospf_area"]
    assert capacity(cfg, 5).by_operation == {
        "bgp_filter+drop_traffic+ospf_passive": capacity(cfg, 5).total
    }


def test_knob_validation_names_the_key():
    for bad, key in (
        (RoutingConfig(faults=["ospf_areas"]), "app.faults"),
        (RoutingConfig(faults=[]), "app.faults"),
        (RoutingConfig(size="huge"), "app.size"),
        (RoutingConfig(frr_sizes=[[3, 9], [4, 5]]), "app.frr_sizes"),
    ):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            validate_config(bad)


def test_free_numbers_do_not_make_new_keys():
    cfg = RoutingConfig(faults=["ospf_timers"], size="small")
    keys = {fault_key(*draw(cfg, 4, random.Random(i))) for i in range(300)}
    # 3 routers, 2 OSPF links, 4 sides, hello or dead: 8 faults, pairs of them (ordered
    # draws, sorted keys) on at most 8 x 8 combinations
    assert len(keys) <= 64


def test_capacity_by_operation_matches_labels():
    cfg = RoutingConfig()
    for level in (4, 5):
        cap = capacity(cfg, level)
        assert cap.total == sum(cap.by_operation.values()) > 0
        for i in range(30):
            _, faults = draw(cfg, level, random.Random(i))
            assert "+".join(sorted(f.type for f in faults)) in cap.by_operation


def test_topology_configs_and_names():
    topo = FrrTopology(5, 5, 2)
    assert FrrTopology.from_name(topo.name) == topo
    topo.lab().validate()
    r2 = topo.configs(2)
    assert "router bgp 65001" in r2["bgpd"] and "neighbor 10.100.2.2 remote-as 65002" in r2["bgpd"]
    assert "redistribute bgp" in r2["ospfd"] and "router bgp" not in r2["ospfd"]
    assert "10.100.2.0/30" not in r2["ospfd"]  # the eBGP link stays out of OSPF
    assert "router" not in r2["zebra"]
    assert set(FrrTopology(4, 3).configs(1)) == {"zebra", "ospfd"}
    assert set(TYPES) == set(OSPF) | set(BGP) | set(DATA)


def test_level5_observation_hides_the_failing_pairs():
    from emulators.base import Reachability
    from generators.routing.checks import Connectivity

    devices = ("h1", "h2", "h3")
    now = Connectivity({"icmp": Reachability(devices, frozenset({("h1", "h2"), ("h2", "h1")}))})
    blind = render(now, blind=True)
    assert "2 of 6" in blind and "h1" not in blind and "h3" not in blind
    assert "h3" in render(now, blind=False)
    prompt = build_prompt(FrrTopology(5, 4, 2), 10, ("icmp", "tcp"))
    assert "not which ones" in prompt and "vtysh" in prompt


def test_weights_steer_draws_by_operation_label():
    from generators.routing.app import RoutingApp
    from generators.routing.generator import draw as draw_l123
    from pipeline.focus import generate_kwargs

    cfg = RoutingConfig()
    cases = {
        1: "remove_ip",
        3: "disable_interface+drop_traffic",
        4: "ospf_network+ospf_passive",
        5: "bgp_network+drop_traffic+ospf_timers",
    }
    for level, label in cases.items():
        weights = {label: 1000.0}
        pick = draw_l123 if level <= 3 else draw
        labels = [
            "+".join(sorted(f.type for f in pick(cfg, level, random.Random(i), weights)[1]))
            for i in range(60)
        ]
        assert labels.count(label) >= 55, (level, labels)
    app = RoutingApp(cfg)
    assert generate_kwargs(app, {"weights": {"x": 1.0}}) == {"weights": {"x": 1.0}}


def test_bgp_peers_read_from_concatenated_vtysh_json():
    """The settle loop retries idle sessions and waits for their attempt: it must read
    every peer from vtysh's back-to-back JSON replies, and tell idle from shut down."""
    ospf = '{"neighbors": {"1.1.1.2": [{"nbrState": "Full/DR"}]}}'
    bgp = {
        "ipv4Unicast": {
            "peers": {
                "10.100.2.1": {"state": "Idle", "peerState": "OK", "msgSent": 12},
                "10.100.2.5": {"state": "Idle", "peerState": "Admin", "msgSent": 3},
                "10.100.2.9": {"state": "Established", "peerState": "OK", "msgSent": 40},
            }
        }
    }
    peers = _bgp_peers("r3", f"{ospf}\n{json.dumps(bgp, indent=2)}\n")
    assert set(peers) == {("r3", "10.100.2.1"), ("r3", "10.100.2.5"), ("r3", "10.100.2.9")}
    assert [a for (_, a), p in peers.items() if p.idle] == ["10.100.2.1"]
    assert peers[("r3", "10.100.2.9")].sent == 40
    assert _bgp_peers("r3", "% Unknown command\n{not json") == {}
