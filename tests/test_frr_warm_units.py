"""The pure parts of warm FRR labs: configuration differences, routes read over netlink,
the timer-refresh proof of a quiet routing state, validation ahead (same queries), and the
pool's two ways of resetting a reused lab (by difference, or the cold restart)."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time

import pytest

from emulators import routes
from generators.lab.frr import confdiff, daemons
from generators.lab.frr.pool import WarmPool
from generators.lab.frr.reading import BgpPeer, OspfNeighbour, Reading
from generators.routing.config import RoutingConfig
from generators.routing.frr.ahead import Ahead
from generators.routing.frr.topology import FrrTopology
from pipeline.errors import ConfigError, EnvironmentFailure
from tests.conftest import require, require_root


def test_confdiff_reads_contexts_and_undoes_lines():
    healthy = (
        "frr version 8.4.4\n!\nrouter bgp 65001\n neighbor 10.0.0.2 remote-as 65002\n"
        " neighbor 10.0.0.2 timers connect 1\n !\n address-family ipv4 unicast\n"
        "  network 10.0.1.0/24\n exit-address-family\nexit\n!\n"
    )
    changed = (
        "frr version 8.4.4\n!\nip prefix-list PL seq 5 deny 10.0.1.0/24\n!\n"
        "route-map RM deny 10\n match ip address prefix-list PL\nexit\n!\n"
        "router bgp 65001\n no bgp ebgp-requires-policy\n neighbor 10.0.0.9 remote-as 65002\n"
        " !\n address-family ipv4 unicast\n  network 10.0.1.0/24\n  network 10.9.0.0/16\n"
        " exit-address-family\nexit\n!\ninterface r1-eth1\n ip ospf cost 7\nexit\n"
    )
    assert confdiff.same(healthy, healthy.replace("!\n", "! a comment\n"))
    assert not confdiff.same(healthy, changed)
    assert confdiff.diff(changed, healthy) == [
        "no route-map RM deny 10",
        "router bgp 65001",
        "bgp ebgp-requires-policy",  # a negated line is undone by dropping its `no`
        "no neighbor 10.0.0.9 remote-as 65002",
        "address-family ipv4 unicast",
        "no network 10.9.0.0/16",
        "exit-address-family",
        "exit",
        "interface r1-eth1",  # not every daemon has `no interface`: line by line
        "no ip ospf cost 7",
        "exit",
        "no ip prefix-list PL seq 5 deny 10.0.1.0/24",
        "router bgp 65001",
        "neighbor 10.0.0.2 remote-as 65002",  # before the neighbour's other lines
        "neighbor 10.0.0.2 timers connect 1",
        "exit",
    ]
    assert confdiff.diff(healthy, healthy) == []


def _nlmsg(kind: int, body: bytes) -> bytes:
    return struct.pack("=IHHII", 16 + len(body), kind, 2, 1, 0) + body


def _attr(kind: int, data: bytes) -> bytes:
    raw = struct.pack("=HH", 4 + len(data), kind) + data
    return raw + b"\0" * (-len(raw) % 4)


def _route(dst: str, plen: int, proto: int, attrs: bytes, flags: int = 0) -> bytes:
    rtmsg = struct.pack("=BBBBBBBBI", socket.AF_INET, plen, 0, 0, 254, proto, 0, 1, flags)
    return _nlmsg(routes.RTM_NEWROUTE, rtmsg + _attr(routes.RTA_DST, socket.inet_aton(dst)) + attrs)


def test_routes_read_over_netlink_compare_by_what_forwards():
    ip = socket.inet_aton
    attrs = (
        _attr(routes.RTA_GATEWAY, ip("10.100.1.2"))
        + _attr(routes.RTA_OIF, struct.pack("=I", 3))
        + _attr(30, struct.pack("=I", 41))  # RTA_NH_ID: zebra's nexthop object
        + _attr(routes.RTA_PRIORITY, struct.pack("=I", 20))
    )
    one = _route("10.0.2.0", 24, 188, attrs, flags=routes.RTNH_F_LINKDOWN)
    hops = b"".join(
        struct.pack("=HBBi", 8 + 8, 0, 0, index) + _attr(routes.RTA_GATEWAY, ip(gateway))
        for gateway, index in (("10.100.2.2", 4), ("10.100.1.2", 3))
    )
    two = _route("10.0.3.0", 24, 186, _attr(routes.RTA_MULTIPATH, hops))
    got, done = routes.parse_routes(one + two + _nlmsg(routes.NLMSG_DONE, b"\0" * 4))
    assert done
    assert got == [
        ("10.0.2.0/24", 1, 188, 0, 20, "", (("10.100.1.2", 3, 0),)),  # no nhid, no linkdown
        ("10.0.3.0/24", 1, 186, 0, 0, "", (("10.100.1.2", 3, 0), ("10.100.2.2", 4, 0))),
    ]
    error = _nlmsg(routes.NLMSG_ERROR, struct.pack("=i", -1) + b"\0" * 16)
    try:
        routes.parse_routes(error)
    except OSError as err:
        assert err.errno == 1
    else:
        raise AssertionError("an NLMSG_ERROR must raise")


def _reading(taken: float, due_ms: int, received: int, state: str = "Full") -> Reading:
    ospf = {("r1", "r1-eth2", "0.0.0.2"): OspfNeighbour(state, due_ms, 1000)}
    peers = {("r2", "10.100.2.2"): BgpPeer("Established", "OK", 10, received)}
    return Reading(taken, {}, ospf, peers)


def test_a_quiet_state_counts_timers_refreshed_only_after_its_change():
    change = 100.0
    # The dead timer fires 900 ms after a read at 100.2: restarted at 100.1, after the change.
    fresh = _reading(100.2, 900, 12)
    assert fresh.ospf_refreshed(change) == {("r1", "r1-eth2", "0.0.0.2")}
    # Due in 600 ms: last restarted at 99.8, before the change; a slow answer only makes
    # the restart look earlier (the read's time is taken before the request is sent).
    stale = _reading(100.2, 600, 12)
    assert stale.ospf_refreshed(change) == set()
    # BGP: a message counted after the baseline reading (taken after the change) refreshes.
    baseline = _reading(100.3, 900, 12)
    assert _reading(100.9, 900, 12).unrefreshed(baseline, change) == ["bgp ('r2', '10.100.2.2')"]
    assert _reading(101.3, 900, 13).unrefreshed(baseline, change) == []
    assert _reading(101.3, 900, 13).unrefreshed(None, change) == ["bgp ('r2', '10.100.2.2')"]
    assert stale.unrefreshed(baseline, change)[0].startswith("ospf")
    # Only Full adjacencies and Established sessions hold timers that can break them.
    assert _reading(100.2, 0, 0, state="Init").ospf_refreshed(change) == set()
    assert _reading(100.2, 0, 0, state="Init").moving


def test_validating_ahead_gives_the_same_outcomes_in_any_order():
    topo = FrrTopology(4, 3)
    calls: list[str] = []
    lock = threading.Lock()
    failed_once: set[str] = set()

    def validate(t, faults):
        name = faults[0]
        time.sleep(0.01 * (len(name) % 3))
        with lock:
            calls.append(name)
            if name == "flaky" and name not in failed_once:
                failed_once.add(name)
                raise EnvironmentFailure("a lab failed")
        return f"outcome of {name}"

    class F:  # a fault as far as draw_id needs
        def __init__(self, name):
            self.name = name

        def to_json(self):
            return {"n": self.name}

    names = ["a", "bb", "flaky", "ccc", "d"]
    with Ahead(lambda t, f: validate(t, [x.name for x in f]), workers=3) as ahead:
        outcomes = []
        for i, name in enumerate(names):
            ahead.schedule([(topo, [F(n)]) for n in names[i : i + 3]])
            outcomes.append(ahead.result(topo, [F(name)]))
    assert outcomes == [f"outcome of {n}" for n in names]
    assert calls.count("flaky") == 2  # the worker's failure was validated again, when asked
    assert ahead.used >= 3
    with Ahead(lambda t, f: validate(t, [x.name for x in f]), workers=1) as alone:
        alone.schedule([(topo, [F("e")])])  # one worker: nothing runs ahead
        assert alone.result(topo, [F("e")]) == "outcome of e" and alone.used == 0


class _Lab:
    """A stand-in WarmLab (our own boundary): records which reset a lease asked for."""

    def __init__(self, spec: FrrTopology) -> None:
        self.spec, self.used, self.calls = spec, False, []

    def __enter__(self) -> _Lab:
        self.calls.append("build")
        return self

    def restore(self) -> float:
        self.calls.append("restore")
        return 0.0

    def restart(self) -> None:
        self.calls.append("restart")

    def close(self) -> None:
        self.calls.append("close")


@pytest.mark.parametrize(("mode", "reset"), [("diff", "restore"), ("restart", "restart")])
def test_a_reused_lab_is_reset_the_way_its_pool_says(mode, reset):
    topo = FrrTopology(4, 3)
    with WarmPool(_Lab, f"units:{mode}", restore=mode) as pool:
        with pool.use(topo) as first:
            pass
        with pool.use(topo) as again:
            assert again is first
    assert first.calls == ["build", reset, "close"]
    assert pool.builds == 1


def test_a_wrong_restore_mode_fails_before_any_lab():
    with pytest.raises(ValueError, match="'diff' or 'restart'"):
        WarmPool(_Lab, "units", restore="cold")
    cfg = RoutingConfig(frr_restore="cold")
    with pytest.raises(ConfigError, match=r"app\.frr_restore must be one of \['diff', 'restart'\]"):
        cfg.validate()


@pytest.mark.integration
def test_rewritten_router_folders_are_the_same_folders_emptied():
    """A restore rewrites every router's folders (no stale socket, pid file or `write
    memory` leftover) in the folders the lab's vtysh jail holds: never made anew, so the
    jail does not restart after each restore (emulators/zygote/client.py)."""
    require_root("the router folders are chowned to frr")
    require(daemons.installed() is None, daemons.installed() or "")
    group = daemons.RouterDaemons(f"units{os.getpid()}", ["r1"], ["zebra"], lambda r: "")
    try:
        group.write_configs({"r1": {"zebra": "hostname r1\n"}})
        root = group.root("r1")
        before = {p: os.stat(root / p).st_ino for p in ("", "etc", "run", "vty")}
        for stale in ("vty/zebra.vty", "run/zebra.pid", "etc/zebra.conf.sav", "zebra.out"):
            (root / stale).write_text("stale")
        (root / "run" / "dump").mkdir()
        group.write_configs({"r1": {"zebra": "hostname r1\n!\n"}})
        assert {p: os.stat(root / p).st_ino for p in before} == before
        assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == [
            "etc",
            "etc/zebra.conf",
            "run",
            "vty",
            "vtysh.conf",
        ]
        assert (root / "etc" / "zebra.conf").read_text() == "hostname r1\n!\n"
        assert (root / "vty").stat().st_gid == daemons.frr_ids()[2]
    finally:
        group.remove()
