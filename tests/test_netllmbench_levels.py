"""netllmbench levels 4 and 5 and the knobs: goals over an addressing plan by role, a chain
of routers, scenarios, `size`, `tasks` and failure-driven weights.

The pure tests draw many queries: the labs are chains with the right static routes, the
prompts hand over no interface name and no router address, and the plan plus the
interfaces' descriptions are enough to derive every oracle command
(tests/netllmbench_solver.py); levels 1-3 still draw what they always drew (a pinned
digest). The live ones (integration) generate a level-4 and a level-5 query on Mininet
(validated there: the oracle solves it, every task fails before its command), play a
solver that reads the lab with real commands, and the null agent.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import random

import pytest

from generators.netllmbench.app import NetLLMBenchApp
from generators.netllmbench.capacity import capacity
from generators.netllmbench.checks import expected_flows
from generators.netllmbench.config import NetLLMBenchConfig, level_size, validate_config
from generators.netllmbench.generator import NetLLMBenchQueryGenerator, draw, task_key
from generators.netllmbench.goals import SCENARIOS, goal_text, scenarios
from generators.netllmbench.prompt import build_prompt
from pipeline.cells import cell_from_config
from pipeline.config import compose
from pipeline.core import Outcome, Query, canonical_json
from pipeline.errors import ConfigError
from pipeline.querygen import query_rng
from pipeline.variants import variant_of
from tests.conftest import integration_fixture, require_emulator
from tests.netllmbench_solver import Links, PlanSolver, links_of

# levels_1_to_3_digest() on the commit before levels 4 and 5 existed (8e33e9c)
GOLDEN_L123 = "29909386ceb556b12782c17b167864591b4301f1323ddbfc8113fc2f89608bf0"


def _draws(cfg: NetLLMBenchConfig, level: int, count: int, seed: int = 0):
    for i in range(count):
        yield draw(cfg, level, i, random.Random(f"{seed}:{level}:{i}"))


def _links(net) -> Links:
    return {d: {p.interface: p.switch for p in net.ports_of(d)} for d in net.machines}


# -- levels 1-3 are untouched --------------------------------------------------------------
def levels_1_to_3_digest(draws: int = 40) -> str:
    cfg = NetLLMBenchConfig()
    digest = hashlib.sha256()
    for level in (1, 2, 3):
        for seed in range(4):
            for i in range(draws):
                net, tasks, first = draw(cfg, level, i, random.Random(f"{seed}:{level}:{i}"))[:3]
                played = tasks[first:] if level > 1 else tasks[first : first + 1]
                flows = expected_flows(net, tasks, ["icmp", "tcp"])
                digest.update(
                    canonical_json(
                        [
                            net.to_json(),
                            net.name,
                            [t.to_json() for t in tasks],
                            task_key(net, tasks, first, level),
                            build_prompt(net, played, tasks[:first], cfg),
                            [t.text() for t in tasks],
                            [t.command() for t in tasks],
                            [f"{f.source}>{f.target}@{f.address}/{f.protocol}" for f in flows],
                            repr(net.lab()),
                        ]
                    ).encode()
                )
    return digest.hexdigest()


def test_levels_1_to_3_draw_byte_for_byte_what_they_drew_before():
    assert levels_1_to_3_digest() == GOLDEN_L123


# -- levels 4 and 5 (pure) -----------------------------------------------------------------
@pytest.mark.parametrize("level", [4, 5])
def test_goal_levels_draw_chains_with_the_right_routes_and_closed_scenarios(level):
    cfg = NetLLMBenchConfig()
    operations = set()
    for net, tasks, first, operation in _draws(cfg, level, 60):
        net.lab().validate()
        assert net.described and net.name.startswith(f"netllm-{len(net.routers)}r")
        assert len(net.routers) == (2 if level == 4 else 3)
        served = {
            r: {p.switch for p in net.ports_of(r) if not net.is_transit(p.switch)}
            for r in net.routers
        }
        assert all(served.values())  # every router serves a LAN
        for router in net.routers:  # a route to every LAN it is not on, via the next router
            want = set()
            for other in net.routers:
                if other == router:
                    continue
                hop = net.router_path(router, other)[1]
                link = net.transit_between(router, hop)
                via = next(p.ip for p in net.ports_of(hop) if p.switch == link)
                want |= {(router, net.subnet(lan), via) for lan in served[other]}
            assert {r for r in net.routes if r[0] == router} == want
        for device in net.machines:  # every interface is described with its switch
            startup = net.lab().device(device).startup
            assert {(a[4], a[6]) for a in startup} == {
                (p.interface, p.switch) for p in net.ports_of(device)
            }
        prepared, played = tasks[:first], tasks[first:]
        kinds = next(s.kinds for s in SCENARIOS if s.name == operation)
        assert {t.kind for t in played} == kinds and not {t.kind for t in prepared} & kinds
        done = {t.label for t in prepared}
        for task in tasks:  # nothing prepared needs a played task; the order meets needs
            assert set(task.needs) <= done, (operation, task.label)
            done.add(task.label)
        ping = played[-1]
        assert ping.kind == "ping"
        ends = {net.router_on(net.port(h).switch).device for h in (ping.device, ping.target)}
        assert ends == ({net.routers[0], net.routers[-1]} if level == 5 else set(net.routers))
        # once every task is done, every host reaches every other host
        flows = expected_flows(net, tasks, ["icmp"])
        hosts = {
            (f.source, f.target) for f in flows if f.source in net.hosts and f.target in net.hosts
        }
        assert hosts == {(a, b) for a in net.hosts for b in net.hosts if a != b}
        operations.add(operation)
    assert operations == {s.name for s in SCENARIOS}


@pytest.mark.parametrize("level", [4, 5])
def test_goal_prompts_name_no_interface_nor_router_address_and_the_plan_suffices(level):
    """Every goal's oracle command follows from the prompt and the interfaces' descriptions
    alone (what `ip -j link show` lists), for every draw and size."""
    app = NetLLMBenchApp(NetLLMBenchConfig())
    for size in (None, "small", "large"):
        cfg = NetLLMBenchConfig(size=size)
        gen = NetLLMBenchQueryGenerator(cfg)
        for i, drawn in enumerate(_draws(cfg, level, 40, seed=1)):
            net, tasks, first, _ = drawn
            query = gen.query(level, 1, i, drawn)
            words = set(query.prompt.replace(",", " ").replace(".", " ").split())
            assert not words & {p.interface for p in net.ports}
            router_ips = {p.ip for p in net.ports if p.device in net.routers}
            assert not words & router_ips
            assert all(net.subnet(s) in query.prompt for s in net.switches)
            solver = PlanSolver(query.prompt)
            for turn, task in enumerate(tasks[first:], 1):
                goal = goal_text(task, net)
                assert task.interface == "" or task.interface not in goal
                oracle = json.loads(app.oracle_reply(query, turn, ""))
                assert solver.command(goal, _links(net)) == (oracle["machine"], oracle["command"])
        assert query.size == (size or "")


def test_size_classes_tasks_and_their_errors():
    assert level_size(NetLLMBenchConfig(), 5).routers == 3
    large = level_size(NetLLMBenchConfig(size="large"), 5)
    assert (large.routers, large.switches, large.hosts) == (4, [6, 7], [9, 11])
    small = level_size(NetLLMBenchConfig(size="small"), 1)
    assert (small.routers, small.switches, small.hosts) == (1, [2, 2], [2, 2])
    paper = draw(NetLLMBenchConfig(), 2, 0, random.Random(0))[0]
    assert draw(NetLLMBenchConfig(size="large"), 2, 0, random.Random(0))[0] != paper
    for net, *_ in _draws(NetLLMBenchConfig(size="large"), 5, 5):
        assert len(net.routers) == 4 and len(net.switches) in (6 + 3, 7 + 3)
    assert [s.name for s in scenarios(["route", "ping"])] == ["routes"]
    assert [s.name for s in scenarios(["host_ip", "gateway"])] == ["hosts"]
    for *_, op in _draws(NetLLMBenchConfig(tasks=["router_ip", "route"]), 4, 20):
        assert op in ("routers", "routes")
    for _, tasks, first, op in _draws(NetLLMBenchConfig(tasks=["gateway"]), 1, 20):
        assert op == "gateway" and tasks[first].kind == "gateway"
    for key, value, message in [
        ("size", "huge", "app.size must be null or one of ['small', 'medium', 'large']"),
        ("tasks", ["dns"], "app.tasks must be null or a list of distinct task kinds"),
        ("tasks", [], "app.tasks must be null or a list"),
        ("goal_attempts", 0, "app.goal_attempts must be an integer from 1 to 10"),
    ]:
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
            validate_config(NetLLMBenchConfig(**{key: value}))
    app = NetLLMBenchApp(NetLLMBenchConfig(tasks=["host_ip"]))
    with pytest.raises(ConfigError, match="selects no scenario of level 4"):
        next(app.generate(4, 0, 1))
    with pytest.raises(ConfigError, match="level=2 plays NetLLMBench's whole chain"):
        next(app.generate(2, 0, 1))
    with pytest.raises(ConfigError, match="level 1 has one router"):
        next(NetLLMBenchApp(NetLLMBenchConfig(tasks=["route"])).generate(1, 0, 1))
    with pytest.raises(ConfigError, match="level=6 is not defined for app kind 'netllmbench'"):
        compose(["app=netllmbench", "level=6"])  # the pipeline checks levels, once for all


def test_weights_draw_the_operation_labels_levels_1_4_5():
    cfg = NetLLMBenchConfig()
    only = {"routes": 1.0, "build": 0.0, "hosts": 0.0, "routers": 0.0}
    for level in (4, 5):
        ops = {
            d[3] for d in (draw(cfg, level, i, random.Random(i), weights=only) for i in range(15))
        }
        assert ops == {"routes"}
    kinds = {"ping": 1.0, "host_ip": 0.0, "router_ip": 0.0, "gateway": 0.0}
    ops = {d[3] for d in (draw(cfg, 1, i, random.Random(i), weights=kinds) for i in range(15))}
    assert ops == {"ping"}
    # the pipeline passes the weights (pipeline/focus.py: generate_kwargs)
    from pipeline.focus import generate_kwargs

    assert generate_kwargs(NetLLMBenchApp(cfg), {"weights": only}) == {"weights": only}


def test_capacity_of_levels_4_and_5_by_scenario():
    cfg = NetLLMBenchConfig()
    for level in (4, 5):
        found = capacity(cfg, level)
        assert set(found.by_operation) == {s.name for s in SCENARIOS} and found.per_seed > 10**9
    assert set(capacity(NetLLMBenchConfig(tasks=["route"]), 5).by_operation) == {"routes"}
    assert set(capacity(NetLLMBenchConfig(tasks=["ping", "gateway"]), 1).by_operation) == {
        "gateway",
        "ping",
    }


def test_a_multirun_over_size_and_tasks_makes_separate_labelled_cells():
    cells = {}
    for size in ("small", "large"):
        for tasks in ("[route]", "[host_ip,gateway]"):
            cfg = compose(["app=netllmbench", "level=5", f"app.size={size}", f"app.tasks={tasks}"])
            variant = variant_of(cfg)
            assert f"app.size={json.dumps(size)}" in variant.label and "app.tasks=" in variant.label
            cells[cell_from_config(cfg).part] = variant.app_variant
    assert len(cells) == 4 and len(set(cells.values())) == 4
    assert variant_of(compose(["app=netllmbench", "level=4"])).name == "base"


# -- on real Mininet -------------------------------------------------------------------------
@pytest.fixture(scope="module")
@integration_fixture
def live() -> NetLLMBenchApp:
    require_emulator("mininet")
    return NetLLMBenchApp(NetLLMBenchConfig(name="netllmbench_levels", size="small"))


def _play(env, query: Query, reply) -> list:
    steps = []
    with env.episode(query) as episode:
        observation = episode.observe()
        for turn in range(1, episode.max_turns + 1):
            steps.append(episode.step(reply(turn, observation)))
            if steps[-1].done:
                break
            observation = steps[-1].output
    return steps


class ReadingSolver:
    """Plays a goal query as an agent would: reads the interfaces of what a goal needs
    with `ip -j link show` (one attempt each), then sends the solver's command."""

    def __init__(self, prompt: str) -> None:
        self.solver = PlanSolver(prompt)
        self.links: Links = {}
        self.reading: str | None = None

    def __call__(self, turn: int, observation: str) -> str:
        if self.reading is not None:
            self.links[self.reading] = links_of(observation)
            self.reading = None
        goal = observation[observation.rindex("Task ") :].split(": ", 1)[1].split("\n")[0]
        missing = [d for d in self.solver.needs(goal) if d not in self.links]
        if missing:
            self.reading = missing[0]
            return json.dumps({"machine": missing[0], "command": "ip -j link show"})
        machine, command = self.solver.command(goal, self.links)
        return json.dumps({"machine": machine, "command": command})


def _the_prompts_command_shows_the_descriptions(env, query: Query) -> None:
    """The prompt says `ip link show` prints each interface's description on an `alias`
    line (issue 26: agents were pointed at descriptions `ip -br link` does not show)."""
    assert "`ip link show` prints on an `alias` line" in query.prompt
    ports = query.ground_truth["network"]["ports"]
    router = query.ground_truth["network"]["routers"][0]
    with env.episode(query) as episode:
        shown = episode.diagnose("show", {"machine": router, "what": "links"})
    assert shown.startswith(f"{router}$ ip link show"), shown
    for port in (p for p in ports if p[0] == router):
        assert f"alias {port[2]}" in shown, (port, shown)


@pytest.mark.parametrize("level", [4, 5])
def test_goal_levels_live_oracle_reader_and_null(live, level):
    """Generation validates the query on a live lab (every task failing before its
    command); the oracle is correct and safe, and so is a solver that finds names by
    reading the lab; the null agent is not correct."""
    (query,) = live.generate(level, 0, 1)
    assert query.operation in {s.name for s in SCENARIOS} and query.size == "small"
    net_routers = query.ground_truth["network"]["routers"]
    assert len(net_routers) == level - 2  # small: 2 routers at L4, 3 at L5
    with live.environment() as env:
        oracle = _play(env, query, lambda turn, obs: live.oracle_reply(query, turn, obs))
        verdict = live.score(query, oracle)
        assert verdict.outcome is Outcome.CORRECT and verdict.safe, verdict.error
        reader = ReadingSolver(query.prompt)
        steps = _play(env, query, reader)
        verdict = live.score(query, steps)
        assert verdict.outcome is Outcome.CORRECT and verdict.safe, verdict.error
        assert any("ip -j link show" in s.action for s in steps)
        null = live.score(query, _play(env, query, lambda *_: ""))
        assert not null.correct and null.tasks_solved == 0
        _the_prompts_command_shows_the_descriptions(env, query)
    for port in query.ground_truth["network"]["ports"]:  # the addresses were on the plan
        assert ipaddress.ip_interface(port[3])


def test_generate_threads_weights_and_knobs_to_the_draws(monkeypatch):
    """`app.generate(level, seed, n, weights=...)` as pipeline/generate.py calls it with
    focus.results: the scenarios follow the weights, each query records its operation
    and size, keys stay distinct (the live validation is replaced here; the integration
    test plays it)."""
    import contextlib

    from generators.netllmbench import generator

    monkeypatch.setattr(generator, "open_pool", lambda cfg: contextlib.nullcontext())
    monkeypatch.setattr(generator, "validate", lambda pool, cfg, query: None)
    app = NetLLMBenchApp(NetLLMBenchConfig(size="medium"))
    weights = {"routes": 3.0, "hosts": 1.0, "build": 0.0, "routers": 0.0}
    queries = list(app.generate(5, 2, 24, weights=weights))
    ops = [q.operation for q in queries]
    assert set(ops) == {"routes", "hosts"} and ops.count("routes") > ops.count("hosts")
    assert {q.size for q in queries} == {"medium"} and len({q.key for q in queries}) == 24
    assert [q.prompt for q in app.generate(5, 2, 3, weights=weights)] == [
        q.prompt for q in queries[:3]
    ]
    plain = [q.operation for q in app.generate(4, 0, 12)]
    assert len(set(plain)) > 1


@pytest.mark.integration
def test_level_five_on_kathara_oracle_and_null():
    """The same on Kathará (containers; the descriptions set by each device's startup):
    query 0 of seed 0 as drawn (generation's own oracle play is the Mininet tests'), the
    oracle correct and safe, the null agent not correct."""
    require_emulator("kathara")
    cfg = NetLLMBenchConfig(name="netllmbench_kathara_levels", emulator="kathara", size="small")
    app = NetLLMBenchApp(cfg)
    query = NetLLMBenchQueryGenerator(cfg).query(5, 0, 0, draw(cfg, 5, 0, query_rng(0, 5, 0)))
    with app.environment() as env:
        steps = _play(env, query, lambda turn, obs: app.oracle_reply(query, turn, obs))
        verdict = app.score(query, steps)
        assert verdict.outcome is Outcome.CORRECT and verdict.safe, verdict.error
        assert len(steps) == len(query.ground_truth["oracle"])
        assert not app.score(query, _play(env, query, lambda *_: "")).correct
        _the_prompts_command_shows_the_descriptions(env, query)


@pytest.mark.parametrize("level", [4, 5])
def test_a_route_goal_is_met_by_the_route_it_names_only(level):
    """The route goal names its mechanism ("add the static route the plan implies"): a
    covering or default route through the same next hop carries the traffic too, but it is
    not that route, and the task stays open (tasks.holds reads the main table)."""
    from generators.netllmbench.tasks import DeviceState, holds

    cfg = NetLLMBenchConfig()
    net, tasks, _, _ = next(
        d for d in _draws(cfg, level, 80) if any(t.kind == "route" for t in d[1])
    )
    task = next(t for t in tasks if t.kind == "route")
    port = next(
        p.interface
        for p in net.ports_of(task.device)
        if ipaddress.ip_address(task.address) in ipaddress.ip_interface(p.address).network
    )
    for dst in ("default", "0.0.0.0/1", "10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"):
        states = {task.device: DeviceState(routes={(dst, task.address, port)})}
        assert not holds(task, states, net), dst
    states = {task.device: DeviceState(routes={(task.subnet, task.address, port)})}
    assert holds(task, states, net)
