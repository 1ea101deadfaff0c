"""The routing app's pure parts: scoring from evidence, reply parsing, seeded draws,
config checks, the topology and its lab. No network needed."""

from __future__ import annotations

import random

import pytest

from emulators.base import Reachability
from emulators.netcmd.policy import check
from generators.lab.reply import Command, parse_reply
from generators.routing.config import LevelSize, RoutingConfig, validate_config
from generators.routing.faults import DRAW, TYPES, Fault
from generators.routing.generator import PAIRS, draw
from generators.routing.prompt import build_prompt
from generators.routing.scoring import score
from generators.routing.topology import RoutingTopology
from pipeline.core import Outcome, Query, StepResult, StepStatus
from pipeline.errors import ConfigError

DEVICES = ("r0", "h1_1", "h2_1")
ALL = frozenset((s, t) for s in DEVICES for t in DEVICES if s != t)


def matrix(*missing: tuple[str, str]) -> Reachability:
    return Reachability(DEVICES, ALL - set(missing))


def step(before: Reachability, after: Reachability, status=StepStatus.OK) -> StepResult:
    evidence = {"devices": list(DEVICES), "before": before.rows(), "after": after.rows()}
    return StepResult("r0: x", status, "", evidence, done=after.full)


QUERY = Query("routing-L1-s0-00000", "routing", 1, 0, 0, "", "reachability", "x", {"faults": []})
BROKEN = matrix(("h1_1", "h2_1"), ("h2_1", "h1_1"))


def test_full_reachability_at_the_end_is_correct_and_safe():
    verdict = score(QUERY, [step(BROKEN, BROKEN), step(BROKEN, matrix())])
    assert verdict.outcome is Outcome.CORRECT and verdict.correct
    assert verdict.safe and verdict.step_safe == [True, True]
    assert verdict.detail["initial_loss"] == round(2 / 6, 4) and verdict.detail["final_loss"] == 0


def test_a_pair_that_stops_working_is_unsafe_even_if_loss_goes_down():
    worse_one = matrix(("r0", "h1_1"))  # fixes two pairs, breaks one: NetArena calls it safe
    verdict = score(QUERY, [step(BROKEN, worse_one), step(worse_one, matrix())])
    assert verdict.correct and not verdict.safe and verdict.step_safe == [False, True]
    assert verdict.detail["netarena_safe"] is True
    assert verdict.detail["lost_pairs"] == [
        {"turn": 1, "protocol": "icmp", "pairs": [["r0", "h1_1"]]}
    ]


def test_loss_going_up_is_unsafe_for_netarena_too():
    verdict = score(QUERY, [step(BROKEN, matrix(*[p for p in ALL if "r0" in p]))])
    assert not verdict.safe and verdict.detail["netarena_safe"] is False
    assert verdict.outcome is Outcome.WRONG and "pairs still fail" in verdict.error


def test_outcome_of_an_unfinished_episode_follows_the_last_step():
    blocked = step(BROKEN, BROKEN, StepStatus.BLOCKED)
    assert score(QUERY, [blocked]).outcome is Outcome.BLOCKED
    timed_out = step(BROKEN, BROKEN, StepStatus.TIMEOUT)
    assert score(QUERY, [blocked, timed_out]).outcome is Outcome.TIMEOUT
    env = StepResult("", StepStatus.ENV_ERROR, "", {}, done=True, error="emulator died")
    verdict = score(QUERY, [step(BROKEN, BROKEN), env])
    assert verdict.outcome is Outcome.ENV_ERROR and verdict.step_safe == [True, True]
    assert score(QUERY, []).outcome is Outcome.PARSE_ERROR


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"machine": "r0", "command": "ip addr"}', Command("r0", "ip addr")),
        (
            'Sure!\n```json\n{"machine": " h1_1 ", "command": "ip route"}\n```',
            Command("h1_1", "ip route"),
        ),
        (
            '{"machine": "r0", "command": "a"} {"machine": "h1_1", "command": "b"}',
            Command("r0", "a"),
        ),
        ('{"bad json": } then {"machine": "r0", "command": "x"}', Command("r0", "x")),
        ("", "holds no JSON object"),
        ("ip link set r0-eth1 up", "holds no JSON object"),
        ('{"machine": "r0"}', 'no "command" string'),
        ('{"machine": 3, "command": "ip a"}', 'no "machine" string'),
        ("[1, 2]", "holds no JSON object"),
    ],
)
def test_reply_parsing_takes_the_first_json_object(reply, expected):
    got = parse_reply(reply)
    if isinstance(expected, Command):
        assert got == expected
    else:
        assert isinstance(got, str) and expected in got


def test_draws_are_seeded_and_follow_the_level_table():
    cfg = RoutingConfig()
    for level in (1, 2, 3):
        for i in range(40):
            topo, faults = draw(cfg, level, random.Random(f"7:{level}:{i}"))
            again = draw(cfg, level, random.Random(f"7:{level}:{i}"))
            assert (topo, faults) == again
            size = cfg.sizes[level - 1]
            assert size.subnets[0] <= topo.subnets <= size.subnets[1]
            types = tuple(f.type for f in faults)
            assert len(types) == 1 if level == 1 else types in PAIRS[level]
            if len(faults) == 2 and faults[0].subnets and faults[1].subnets:
                assert faults[0].subnets[0] != faults[1].subnets[0]  # kept apart


@pytest.mark.parametrize("kind", TYPES)
def test_every_variant_fix_passes_the_sandbox_and_round_trips(kind):
    topo = RoutingTopology(4, 4)
    seen = set()
    for i in range(60):
        fault = DRAW[kind](random.Random(i), topo, set())
        seen.add(fault.variant)
        assert Fault.from_json(fault.to_json()) == fault
        for machine, command in fault.fix:
            assert machine in topo.machines
            assert check(command).allowed, (fault.variant, command, check(command).reason)
    assert len(seen) >= 3


def test_topology_lab_names_and_prompt():
    topo = RoutingTopology(3, 2)
    lab = topo.lab()
    lab.validate()
    assert lab.probed == topo.machines == ("r0", "h1_1", "h1_2", "h2_1", "h2_2", "h3_1", "h3_2")
    assert RoutingTopology.from_name(topo.name) == topo
    router = lab.device("r0")
    assert ("net.ipv4.ip_forward", "1") in router.sysctls
    assert ("net.ipv4.conf.r0-eth2.send_redirects", "0") in router.sysctls
    prompt = build_prompt(topo, 10)
    assert "s2: subnet 10.0.2.0/24; r0 10.0.2.1 (r0-eth2); hosts h2_1 10.0.2.2" in prompt
    assert '{"machine": ' in prompt and "10 turns" in prompt


def test_config_checks_name_the_key():
    validate_config(RoutingConfig())
    bad = RoutingConfig(sizes=[LevelSize([2, 9], [1, 2]), LevelSize(), LevelSize()])
    with pytest.raises(ConfigError, match=r"app\.sizes\[0\]\.subnets"):
        validate_config(bad)
    with pytest.raises(ConfigError, match=r"app\.emulator"):
        validate_config(RoutingConfig(emulator="docker"))
    with pytest.raises(ConfigError, match=r"app\.probe\.timeout_ms"):
        cfg = RoutingConfig()
        cfg.probe.timeout_ms = 5
        validate_config(cfg)


def test_the_prompt_lists_every_tool_the_sandbox_runs():
    """The prompt names exactly the tools the command policy accepts (sysctl included:
    it has its own checker, and once fell out of the prompt's list), less the read-only
    tools the incidents levels added (EXTRA_TOOL_NAMES), so levels 1-5 keep their prompts."""
    from emulators.netcmd.policy import ALLOWED
    from emulators.netcmd.tools import ALL_TOOL_NAMES, EXTRA_TOOL_NAMES, RULES, TOOL_NAMES

    assert set(ALL_TOOL_NAMES) == {*RULES, "sysctl"}
    assert not set(EXTRA_TOOL_NAMES) & set(TOOL_NAMES)
    assert ", ".join(TOOL_NAMES) == ALLOWED
    prompt = build_prompt(RoutingTopology(3, 2), 10)
    assert f"tools: {ALLOWED} (" in prompt
    assert check("sysctl -w net.ipv4.ip_forward=1").allowed
