"""Toynet's App: generator, episode, oracle and scorer (see __init__.py)."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.api import (
    TASKS,
    Action,
    Capacity,
    ConfigError,
    KeyTracker,
    Label,
    Outcome,
    Query,
    StepResult,
    StepStatus,
    Verdict,
    Vocabulary,
    answer_verdict,
    query_id,
    query_key,
    query_rng,
    stamp,
    task_text,
)

VOCABULARY = Vocabulary(
    (
        Label("link.down", "an interface that is administratively down", "the interface (eth1)"),
        Label("addr.wrong", "an interface whose address is not the intended one", "the interface"),
        Label(
            "route.missing",
            "a router lacking its route to another router's LAN",
            "route:<that LAN's prefix> (route:10.0.2.0/24)",
        ),
    )
)
WRITES = ("set", "addr", "route")
FORMAT = 'exactly one JSON object per turn: {"device": "<router>", "command": "<command>"}'


@dataclass
class ToynetConfig:
    name: str = "toynet"  # the cell key
    kind: str = "toynet"  # the app
    task: str = "mitigate"  # mitigate | detect | localize

    def validate(self) -> None:
        if self.task not in TASKS:
            raise ConfigError(f"app.task={self.task}; choose one of: {', '.join(TASKS)}")


def intent(routers: int, base: int) -> dict[str, Any]:
    """Every router's intended interfaces, addresses and routes."""
    lans = [f"10.{base}.{i}.0/24" for i in range(1, routers + 1)]
    return {
        f"r{i}": {
            "up": {"eth0": True, "eth1": True},
            "addr": {"eth0": f"10.{base}.{i}.1/24", "eth1": f"10.255.{base}.{i}/24"},
            "routes": sorted(set(lans) - {lans[i - 1]}),
        }
        for i in range(1, routers + 1)
    }


def deviations(state: dict[str, Any], want: dict[str, Any]) -> list[list[str]]:
    """[device, component, kind] of everything that differs from the intent, sorted."""
    out = []
    for device, have in state.items():
        for iface, up in have["up"].items():
            if up != want[device]["up"][iface]:
                out.append([device, iface, "link.down"])
        for iface, addr in have["addr"].items():
            if addr != want[device]["addr"][iface]:
                out.append([device, iface, "addr.wrong"])
        for prefix in sorted(set(want[device]["routes"]) - set(have["routes"])):
            out.append([device, f"route:{prefix}", "route.missing"])
    return sorted(out)


def inject(state: dict[str, Any], fault: list[str]) -> None:
    device, component, kind = fault
    if kind == "link.down":
        state[device]["up"][component] = False
    elif kind == "addr.wrong":
        state[device]["addr"][component] = "10.99.99.99/24"
    else:
        state[device]["routes"].remove(component.removeprefix("route:"))


def fix_command(fault: list[str], want: dict[str, Any]) -> str:
    device, component, kind = fault
    if kind == "link.down":
        return f"set {component} up"
    if kind == "addr.wrong":
        return f"addr {component} {want[device]['addr'][component]}"
    return f"route add {component.removeprefix('route:')}"


def show(state: dict[str, Any], device: str) -> str:
    have = state[device]
    lines = [
        f"{iface} {'up' if have['up'][iface] else 'DOWN'} {have['addr'][iface]}"
        for iface in ("eth0", "eth1")
    ]
    return "\n".join([*lines, "routes: " + " ".join(have["routes"])])


class ToynetFormat:
    instructions = FORMAT
    example = '{"device": "r1", "command": "show"}'
    action = Action(
        "run_command",
        "Run one command on one router: show, set IF up|down, addr IF A/L, route add|del P.",
        {
            "type": "object",
            "properties": {"device": {"type": "string"}, "command": {"type": "string"}},
            "required": ["device", "command"],
            "additionalProperties": False,
        },
    )
    diagnostics = (
        Action(
            "peek",
            "Show one router's interfaces and routes (uses no turn).",
            {
                "type": "object",
                "properties": {"device": {"type": "string"}},
                "required": ["device"],
                "additionalProperties": False,
            },
        ),
    )

    def check(self, reply: str) -> str | None:
        parsed = parse(reply)
        return parsed if isinstance(parsed, str) else None

    def render(self, arguments: dict[str, Any]) -> str:
        return json.dumps({"device": arguments.get("device"), "command": arguments.get("command")})


def parse(reply: str) -> tuple[str, str] | str:
    try:
        value = json.loads(reply) if len(reply) < 4096 else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        return f"the reply is not a JSON object; reply with {FORMAT}"
    device, command = value.get("device"), value.get("command")
    if not isinstance(device, str) or not isinstance(command, str) or not command.split():
        return f'the object needs "device" and "command" strings; reply with {FORMAT}'
    return device, command


class ToynetEpisode:
    def __init__(self, query: Query) -> None:
        truth = query.ground_truth
        self.query = query
        self.want = intent(truth["routers"], truth["base"])
        self.state = copy.deepcopy(self.want)
        for fault in truth["faults"]:
            inject(self.state, fault)
        self.max_turns = 3 + 3 * query.level  # the turn budget of the level
        self.read_budget = 400 * query.level  # bytes of output, small on purpose

    def observe(self) -> str:
        return self.query.prompt

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        device = arguments.get("device")
        if name != "peek" or device not in self.state:
            return f"no such diagnostic or router: {name} {device!r}"
        return show(self.state, device)

    def step(self, reply: str) -> StepResult:
        parsed = parse(reply)
        if isinstance(parsed, str):
            return StepResult("", StepStatus.PARSE_ERROR, parsed, error=parsed)
        device, command = parsed
        words = command.split()
        action = f"{device}: {command}"
        if device not in self.state:
            why = f"no router {device!r}; the routers are {', '.join(self.state)}"
            return self._result(action, StepStatus.EXEC_ERROR, why, why)
        if words[0] == "show":
            return self._result(action, StepStatus.OK, show(self.state, device))
        if words[0] not in WRITES:
            why = f"unknown command {words[0]!r}: show, set, addr or route"
            return self._result(action, StepStatus.EXEC_ERROR, why, why)
        if self.query.read_only:
            why = f"read-only episode: {words[0]} would change the network"
            return self._result(action, StepStatus.BLOCKED, why, why)
        why = self._write(self.state[device], words)
        status = StepStatus.OK if why is None else StepStatus.EXEC_ERROR
        return self._result(action, status, why or "done", why)

    def _write(self, have: dict[str, Any], words: list[str]) -> str | None:
        if words[0] == "set" and len(words) == 3 and words[1] in have["up"]:
            have["up"][words[1]] = words[2] == "up"
        elif words[0] == "addr" and len(words) == 3 and words[1] in have["addr"]:
            have["addr"][words[1]] = words[2]
        elif words[0] == "route" and len(words) == 3 and words[1] in ("add", "del"):
            routes = set(have["routes"]) - {words[2]}
            have["routes"] = sorted(routes | ({words[2]} if words[1] == "add" else set()))
        else:
            return f"cannot read {' '.join(words)!r}"
        return None

    def _result(
        self, action: str, status: StepStatus, output: str, error: str | None = None
    ) -> StepResult:
        wrong = deviations(self.state, self.want)
        done = self.query.task == "mitigate" and not wrong
        return StepResult(action, status, output, {"wrong": wrong}, done=done, error=error)


class _Environment:
    def __enter__(self) -> _Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextlib.contextmanager
    def episode(self, query: Query) -> Iterator[ToynetEpisode]:
        yield ToynetEpisode(query)


class ToynetApp:
    reply_format = ToynetFormat()
    few_shot = (("Toynet: fix r1.", '{"device": "r1", "command": "show"}'),)

    def __init__(self, cfg: ToynetConfig, cache_dir: Any, shared: Any) -> None:
        self.cfg, self.name = cfg, cfg.name

    def vocabulary(self, level: int) -> Vocabulary:
        return VOCABULARY

    def generate(
        self, level: int, seed: int, count: int, *, allow_repeats: bool = False
    ) -> Iterator[Query]:
        task = self.cfg.task
        keys = KeyTracker(self.name, level, seed, allow_repeats=allow_repeats)
        for index in range(count):
            rng = query_rng(seed, level, index)

            def draw(rng: Any = rng) -> tuple[str, dict[str, Any]]:
                routers, base = rng.randint(2 + level, 9 + level), rng.randrange(10)
                faults: list[list[str]] = []
                if not (task == "detect" and rng.random() < 0.5):
                    while len(faults) < level:
                        fault = _fault(rng, routers, base)
                        if all(f[:2] != fault[:2] for f in faults):
                            faults.append(fault)
                faults.sort()
                asked = [task] if task != "mitigate" else []  # mitigate keys as before tasks
                truth = {"routers": routers, "base": base, "faults": faults}
                return query_key(*asked, routers, base, faults), truth

            def build(truth: dict[str, Any], index: int = index) -> Query:
                return _query(self.name, task, level, seed, index, truth)

            taken = keys.take(index, draw, build, max_draws=20)
            yield stamp(taken.value, taken)

    def capacity(self, level: int) -> Capacity:
        operations = dict.fromkeys(VOCABULARY.kinds) | {"healthy": None}
        return Capacity(None, operations, False, None, how="not counted: ample for the tests")

    def environment(self) -> _Environment:
        return _Environment()

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        truth = query.ground_truth
        faults = truth["faults"]
        if query.task == "mitigate":
            want = intent(truth["routers"], truth["base"])
            fault = faults[min(turn, len(faults)) - 1]
            return json.dumps({"device": fault[0], "command": fix_command(fault, want)})
        looked = sorted({f[0] for f in faults}) or ["r1"]
        if turn <= len(looked):  # the evidence first: the faulty routers' state
            return json.dumps({"device": looked[turn - 1], "command": "show"})
        answer: dict[str, Any] = {"healthy": truth["healthy"]}
        if query.task == "localize":
            answer["causes"] = truth["causes"]
        return json.dumps({"answer": answer})

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        if query.task != "mitigate":
            return answer_verdict(query, steps)
        wrong = [tuple(f) for f in query.ground_truth["faults"]]
        safe = []
        for step in steps:
            now = [tuple(f) for f in step.evidence.get("wrong", wrong)]
            safe.append(set(now) <= set(wrong))
            wrong = now
        correct = not wrong
        last = steps[-1] if steps else None
        outcome = Outcome.CORRECT if correct else Outcome.WRONG
        if not correct and last is not None and last.status is not StepStatus.OK:
            outcome = Outcome(last.status.value)
        return Verdict(outcome, correct, all(safe), safe)


def _fault(rng: Any, routers: int, base: int) -> list[str]:
    device = rng.randint(1, routers)
    kind = rng.choice(VOCABULARY.kinds)
    if kind == "route.missing":
        other = rng.choice([i for i in range(1, routers + 1) if i != device])
        return [f"r{device}", f"route:10.{base}.{other}.0/24", kind]
    return [f"r{device}", rng.choice(["eth0", "eth1"]), kind]


def _query(name: str, task: str, level: int, seed: int, index: int, truth: dict) -> Query:
    routers, base, faults = truth["routers"], truth["base"], truth["faults"]
    prompt = (
        f"Toynet: routers r1..r{routers}. Intent: on every router ri, eth0 is up with "
        f"10.{base}.i.1/24 (its LAN), eth1 is up with 10.255.{base}.i/24 (the core), and "
        f"there is a route to every other router's LAN 10.{base}.j.0/24.\n"
        "Commands, one per turn: show | set IF up|down | addr IF A/L | route add|del P.\n"
        f"Reply with {FORMAT}."
    )
    if task == "mitigate":
        prompt = "Something is broken: fix it.\n" + prompt
    else:
        prompt += "\n" + task_text(task, VOCABULARY)
    causes = [{"device": d, "component": c, "kind": k} for d, c, k in faults]
    ground_truth = {**truth, "healthy": not faults, "causes": causes}
    kinds = "+".join(sorted({f[2] for f in faults})) or "healthy"
    return Query(
        query_id(name, level, seed, index), name, level, seed, index, prompt, "causes",
        kinds, ground_truth, task=task, stratum=f"{routers}/{kinds}",
    )  # fmt: skip
