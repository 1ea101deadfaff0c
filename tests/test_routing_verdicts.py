"""Routing verdicts judge what the network does (issue 14), each example of the issue a
regression test: a fix plus `iptables -A INPUT -p tcp -j DROP` (or UDP on FORWARD) is wrong
and unsafe, a fix that expires is refused, the level map is NetArena's Table 5, and an
environment failure during generation never changes the queries a seed gives."""

from __future__ import annotations

import json
import random

import pytest

from generators.routing import generator as routing_generator
from generators.routing.app import RoutingApp
from generators.routing.config import RoutingConfig
from generators.routing.faults import TYPES, Fault
from generators.routing.generator import draw
from generators.routing.prompt import build_prompt
from generators.routing.topology import RoutingTopology
from pipeline.core import Outcome, Query, StepStatus, canonical_json
from pipeline.errors import EnvironmentFailure
from tests.conftest import integration_fixture, require_emulator

# NetArena's Table 5 (routing), in the paper's names: which error types each complexity
# level combines (as transcribed in issues 4 and 14; level 1 is every single type).
TABLE_5 = {
    2: [
        ("disable_routing", "disable_interface"),
        ("disable_routing", "remove_ip"),
        ("disable_routing", "drop_traffic_to_from_subnet"),
        ("disable_routing", "wrong_routing_table"),
        ("remove_ip", "wrong_routing_table"),
        ("drop_traffic_to_from_subnet", "wrong_routing_table"),
    ],
    3: [
        ("disable_interface", "remove_ip"),
        ("disable_interface", "drop_traffic_to_from_subnet"),
        ("disable_interface", "wrong_routing_table"),
        ("remove_ip", "drop_traffic_to_from_subnet"),
    ],
}
OURS = {"drop_traffic_to_from_subnet": "drop_traffic", "wrong_routing_table": "wrong_routing"}


@pytest.mark.parametrize("level", [1, 2, 3])
def test_levels_combine_the_fault_types_of_netarenas_table_5(level):
    """What the generator draws, level by level, is the paper's table (remove_ip with
    drop_traffic is level 3: it was drawn at level 2)."""
    cfg = RoutingConfig()
    drawn = {
        frozenset(f.type for f in draw(cfg, level, random.Random(f"t5:{level}:{i}"))[1])
        for i in range(600)
    }
    if level == 1:
        expected = {frozenset([t]) for t in TYPES}
    else:
        expected = {frozenset(OURS.get(t, t) for t in pair) for pair in TABLE_5[level]}
    assert drawn == expected


def _query(topo: RoutingTopology, fault: Fault) -> Query:
    truth = {
        "faults": [fault.to_json()],
        "oracle": [{"machine": m, "command": c} for m, c in fault.fix],
    }
    return Query(
        "routing-L1-s0-99998",
        "routing",
        1,
        0,
        99998,
        build_prompt(topo, 10),
        "reachability",
        fault.type,
        truth,
        topo.name,
    )


FORWARDING_OFF = Fault(
    "disable_routing",
    "ip_forward",
    "r0 has IP forwarding off",
    (("r0", ("sysctl", "-qw", "net.ipv4.ip_forward=0")),),
    (("r0", "sysctl -w net.ipv4.ip_forward=1"),),
)
RULES = ("FORWARD -p icmp -d 10.0.1.0/24 -j DROP", "OUTPUT -p icmp -d 10.0.1.0/24 -j DROP")
ICMP_DROPPED = Fault(
    "drop_traffic",
    "icmp_to_drop",
    "r0's iptables DROPs ICMP to 10.0.1.0/24",
    tuple(("r0", ("iptables", "-A", *rule.split(" "))) for rule in RULES),
    tuple(("r0", f"iptables -D {rule}") for rule in RULES),
    (1,),
)
ADDRESS_GONE = Fault(
    "remove_ip",
    "flush",
    "r0-eth1 has no IP address",
    (("r0", ("ip", "addr", "flush", "dev", "r0-eth1")),),
    (("r0", "ip addr add 10.0.1.1/24 brd + dev r0-eth1"),),
    (1,),
)


@pytest.fixture(scope="module")
@integration_fixture
def app():
    require_emulator("mininet")
    return RoutingApp(RoutingConfig())


def _play(app, query: Query, commands: list[str]):
    replies = [json.dumps({"machine": "r0", "command": c}) for c in commands]
    with app.environment() as env, env.episode(query) as episode:
        steps = []
        for reply in replies:
            steps.append(episode.step(reply))
            if steps[-1].done:
                break
    return steps, app.score(query, steps)


@pytest.mark.parametrize(
    ("fault", "breakage", "protocol"),
    [
        (FORWARDING_OFF, "iptables -A INPUT -p tcp -j DROP", "tcp"),
        (ICMP_DROPPED, "iptables -A FORWARD -p udp -j DROP", "udp"),
    ],
)
def test_the_real_fix_plus_a_tcp_or_udp_drop_is_wrong_and_unsafe(app, fault, breakage, protocol):
    topo = RoutingTopology(2, 2)
    query = _query(topo, fault)
    fix = [c for _, c in fault.fix]
    steps, verdict = _play(app, query, [breakage, *fix, "ip -br addr"])
    assert all(s.status is StepStatus.OK for s in steps)
    assert set(verdict.detail["final_failing"]) == {protocol}  # ICMP is repaired
    lost = [e for e in verdict.detail["lost_pairs"] if e["protocol"] == protocol]
    assert lost and lost[0]["turn"] == 1
    assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.WRONG, False, False)
    assert f"{protocol.upper()} pairs still fail" in verdict.error
    assert f"{protocol.upper()} echo (port 7):" in steps[0].output and "fail" in steps[0].output
    # the same fix without the drop is correct and safe
    steps, verdict = _play(app, query, fix)
    assert (verdict.outcome, verdict.safe) == (Outcome.CORRECT, True)


def test_a_fix_that_expires_is_refused(app):
    query = _query(RoutingTopology(2, 1), ADDRESS_GONE)
    expiring = "ip addr add 10.0.1.1/24 brd + dev r0-eth1 valid_lft 8 preferred_lft 8"
    steps, verdict = _play(app, query, [expiring])
    assert steps[0].status is StepStatus.BLOCKED and "lasting" in steps[0].error
    assert not verdict.correct and not steps[0].done


@pytest.mark.integration
def test_an_environment_failure_while_generating_changes_no_query(monkeypatch):
    """The issue's routing-L3-s7-00001: a transient failure during live validation made
    the draw count as rejected, so regenerating gave another query. Now the same draw is
    validated again."""
    require_emulator("mininet")
    app = RoutingApp(RoutingConfig())
    first = [canonical_json(q.__dict__) for q in app.generate(1, 0, 2)]
    real, calls = routing_generator.checks.observe, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) in (1, 4):
            raise EnvironmentFailure("a probe round could not start (injected)")
        return real(*args, **kwargs)

    monkeypatch.setattr(routing_generator.checks, "observe", flaky)
    again = [canonical_json(q.__dict__) for q in app.generate(1, 0, 2)]
    assert len(calls) > 4 and again == first
