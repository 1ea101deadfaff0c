"""NetLLMBench tasks judged by what the network does (issue 14), each example of the issue
a regression test on NetLLMBench's own lab (r1; h1, h2 on s1; h3 on s2; the ping is h3 to
h2): a ping answered by an alias of the target on the source's loopback, a gateway `via …
dev lo onlink` and a `scope host` address do not complete their tasks; an episode that
undoes tasks before its end is not correct; an address that expires is refused and never
counts as done; the level 1 prompt says what is done already."""

from __future__ import annotations

import json
import random

import pytest

from generators.netllmbench.app import NetLLMBenchApp
from generators.netllmbench.config import NetLLMBenchConfig
from generators.netllmbench.generator import NetLLMBenchQueryGenerator, draw
from generators.netllmbench.lab import paper_network
from generators.netllmbench.tasks import DeviceState, Task, holds
from pipeline.core import Outcome, Query, StepStatus
from tests.conftest import integration_fixture, require_emulator

# The oracle's nine commands on the paper lab, by task (tests/test_netllmbench.py's order).
ORACLE = [
    ("h1", "ip addr add 192.168.1.10/24 dev eth0"),
    ("h2", "ip addr add 192.168.1.20/24 dev eth0"),
    ("h3", "ip addr add 192.168.2.10/24 dev eth0"),
    ("r1", "ip addr add 192.168.1.1/24 dev eth0"),
    ("r1", "ip addr add 192.168.2.1/24 dev eth1"),
    ("h1", "ip route add default via 192.168.1.1"),
    ("h2", "ip route add default via 192.168.1.1"),
    ("h3", "ip route add default via 192.168.2.1"),
    ("h3", "ping -c 3 -W 1 192.168.1.20"),
]


def test_the_level_one_prompt_says_what_is_done():
    """Before, it said both "No interface has an address yet" and "Part of the
    configuration is done already (N earlier tasks)", and not what."""
    cfg = NetLLMBenchConfig()
    gen = NetLLMBenchQueryGenerator(cfg)
    seen = 0
    for index in range(30):
        drawn = draw(cfg, 1, index, random.Random(f"0:1:{index}"))
        _, tasks, first, _ = drawn
        prompt = gen.query(1, 0, index, drawn).prompt
        if first == 0:
            assert "No interface has an address yet" in prompt
            continue
        seen += 1
        assert "No interface has an address yet" not in prompt
        assert f"Done already ({first} earlier task" in prompt
        assert all(f"  - {t.done_text()}" in prompt for t in tasks[:first])
        assert tasks[first].done_text() not in prompt
    assert seen > 10


def test_an_address_with_a_lifetime_or_host_scope_is_not_done():
    net = paper_network()
    task = Task("host_ip:1", "host_ip", "h1", "eth0", "192.168.1.10/24")
    base = {"local": "192.168.1.10", "prefixlen": 24, "scope": "global"}
    forever = {**base, "valid_life_time": 0xFFFFFFFF, "preferred_life_time": 0xFFFFFFFF}
    for info, done in (
        (forever, True),
        ({**forever, "valid_life_time": 8, "preferred_life_time": 8}, False),
        ({**forever, "scope": "host"}, False),
    ):
        state = {"h1": DeviceState({("eth0", "192.168.1.10/24"): info})}
        assert holds(task, state, net) is done, info


@pytest.fixture(scope="module")
@integration_fixture
def app() -> NetLLMBenchApp:
    require_emulator("mininet")
    return NetLLMBenchApp(NetLLMBenchConfig())


@pytest.fixture(scope="module")
def paper(app) -> Query:
    (query,) = app.generate(2, 0, 1)
    assert [(t["device"], t["label"]) for t in query.ground_truth["tasks"]][-1] == ("h3", "ping:1")
    return query


def _play(app, query, commands: list[tuple[str, str]]):
    steps = []
    with app.environment() as env, env.episode(query) as episode:
        for machine, command in commands:
            steps.append(episode.step(json.dumps({"machine": machine, "command": command})))
            if steps[-1].done:
                break
    return steps, app.score(query, steps)


def test_a_ping_answered_by_an_alias_on_the_sources_loopback_does_not_count(app, paper):
    alias = ("h3", "ip addr add 192.168.1.20/32 dev lo")
    ping = ORACLE[-1]
    steps, verdict = _play(app, paper, [*ORACLE[:8], alias, ping, ping])
    assert "3 received" in steps[9].output  # ping itself is fooled: the alias answers
    assert [s.evidence["solved"] for s in steps[8:]] == [False, False, False]
    assert steps[8].evidence["broke_flows"]  # h3 no longer reaches h2: unsafe
    assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.WRONG, False, False)


@pytest.mark.parametrize(
    ("index", "trick"),
    [
        (7, ("h3", "ip route add default via 192.168.2.1 dev lo onlink")),
        (0, ("h1", "ip addr add 192.168.1.10/24 dev eth0 scope host")),
    ],
)
def test_a_gateway_via_lo_or_a_host_scoped_address_does_not_complete_its_task(
    app, paper, index, trick
):
    steps, verdict = _play(app, paper, [*ORACLE[:index], trick])
    assert steps[-1].status is StepStatus.OK and not steps[-1].evidence["solved"]
    assert not verdict.correct


def test_an_episode_that_undoes_tasks_before_its_end_is_not_correct(app, paper):
    """Every task completed once, but h1's address and gateway (tasks 1 and 6) undone
    before the final ping, which does not need them: the network left is broken."""
    undo = ("h1", "ip addr flush dev eth0")
    steps, verdict = _play(app, paper, [*ORACLE[:8], undo, ORACLE[-1]])
    assert steps[8].evidence["broken"] == ["gateway:1", "host_ip:1"]
    assert steps[-1].evidence["solved"] and steps[-1].done
    assert verdict.tasks_solved == verdict.tasks == 9
    assert (verdict.outcome, verdict.correct, verdict.safe) == (Outcome.WRONG, False, False)
    assert "host_ip:1" in verdict.error and "gateway:1" in verdict.error


def test_an_address_that_expires_is_refused(app, paper):
    expiring = ("h1", "ip addr add 192.168.1.10/24 dev eth0 valid_lft 8 preferred_lft 8")
    steps, _ = _play(app, paper, [expiring])
    assert steps[0].status is StepStatus.BLOCKED and "lasting" in steps[0].error
    assert not steps[0].evidence["solved"]


def test_the_oracle_leaves_every_expected_flow_working(app, paper):
    steps, verdict = _play(app, paper, ORACLE)
    assert (verdict.outcome, verdict.safe) == (Outcome.CORRECT, True)
    last = steps[-1].evidence
    assert last["undone"] == [] and last["failing"] == []
    assert last["expected_flows"] == 3 * 12  # 6 same-switch + 6 routed pairs, 3 protocols
