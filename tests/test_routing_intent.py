"""Routing levels 4-5 are judged on the protocol state of the intended network too (issue
26): pure tests of generators/routing/frr/intent.py and of the verdict that reads it.

`healthy(topo)` builds what FRR and `ip -j route` show on a converged lab of `topo`, in
their JSON shapes (as recorded on FRR 8.4 labs); each test breaks one part of it the way a
repair by static routes, a spoofed route or a wrong session would, and checks the gaps.
The live half (the issue's static-route repairs played through episodes) is in
tests/test_routing_frr_live.py.
"""

from __future__ import annotations

import json

import pytest

from emulators.base import Reachability
from generators.routing.checks import Connectivity, Gap
from generators.routing.frr.episode import build_prompt, render
from generators.routing.frr.intent import (
    Intent,
    RouterReading,
    gaps,
    json_documents,
    route_key,
    summary,
)
from generators.routing.frr.topology import FrrTopology
from generators.routing.scoring import score
from pipeline.core import Outcome, Query, StepResult, StepStatus


def _hop(topo: FrrTopology, i: int, towards: int) -> tuple[str, str]:
    """(next-hop address, interface) of router i towards router `towards`."""
    if towards > i:
        return topo.link_addr(i, 2), topo.right(i)
    return topo.link_addr(i - 1, 1), topo.left(i)


def _owner(topo: FrrTopology, prefix: str) -> int:
    """The router a LAN belongs to, or the far end of a link, as seen for next hops."""
    third = int(prefix.split(".")[2])
    return third if prefix.startswith("10.0.") else third + 1


def healthy(topo: FrrTopology):
    """(routers' readings, every device's kernel routes, the baseline) of a converged lab."""
    intent = Intent.of(topo)
    readings, kernel, baseline = {}, {}, {}
    for i in topo.rs:
        r = topo.router(i)
        connected = [topo.lan(i)] + [topo.link(k) for k in (i - 1, i) if 1 <= k < topo.routers]
        base = [
            {"dst": p, "dev": "x", "protocol": "kernel", "scope": "link", "flags": []}
            for p in connected
        ] + [{"type": "local", "dst": "127.0.0.1", "table": "local", "flags": []}]
        rib = {
            p: [{"protocol": "connected", "selected": True, "installed": True,
                 "nexthops": [{"fib": True, "directlyConnected": True}]}]
            for p in connected
        }  # fmt: skip
        frr = []
        for prefix, protocol in intent.learned[r].items():
            owner = _owner(topo, prefix)
            via, dev = _hop(topo, i, owner)
            rib[prefix] = [{"protocol": protocol, "selected": True, "installed": True,
                            "nexthops": [{"fib": True, "ip": via}]}]  # fmt: skip
            frr.append({"dst": prefix, "nhid": 9, "gateway": via, "dev": dev,
                        "protocol": protocol, "metric": 20, "flags": []})  # fmt: skip
        neighbours = tuple(
            {"nbrState": "Full/-", "ifaceName": a.interface, "ifaceAddress": a.address,
             "areaId": "0.0.0.0"}
            for a in intent.adjacencies if a.router == r
        )  # fmt: skip
        bgp = None
        for s in intent.sessions:
            if s.router == r:
                peer = {"state": "Established", "remoteAs": s.remote_as, "peerState": "OK"}
                bgp = {"as": s.local_as, "peers": {s.peer: peer}}
        readings[r] = RouterReading(neighbours, bgp, rib)
        kernel[r] = base + frr
        baseline[r] = {route_key(x) for x in base}
    for i in topo.rs:
        h = topo.host(i)
        kernel[h] = [{"dst": "default", "gateway": f"10.0.{i}.1", "dev": f"{h}-eth0", "flags": []}]
        baseline[h] = {route_key(kernel[h][0])}
    return readings, kernel, baseline


def kinds(found: tuple[Gap, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for gap in found:
        out[gap.kind] = out.get(gap.kind, 0) + 1
    return out


L4, L5 = FrrTopology(4, 3), FrrTopology(5, 4, 2)


@pytest.mark.parametrize("topo", [L4, L5, FrrTopology(4, 6), FrrTopology(5, 6, 3)])
def test_the_intended_state_follows_the_topology_and_the_healthy_lab_has_it(topo):
    intent = Intent.of(topo)
    assert len(intent.adjacencies) == 2 * len(topo.ospf_links)
    assert len(intent.sessions) == (2 if topo.level == 5 else 0)
    assert gaps(intent, *healthy(topo)) == ()


def test_learned_protocols_at_level_5_are_bgp_at_the_borders_and_ospf_behind_them():
    learned = Intent.of(L5).learned  # AS 65001 = r1, r2; AS 65002 = r3, r4; eBGP over t2
    assert learned["r2"] == {"10.0.1.0/24": "ospf", "10.0.3.0/24": "bgp", "10.0.4.0/24": "bgp"}
    assert learned["r1"] == {"10.0.2.0/24": "ospf", "10.0.3.0/24": "ospf", "10.0.4.0/24": "ospf"}
    assert learned["r4"] == {"10.0.1.0/24": "ospf", "10.0.2.0/24": "ospf", "10.0.3.0/24": "ospf"}
    assert "10.100.2.0/30" not in learned["r1"]  # the border link is in no protocol
    assert Intent.of(L4).learned["r1"] == {
        "10.0.2.0/24": "ospf", "10.0.3.0/24": "ospf", "10.100.2.0/30": "ospf"
    }  # fmt: skip


def _static(readings, kernel, router: str, prefix: str, via: str, **extra) -> None:
    """`ip route add <prefix> via <via>` on `router`: zebra sees it as a kernel route and
    takes the route it had installed for the prefix out of the kernel."""
    kernel[router][:] = [r for r in kernel[router] if r.get("nhid") is None or r["dst"] != prefix]
    kernel[router].append({"dst": prefix, "gateway": via, "dev": "x", "flags": [], **extra})
    if "table" not in extra:
        entry = {"protocol": "kernel", "selected": True, "installed": True,
                 "nexthops": [{"fib": True, "ip": via}]}  # fmt: skip
        rib = readings[router].rib
        for other in rib.get(prefix, []):
            other["selected"] = other["installed"] = False
        rib.setdefault(prefix, []).insert(0, entry)


def test_static_routes_over_an_area_mismatch_leave_gaps():
    """The issue's L4 repair: link 1 left in two areas, every LAN reached by static routes."""
    readings, kernel, baseline = healthy(L4)
    for r, address in (("r1", "10.100.1.2"), ("r2", "10.100.1.1")):  # the adjacency is down
        readings[r] = RouterReading(
            tuple(n for n in readings[r].neighbours if n["ifaceAddress"] != address),
            None,
            readings[r].rib,
        )
    readings["r1"].rib.pop("10.100.2.0/30")  # OSPF lost it and nobody added it back
    kernel["r1"] = [r for r in kernel["r1"] if r["dst"] != "10.100.2.0/30"]
    for r, prefix, via in (
        ("r1", "10.0.2.0/24", "10.100.1.2"), ("r1", "10.0.3.0/24", "10.100.1.2"),
        ("r2", "10.0.1.0/24", "10.100.1.1"), ("r3", "10.0.1.0/24", "10.100.2.1"),
        ("r3", "10.100.1.0/30", "10.100.2.1"),
    ):  # fmt: skip
        _static(readings, kernel, r, prefix, via)
    found = gaps(Intent.of(L4), readings, kernel, baseline)
    assert kinds(found) == {"ospf": 2, "learned": 6, "kernel": 5}
    assert "r1 has no Full adjacency in area 0.0.0.0 with r2 (10.100.1.2) on r1-eth2" in [
        g.what for g in found
    ]
    assert summary(found).startswith("2 OSPF adjacencies not Full; 6 routes not learned")


@pytest.mark.parametrize(
    ("spoof", "expected"),
    [
        ({"protocol": "ospf", "metric": 5}, {"kernel": 1}),  # a second route, proto ospf
        ({"table": "100"}, {"kernel": 1}),  # policy routing's table: not FRR's
        ({"type": "blackhole"}, {"kernel": 1}),
    ],
)
def test_spoofed_and_other_table_routes_are_gaps(spoof, expected):
    readings, kernel, baseline = healthy(L4)
    route = {"dst": "10.0.3.0/24", "dev": "x", "flags": [], **spoof}
    if spoof.get("type") != "blackhole":
        route["gateway"] = "10.100.1.2"
    kernel["r1"].append(route)
    assert kinds(gaps(Intent.of(L4), readings, kernel, baseline)) == expected


def test_a_route_claiming_ospf_that_zebra_did_not_install_is_a_gap():
    readings, kernel, baseline = healthy(L4)
    readings["r1"].rib.pop("10.0.3.0/24")  # OSPF does not carry it (a fault)
    route = next(r for r in kernel["r1"] if r["dst"] == "10.0.3.0/24")
    route.pop("nhid")  # `ip route replace 10.0.3.0/24 via 10.100.1.2 proto ospf metric 20`
    assert kinds(gaps(Intent.of(L4), readings, kernel, baseline)) == {"learned": 1, "kernel": 1}


def test_more_routes_learned_by_a_protocol_are_no_gap():
    """`redistribute connected` on r2 at level 5 puts the border link into OSPF: more than
    the intended network carries, by a protocol, so not a gap."""
    readings, kernel, baseline = healthy(L5)
    entry = {"protocol": "ospf", "selected": True, "installed": True,
             "nexthops": [{"fib": True, "ip": "10.100.1.2"}]}  # fmt: skip
    readings["r1"].rib["10.100.2.0/30"] = [entry]
    kernel["r1"].append({"dst": "10.100.2.0/30", "gateway": "10.100.1.2", "dev": "r1-eth2",
                         "protocol": "ospf", "metric": 20, "flags": []})  # fmt: skip
    assert gaps(Intent.of(L5), readings, kernel, baseline) == ()


@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"state": "Idle"}, "no Established session"),
        ({"remoteAs": 65020}, "no Established session"),
    ],
)
def test_a_bgp_session_down_or_with_the_wrong_as_is_a_gap(change, what):
    readings, kernel, baseline = healthy(L5)
    readings["r3"].bgp["peers"]["10.100.2.1"].update(change)
    found = gaps(Intent.of(L5), readings, kernel, baseline)
    assert [g.kind for g in found] == ["bgp"] and what in found[0].what


def test_an_adjacency_in_another_area_or_missing_routes_are_gaps():
    readings, kernel, baseline = healthy(L4)
    readings["r2"].neighbours[0]["areaId"] = "0.0.0.1"  # both sides moved to area 1
    kernel["h2"].clear()  # the host lost its default route
    assert kinds(gaps(Intent.of(L4), readings, kernel, baseline)) == {"ospf": 1, "missing": 1}


def test_vtysh_replies_are_found_by_shape_with_text_between_them():
    text = (
        '{"neighbors": {"0.0.0.2": [{"nbrState": "Full/-", "ifaceName": "r1-eth2"}]}}\n'
        "% BGP instance not found\n"
        + json.dumps({"10.0.1.0/24": [{"protocol": "connected"}]}, indent=2)
        + '\n{"ipv4Unicast": {"as": 65001, "peers": {}}}\n'
    )
    reading = RouterReading.parse(text)
    assert reading.neighbours[0]["ifaceName"] == "r1-eth2"
    assert reading.bgp == {"as": 65001, "peers": {}}
    assert list(reading.rib) == ["10.0.1.0/24"]
    assert json_documents("{ broken {} ") == [{}]


def _step(full: bool, intent: list | None) -> StepResult:
    devices = ["h1", "h2"]
    ok = Reachability(tuple(devices), frozenset({("h1", "h2"), ("h2", "h1")}))
    half = Reachability(tuple(devices), frozenset({("h1", "h2")}))
    evidence = {"devices": devices, "before": half.rows(), "after": (ok if full else half).rows()}
    if intent is not None:
        evidence["intent"] = intent
    return StepResult("r1: x", StepStatus.OK, "", evidence, done=False)


QUERY = Query("routing-L4-s0-00000", "routing", 4, 0, 0, "", "reachability", "x", {"faults": []})


def test_traffic_without_the_intended_protocol_state_is_wrong():
    static = [Gap("ospf", "r1 has no Full adjacency ...").to_json(),
              Gap("kernel", "r1 has a kernel route ...").to_json()]  # fmt: skip
    verdict = score(QUERY, [_step(True, static)])
    assert verdict.outcome is Outcome.WRONG and verdict.safe and not verdict.correct
    assert "1 OSPF adjacency not Full; 1 kernel route" in verdict.error
    assert verdict.detail["final_loss"] == 0 and verdict.detail["intent_gaps"] == 2
    assert score(QUERY, [_step(True, [])]).outcome is Outcome.CORRECT
    assert score(QUERY, [_step(True, None)]).outcome is Outcome.CORRECT  # levels 1-3
    assert "pairs still fail" in score(QUERY, [_step(False, [])]).error


def test_the_observation_counts_the_gaps_once_traffic_works():
    devices = ("h1", "h2")
    ok = {"icmp": Reachability(devices, frozenset({("h1", "h2"), ("h2", "h1")}))}
    now = Connectivity(ok, (Gap("ospf", "r1 has no ..."), Gap("kernel", "r1 ...")))
    for blind in (True, False):
        shown = render(now, blind)
        assert "not as the routing protocols of the network described should carry it" in shown
        assert "1 OSPF adjacency not Full" in shown and "r1" not in shown
    assert "routing protocols" not in render(Connectivity(ok, ()), blind=False)
    assert not now.repaired and Connectivity(ok, ()).repaired and Connectivity(ok).repaired


def test_prompts_say_the_routing_state_is_checked_and_level_4_names_no_as():
    l4 = build_prompt(L4, 10, ("icmp",))
    assert "AS 6500" not in l4 and "no static route added" in l4
    assert "r1 (AS 65001)" in build_prompt(L5, 10, ("icmp",))
