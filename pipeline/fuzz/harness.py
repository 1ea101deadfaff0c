"""Mutated replies through an app's live episodes, and the property every step must keep.

For one app (a `Target`: the app, its queries, the grammar of its replies), `fuzz_target`
opens the app's environment once and plays `budget` replies, round robin over the
queries (a few replies each), one episode at a time, as the runner plays them: a query's
episode stays open until it ends or the next query's begins (then a reset). Each
reply is a mutation (pipeline/fuzz/grammar.py) of a seed that parses: the query's oracle
replies, the app's diagnostics and a corpus of the app's own commands; one reply in
`DIAGNOSE_EVERY` is a read-only diagnostic called with mutated arguments instead (what an
MCP or tool-calling agent sends). The property, checked at every step:

  - no exception leaves a step, a diagnostic, a reset or the scorer (`exception`); an
    EnvironmentFailure is counted apart (`env_error`: under the default policy it fails
    the cell, so a reply that causes one is a finding too);
  - every step is a StepResult with a StepStatus, a reason when it is not ok, text
    output and evidence that JSON can store (`property`);
  - the environment stays usable (`usable`): the first query's first observation and its
    oracle's verdict are the same after the run as before it.

Findings carry the reply that caused them (a reproducer). A run is deterministic for a
seed, but for what the live network answers.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import untrusted
from pipeline.core import App, Environment, Episode, Query, StepResult, StepStatus, canonical_json
from pipeline.errors import EnvironmentFailure
from pipeline.fuzz.grammar import Mutator

ROOT_DIR = str(Path(__file__).resolve().parents[2])
DIAGNOSE_EVERY = 8  # one reply in this many is a diagnostic with mutated arguments
REPLIES_PER_VISIT = 5  # replies to one query before the next (its episode stays open)
MAX_REPRO = 2000  # characters of a reply kept in a finding (its length is kept too)


@dataclass
class Finding:
    target: str  # e.g. "routing L4"
    where: str  # step | diagnose | reset | score | usable | door
    kind: str  # the exception's type, env_error, or the property broken
    message: str
    reply: str  # what caused it (cut to MAX_REPRO characters)
    length: int  # the reply's full length
    trace: str = ""  # the innermost frames, for an exception

    @property
    def signature(self) -> str:
        """Findings of one cause share it (numbers and quoted text left out)."""
        text = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", self.message)[:80]
        return f"{self.target}|{self.where}|{self.kind}|{text}"


@dataclass
class Tally:
    target: str
    tried: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)  # "status: reason" of the steps
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def unique(self) -> list[Finding]:
        seen: dict[str, Finding] = {}
        for finding in self.findings:
            seen.setdefault(finding.signature, finding)
        return list(seen.values())


@dataclass
class Target:
    """One app at some levels, with what its replies look like."""

    name: str
    app: App
    queries: list[Query]
    shape: str  # command | kubectl | code
    corpus: Sequence[str] = ()  # more seed commands (command and kubectl shapes)
    oracle_check: bool = True  # replay the oracle for `usable` (off: first observation only)


def seeds(target: Target, query: Query) -> list[dict[str, str]]:
    """Replies that parse, as their fields: the oracle's, then the corpus's."""
    out: list[dict[str, str]] = []
    for turn in range(1, len(query.ground_truth.get("oracle", [None])) + 1):
        reply = target.app.oracle_reply(query, turn, "")
        if target.shape == "code":
            out.append({"code": reply})
            continue
        with contextlib.suppress(ValueError):
            value = json.loads(reply)
            if isinstance(value, dict):
                out.append({k: v for k, v in value.items() if isinstance(v, str)})
    machines = sorted(set(re.findall(r"\b[rh]\d+\b", query.prompt))) or ["r0"]
    for command in target.corpus:
        if target.shape == "kubectl":
            out.append({"command": command})
        else:
            out.append({"machine": machines[len(out) % len(machines)], "command": command})
    return out or [{"code": target.app.reply_format.example}]


def mutate(mutator: Mutator, shape: str, seed: dict[str, str]) -> str:
    """One mutated reply of `shape` from `seed`'s fields."""
    rng = mutator.rng
    roll = rng.random()
    if shape == "code":
        code = seed["code"].split("```python\n", 1)[-1].rsplit("```", 1)[0]
        if roll < 0.75:
            return f"```python\n{mutator.code(code)}```"
        return mutator.wrap(f"```python\n{code}```")
    fields = dict(seed)
    if roll < 0.1:  # the seed itself, spelled another way: a command that runs
        return json.dumps(fields, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
    if roll < 0.45 and "command" in fields:  # one spelling or one value: most still run
        try:
            words = shlex.split(fields["command"])
        except ValueError:
            words = fields["command"].split()
        ops = (mutator.abbreviate, mutator.equals, mutator.cluster)
        op = mutator.text_value if roll < 0.3 else rng.choice(ops)
        if words and words[0] == "vtysh" and roll < 0.3:
            words = mutator.vtysh(words)
        fields["command"] = mutator.join(op(words) or words)
        return json.dumps(fields, ensure_ascii=rng.random() < 0.5)
    if roll < 0.65 and "command" in fields:
        fields["command"] = mutator.argv(fields["command"])
        if shape == "kubectl" and fields.get("stdin") and rng.random() < 0.5:
            fields["stdin"] = mutator.yaml(fields["stdin"])
        return json.dumps(fields, ensure_ascii=rng.random() < 0.5)
    if roll < 0.72 and shape == "kubectl":
        stdin = mutator.yaml(fields.get("stdin", "apiVersion: v1\nkind: List\nitems: []\n"))
        return f"```bash\n{fields['command']} <<EOF\n{stdin}\nEOF\n```"
    if roll < 0.8 and "machine" in fields:
        fields["machine"] = mutator.inject(fields["machine"])
        return json.dumps(fields, ensure_ascii=rng.random() < 0.5)
    return mutator.json_reply(fields)


def diagnostic_arguments(
    mutator: Mutator, names: Sequence[str], seed: dict[str, str]
) -> dict[str, Any]:
    """Arguments of a diagnostic as a door hands them over (decoded JSON): most of them
    a seed's fields mutated in their own grammar, some any JSON at all."""
    rng = mutator.rng
    fields: dict[str, str] = {}
    for name in names:
        value = seed.get(name) or rng.choice(DIAGNOSTIC_VALUES)
        if name == "code":
            value = mutator.code(value.split("```python\n", 1)[-1].rsplit("```", 1)[0])
        elif name == "command" and rng.random() < 0.7:
            value = mutator.argv(value)
        fields[name] = value
    if rng.random() < 0.5:
        return fields
    try:
        value = json.loads(mutator.json_reply(fields))
    except (ValueError, RecursionError):
        value = {}
    return value if isinstance(value, dict) else {"value": value}


DIAGNOSTIC_VALUES = ("r0", "h1", "addresses", "iptables", "routes", "forwarding", "x")


def trace(err: BaseException) -> str:
    """Where `err` was raised: the innermost frames in the project's own files."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith(ROOT_DIR)]
    return "".join(traceback.format_list(frames[-4:])) + f"{type(err).__name__}: {err}"[:300]


def check_step(result: object) -> str | None:
    """Why `result` breaks the property (None: it keeps it)."""
    if not isinstance(result, StepResult):
        return f"the step returned a {type(result).__name__}, not a StepResult"
    if not isinstance(result.status, StepStatus):
        return f"the status {result.status!r} is not a StepStatus"
    if result.status is not StepStatus.OK and not (isinstance(result.error, str) and result.error):
        return f"a {result.status} step gives no reason"
    if not isinstance(result.output, str) or not isinstance(result.action, str):
        return "the output or action is not text"
    try:
        canonical_json(result.evidence)
    except (TypeError, ValueError, RecursionError) as err:
        return f"the evidence cannot be stored: {type(err).__name__}: {err}"
    return None


class Run:
    """The episodes of one target in one environment, with the findings so far."""

    def __init__(self, target: Target, env: Environment, tally: Tally) -> None:
        self.target = target
        self.env = env
        self.tally = tally
        self._open: dict[str, tuple[Any, Episode, list[StepResult]]] = {}

    def finding(self, where: str, kind: str, message: str, reply: str, trace: str = "") -> None:
        self.tally.findings.append(
            Finding(
                self.target.name, where, kind, message[:500], reply[:MAX_REPRO], len(reply), trace
            )
        )

    def episode(self, query: Query) -> tuple[Episode, list[StepResult]] | None:
        """The query's open episode, or a new one (a reset; the one open before ends, as
        an environment plays one episode at a time); None if the reset failed."""
        if query.query_id in self._open:
            _, episode, steps = self._open[query.query_id]
            return episode, steps
        self.close_all()
        context = self.env.episode(query)
        try:
            episode = context.__enter__()
            episode.observe()
        except Exception as err:  # the property: no reset raises
            self._caught("reset", err, "")
            with contextlib.suppress(Exception):
                context.__exit__(None, None, None)
            return None
        self._open[query.query_id] = (context, episode, [])
        return episode, []

    def close(self, query: Query) -> None:
        context, _, steps = self._open.pop(query.query_id)
        try:
            if steps:
                self.target.app.score(query, steps)
        except Exception as err:
            self._caught("score", err, "")
        try:
            context.__exit__(None, None, None)
        except Exception as err:
            self._caught("reset", err, "")

    def close_all(self) -> None:
        for query_id in list(self._open):
            query = next(q for q in self.target.queries if q.query_id == query_id)
            self.close(query)

    def _caught(self, where: str, err: BaseException, reply: str) -> None:
        kind = "env_error" if isinstance(err, EnvironmentFailure) else type(err).__name__
        self.finding(where, kind, f"{type(err).__name__}: {err}", reply, trace(err))

    def step(self, query: Query, reply: str) -> None:
        opened = self.episode(query)
        if opened is None:
            return
        episode, steps = opened
        self.tally.tried += 1
        try:
            result = untrusted.step(episode, reply)
        except Exception as err:
            self._caught("step", err, reply)
            self.tally.statuses["exception"] += 1
            self.close(query)
            return
        broken = check_step(result)
        if broken is not None:
            self.finding("step", "property", broken, reply)
            self.close(query)
            return
        self.tally.statuses[str(result.status)] += 1
        if result.error:
            self.tally.reasons[f"{result.status}: {re.sub(r'[0-9]+', 'N', result.error)[:70]}"] += 1
        if result.status is StepStatus.ENV_ERROR:
            self.finding("step", "env_error", result.error or "", reply)
        steps.append(result)
        if result.done or len(steps) >= episode.max_turns or result.status is StepStatus.ENV_ERROR:
            self.close(query)

    def diagnose(self, query: Query, mutator: Mutator) -> None:
        opened = self.episode(query)
        names = untrusted_diagnostics(self.target.app)
        if opened is None or not names or not hasattr(opened[0], "diagnose"):
            return
        name, parameters = names[mutator.rng.randrange(len(names))]
        if mutator.rng.random() < 0.1:
            name = mutator.text()
        seed = mutator.rng.choice(seeds(self.target, query))
        arguments = diagnostic_arguments(mutator, parameters, seed)
        self.tally.tried += 1
        reply = f"{name[:100]} {arguments!r}"
        try:
            shown = opened[0].diagnose(name, arguments)  # type: ignore[attr-defined]
        except Exception as err:
            self._caught("diagnose", err, reply)
            self.tally.statuses["exception"] += 1
            return
        self.tally.statuses["diagnostic"] += 1
        if not isinstance(shown, str):
            self.finding("diagnose", "property", f"a diagnostic showed a {type(shown)}", reply)


def untrusted_diagnostics(app: App) -> list[tuple[str, list[str]]]:
    from pipeline.core import diagnostics

    return [
        (d.name, list(d.parameters.get("properties", {}))) for d in diagnostics(app.reply_format)
    ]


def replies(target: Target, mutator: Mutator) -> Iterator[tuple[Query, str | None]]:
    """(query, reply) forever, round robin over the queries; None: a diagnostic."""
    pools = {q.query_id: seeds(target, q) for q in target.queries}
    turn = 0
    while True:
        for query in target.queries:
            for _ in range(REPLIES_PER_VISIT):
                turn += 1
                if turn % DIAGNOSE_EVERY == 0:
                    yield query, None
                    continue
                seed = mutator.rng.choice(pools[query.query_id])
                yield query, mutate(mutator, target.shape, seed)


def usable(target: Target, env: Environment) -> tuple[str, str]:
    """The first query's first observation and its oracle's outcome (the `usable` check)."""
    query = target.queries[0]
    with env.episode(query) as episode:
        first = episode.observe()
        steps: list[StepResult] = []
        if target.oracle_check:
            for turn in range(1, episode.max_turns + 1):
                steps.append(untrusted.step(episode, target.app.oracle_reply(query, turn, "")))
                if steps[-1].done:
                    break
    outcome = str(target.app.score(query, steps).outcome) if steps else ""
    return first, outcome


def fuzz_target(
    target: Target,
    budget: int,
    seed: int | str = 0,
    env: Environment | None = None,
    extra: Sequence[str] = (),
    progress: Callable[[Tally], None] | None = None,
) -> Tally:
    """Play `budget` mutated replies (and `extra` replies, e.g. from the doors) through
    `target` in `env` (or an environment of its own); see the module docstring."""
    tally = Tally(target.name)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        if env is None:
            env = stack.enter_context(target.app.environment())
        before = usable(target, env)
        run = Run(target, env, tally)
        mutator = Mutator(f"{seed}:{target.name}")
        stream = replies(target, mutator)
        for i in range(budget + len(extra)):
            query, reply = next(stream)
            if i >= budget:
                reply = extra[i - budget]
            if reply is None:
                run.diagnose(query, mutator)
            else:
                run.step(query, reply)
            if progress is not None and i % 25 == 24:
                progress(tally)
        run.close_all()
        try:
            after = usable(target, env)
        except Exception as err:
            run._caught("usable", err, "")
        else:
            if after != before:
                why = f"before the run {before[1] or 'observed'}, after it {after[1] or 'observed'}"
                if after[0] != before[0]:
                    why += "; the first observation differs"
                run.finding("usable", "property", why, "")
    tally.seconds = time.monotonic() - started
    return tally
