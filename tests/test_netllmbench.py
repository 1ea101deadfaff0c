"""NetLLMBench's configuration tasks: seeded labs, task checks read from the network,
scoring, and the nine-task chain played on real Mininet and real Kathará.

The pure tests (draws, orders, ping summaries, scoring) need nothing. The live ones run
the oracle, the null agent and hand-written agent commands through the app's own
environment on both backends: the paper's chain must take 9 tasks in one attempt each,
a command that succeeds on the wrong device must not count, and undoing an earlier task
must be an unsafe step.
"""

from __future__ import annotations

import json
import random

import pytest

from emulators.base import EMULATORS
from generators.netllmbench.app import NetLLMBenchApp
from generators.netllmbench.config import (
    LevelSize,
    NetLLMBenchConfig,
    _default_sizes,
    validate_config,
)
from generators.netllmbench.generator import draw
from generators.netllmbench.lab import Size, draw_network, paper_network
from generators.netllmbench.scoring import score
from generators.netllmbench.tasks import Task, pinged, tasks_of
from pipeline.core import Outcome, Query, StepResult, StepStatus, TaskStep
from pipeline.errors import ConfigError
from pipeline.querygen import key_slot, seed_slot
from tests.conftest import integration_fixture, require_emulator

PAPER_TASKS = [
    "host_ip:1",
    "host_ip:2",
    "host_ip:3",
    "router_ip:1",
    "router_ip:2",
    "gateway:1",
    "gateway:2",
    "gateway:3",
    "ping:1",
]


# -- draws and tasks (pure) -------------------------------------------------------------
def test_draws_are_seeded_varied_and_respect_dependencies():
    cfg = NetLLMBenchConfig()
    seen_names, seen_subnets = set(), set()
    for level in (1, 2, 3):
        for index in range(1, 25):
            a = draw(cfg, level, index, random.Random(f"0:{level}:{index}"))
            b = draw(cfg, level, index, random.Random(f"0:{level}:{index}"))
            assert a == b
            net, tasks, first, _ = a
            net.lab().validate()
            seen_names.add((net.hosts[0], net.routers[0], net.ports[0].interface))
            seen_subnets.add(net.subnet(net.switches[0]))
            done: set[str] = set()
            for task in tasks:  # the order meets every task's needs
                assert set(task.needs) <= done, (task.label, task.needs, done)
                done.add(task.label)
            assert tasks[-1].kind == "ping"
            assert (first > 0) <= (level == 1)
            size = cfg.sizes[level - 1]
            assert len(net.routers) == size.routers
            assert size.hosts[0] <= len(net.hosts) <= size.hosts[1]
            if level == 3:
                assert len(net.routes) >= 2 and any(t.kind == "route" for t in tasks)
                source, target = tasks[-1].device, tasks[-1].target
                router = {h: net.router_on(net.port(h).switch).device for h in net.hosts}
                assert router[source] != router[target]  # the ping crosses both routers
    assert len(seen_names) > 5 and len(seen_subnets) > 50


def test_query_zero_of_level_two_is_netllmbenchs_own_lab():
    net, tasks, first, operation = draw(NetLLMBenchConfig(), 2, 0, random.Random(0))
    assert operation == "chain9"
    assert first == 0 and [t.label for t in tasks] == PAPER_TASKS
    texts = [t.text() for t in tasks]
    assert "Give host h1 the IPv4 address 192.168.1.10/24" in texts[0]
    assert "192.168.2.1/24" in texts[4] and "192.168.1.1" in texts[5]
    assert texts[-1].startswith("From h3, ping h2 (192.168.1.20) 3 times")
    off = draw(NetLLMBenchConfig(paper_lab_first=False), 2, 0, random.Random(0))[0]
    assert off != net


def test_ping_counts_only_the_right_ping_with_every_reply():
    net = draw_network(random.Random(3), Size(1, 2, 3))
    ping = tasks_of(net, (net.hosts[0], net.hosts[1]))[-1]
    ok = "3 packets transmitted, 3 received, 0% packet loss, time 2003ms"
    argv = ("ping", "-c", "3", ping.address)
    assert pinged(ping, ping.device, argv, 0, ok)
    assert not pinged(ping, net.hosts[2], argv, 0, ok)  # from another host
    assert not pinged(ping, ping.device, ("ping", "-c", "3", "10.9.9.9"), 0, ok)
    assert not pinged(ping, ping.device, argv, 1, ok.replace("3 received", "2 received"))
    assert not pinged(
        ping,
        ping.device,
        ("ping", "-c", "2", ping.address),
        0,
        ok[:0] + "2 packets transmitted, 2 received",
    )
    assert not pinged(ping, ping.device, ("ip", "addr", ping.address), 0, ok)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"attempts": 0}, "app.attempts must be an integer from 1 to 10"),
        ({"emulator": "gns3"}, "app.emulator must be one of ['kathara', 'mininet']"),
        ({"assist_failed_tasks": "yes"}, "app.assist_failed_tasks must be true or false"),
        ({"sizes": [LevelSize()] * 3}, "app.sizes must list 5 levels"),
        (
            {"sizes": [LevelSize(1, [2, 3], [2, 4]), *_default_sizes()[1:]]},
            "app.sizes[0]: every switch needs a host",
        ),
        (
            {"sizes": [*_default_sizes()[:2], LevelSize(2, [1, 1], [3, 3]), *_default_sizes()[3:]]},
            "app.sizes[2].switches must be",
        ),
        ({"sizes": [*_default_sizes()[:4], LevelSize(2, [3, 3], [3, 3])]}, "app.sizes[4].routers"),
    ],
)
def test_config_errors_name_the_key(override, message):
    with pytest.raises(ConfigError) as err:
        validate_config(NetLLMBenchConfig(**override))
    assert message in str(err.value)


# -- scoring (pure) ---------------------------------------------------------------------
def _query(labels: list[str], first: int = 0) -> Query:
    tasks = [{"label": label, "kind": label.split(":")[0], "device": "h1"} for label in labels]
    truth = {"network": {}, "tasks": tasks, "first": first, "oracle": []}
    return Query(
        "netllmbench-L2-s0-00000", "netllmbench", 2, 0, 0, "", "configuration", "chain", truth
    )


def _step(task: str, attempt: int, solved: bool, status=StepStatus.OK, **extra) -> StepResult:
    evidence = {"task": task, "attempt": attempt, "solved": solved, "broken": [], **extra}
    return StepResult(
        "h1: ip a", status, "", evidence, error=None if status is StepStatus.OK else "x"
    )


def test_scoring_counts_tasks_attempts_and_undone_work():
    query = _query(["host_ip:1", "gateway:1", "ping:1"])
    steps = [
        _step("host_ip:1", 1, True),
        _step("gateway:1", 1, False, StepStatus.EXEC_ERROR),
        _step("gateway:1", 2, True),
        _step("ping:1", 1, True),
    ]
    verdict = score(query, steps)
    assert verdict.outcome is Outcome.CORRECT and verdict.safe
    assert (verdict.tasks, verdict.tasks_solved) == (3, 3)
    assert verdict.step_tasks == [
        TaskStep("host_ip:1", 1, True),
        TaskStep("gateway:1", 1, False),
        TaskStep("gateway:1", 2, True),
        TaskStep("ping:1", 1, True),
    ]
    assert verdict.detail["tasks"]["gateway:1"] == {"attempts": 2, "solved": True}

    # The gateway fails three times (the environment completes it); a later step undoes
    # the first task: not correct, not safe, and the outcome is the gateway's last status.
    steps = [
        _step("host_ip:1", 1, True),
        *(_step("gateway:1", a, False, StepStatus.BLOCKED) for a in (1, 2)),
        _step("gateway:1", 3, False, StepStatus.BLOCKED, assisted=True),
        _step("ping:1", 1, True, broken=["host_ip:1"]),
    ]
    verdict = score(query, steps)
    assert verdict.outcome is Outcome.BLOCKED and not verdict.correct
    assert verdict.step_safe == [True, True, True, True, False] and not verdict.safe
    assert (verdict.tasks, verdict.tasks_solved) == (3, 2)
    assert verdict.detail["tasks"]["gateway:1"]["assisted"] is True
    assert verdict.detail["undid"] == [{"turn": 5, "tasks": ["host_ip:1"], "flows": []}]


def test_scoring_of_wrong_prepared_and_env_error_episodes():
    query = _query(["host_ip:1", "router_ip:1", "gateway:1"], first=2)  # L1: one task played
    verdict = score(query, [_step("gateway:1", a, False) for a in (1, 2, 3)])
    assert verdict.outcome is Outcome.WRONG and verdict.tasks == 1 and verdict.tasks_solved == 0
    assert verdict.error == "gateway:1 was not complete after 3 attempts"
    assert verdict.detail["prepared"] == 2
    failed = StepResult("", StepStatus.ENV_ERROR, "", error="lab died", done=True)
    verdict = score(query, [_step("gateway:1", 1, False), failed])
    assert verdict.outcome is Outcome.ENV_ERROR and verdict.error == "lab died"
    assert verdict.step_tasks[-1] == TaskStep("gateway:1", 2, False)


# -- on real emulators ------------------------------------------------------------------
# Kathará plays these labs through the whole DAG in tests/test_kathara_sweep.py (levels 1-3,
# NetLLMBench's own nine-task chain in one attempt each, nothing left behind), level 5 in
# tests/test_netllmbench_levels.py and every command family in tests/test_emulator_contract.py.
BACKENDS = ("mininet",)


@pytest.fixture(scope="module", params=BACKENDS)
@integration_fixture
def app(request) -> NetLLMBenchApp:
    require_emulator(request.param)
    return NetLLMBenchApp(
        NetLLMBenchConfig(name=f"netllmbench_{request.param}", emulator=request.param)
    )


@pytest.fixture(scope="module")
@integration_fixture
def mininet_app() -> NetLLMBenchApp:
    """The app on Mininet alone, for what does not depend on the backend."""
    require_emulator("mininet")
    return NetLLMBenchApp(NetLLMBenchConfig(name="netllmbench", emulator="mininet"))


@pytest.fixture(scope="module")
def paper(app) -> Query:
    (query,) = app.generate(2, 0, 1)
    return query


def _play(app: NetLLMBenchApp, env, query: Query, replies) -> list[StepResult]:
    steps = []
    with env.episode(query) as episode:
        observation = episode.observe()
        for turn in range(1, episode.max_turns + 1):
            step = episode.step(replies(turn, observation))
            steps.append(step)
            if step.done:
                break
            observation = step.output
    return steps


def test_paper_chain_oracle_takes_nine_tasks_in_one_attempt_each(app, paper):
    assert json.loads(app.oracle_reply(paper, 1, "")) == {
        "machine": "h1",
        "command": "ip addr add 192.168.1.10/24 dev eth0",
    }
    with app.environment() as env:
        for _ in range(2):  # the second run starts from the reset lab
            steps = _play(app, env, paper, lambda turn, _: app.oracle_reply(paper, turn, ""))
            verdict = app.score(paper, steps)
            assert verdict.outcome is Outcome.CORRECT and verdict.safe
            assert verdict.step_tasks == [TaskStep(label, 1, True) for label in PAPER_TASKS]
            assert (verdict.tasks, verdict.tasks_solved) == (9, 9)
            assert "3 received" in steps[-1].output


def test_null_fails_every_task_and_the_environment_assists(app, paper):
    with app.environment() as env:
        steps = _play(app, env, paper, lambda *_: "")
    verdict = app.score(paper, steps)
    assert verdict.outcome is Outcome.PARSE_ERROR and verdict.tasks_solved == 0
    assert len(steps) == 27 and all(s.status is StepStatus.PARSE_ERROR for s in steps)
    assisted = [t for t, d in verdict.detail["tasks"].items() if d.get("assisted")]
    assert len(assisted) == 8  # every task but the ping was completed for the agent


def test_a_command_on_the_wrong_device_does_not_count_and_undoing_is_unsafe(app, paper):
    replies = [
        {"machine": "h2", "command": "ip addr add 192.168.1.10/24 dev eth0"},  # wrong device
        {"machine": "h1", "command": "ip addr add 192.168.1.10/24 dev eth0"},
        {"machine": "h2", "command": "ip addr add 192.168.1.20/24 dev eth0"},
        {"machine": "h1", "command": "ip addr flush dev eth0"},  # undoes task 1
    ]

    def agent(turn: int, _: str) -> str:
        return json.dumps(replies[turn - 1]) if turn <= len(replies) else "no idea"

    with app.environment() as env:
        steps = _play(app, env, paper, agent)
    verdict = app.score(paper, steps)
    assert steps[0].status is StepStatus.OK and not steps[0].evidence["solved"]
    assert verdict.step_tasks[:4] == [
        TaskStep("host_ip:1", 1, False),
        TaskStep("host_ip:1", 2, True),
        TaskStep("host_ip:2", 1, True),
        TaskStep("host_ip:3", 1, False),
    ]
    assert steps[3].evidence["broken"] == ["host_ip:1", "host_ip:2"][:1]
    assert verdict.step_safe[:4] == [True, True, True, False] and not verdict.safe
    assert "undid earlier tasks: host_ip:1" in steps[3].output


def _oracle_solves_and_null_fails(app: NetLLMBenchApp, level: int) -> None:
    queries = list(app.generate(level, 1, 2))
    with app.environment() as env:
        for query in queries:
            oracle = app.score(
                query, _play(app, env, query, lambda t, _, q=query: app.oracle_reply(q, t, ""))
            )
            assert oracle.outcome is Outcome.CORRECT and oracle.safe, oracle
            assert oracle.tasks == len(query.ground_truth["oracle"])
            null = app.score(query, _play(app, env, query, lambda *_: ""))
            assert null.tasks_solved == 0 and not null.correct
    if level == 1:
        assert all(
            q.ground_truth["first"] >= 0 and len(q.ground_truth["oracle"]) == 1 for q in queries
        )
    else:
        assert all(any(t["kind"] == "route" for t in q.ground_truth["tasks"]) for q in queries)


def test_oracle_solves_and_null_fails_level_one(app):
    _oracle_solves_and_null_fails(app, 1)


@pytest.mark.integration
def test_oracle_solves_and_null_fails_level_three(mininet_app):
    # On Mininet only: Kathará plays level 3 through the DAG in tests/test_kathara_sweep.py.
    _oracle_solves_and_null_fails(mininet_app, 3)


def test_no_lab_is_left_behind(app, paper):
    with app.environment() as env:
        _play(app, env, paper, lambda turn, _: app.oracle_reply(paper, turn, ""))
        prefixes = [emu.prefix for emu, _ in env.pool._live.values()]
    backend = EMULATORS.load(app.cfg.emulator)
    assert prefixes and all(backend.leftovers(p) == [] for p in prefixes)


def test_a_task_of_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kinds are"):
        Task("firewall:1", "firewall", "h1")
    with pytest.raises(ValueError, match="kinds are"):
        Task("ping:1", "host_ip", "h1")  # the label names another kind


@pytest.mark.integration
def test_keys_are_distinct_across_seed_slots_and_only_one_slot_gets_the_paper_lab(mininet_app):
    # Keys are the generator's, whatever validates the draws: one backend is enough.
    app = mininet_app
    queries = [q for seed in (0, 1, 2, 3) for q in app.generate(2, seed, 1)]
    assert len({q.key for q in queries}) == 4
    assert all(key_slot(q.key) == seed_slot(q.seed) for q in queries)
    paper_net = paper_network().to_json()
    assert [q.ground_truth["network"] == paper_net for q in queries] == [True] + [False] * 3
    assert app.capacity(1).per_seed > 10**9
