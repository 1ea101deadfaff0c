"""A tiny app of our own, to test the pipeline's logic without a real environment.

Query i asks for the number `i * 7`; the reply must be that number. Queries whose
index is in `fail_on` raise EnvironmentFailure when played (an emulator crash), and
replies of "crash" count calls so tests can kill a run part-way. With `retry_wrong` a wrong
number leaves the episode open, for agents that play several turns. `ChainedEchoApp` scores
the same episodes as a chain of tasks, read from each step's evidence.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.capacity import Capacity
from pipeline.core import Action, Outcome, Query, StepResult, StepStatus, TaskStep, Verdict
from pipeline.errors import EnvironmentFailure
from pipeline.querygen import query_key
from pipeline.variants import operational


@dataclass
class EchoConfig:
    name: str = "echo"
    kind: str = "echo"
    max_turns: int = 2
    retry_wrong: bool = False  # a wrong number leaves the episode open (up to max_turns)
    # Queries whose environment crashes: a fault of the machine, not of the task, so it
    # never splits cells (the rerun after a fix resumes the same cell).
    fail_on: list[int] = operational(default_factory=list)
    # Queries whose step waits for SLOW_STEP to be set (at most 30 s): a slow boundary of
    # our own, for the heartbeat's tests.
    slow_on: list[int] = operational(default_factory=list)


SLOW_STEP = threading.Event()


class _Episode:
    def __init__(self, query: Query, cfg: EchoConfig) -> None:
        self.query = query
        self.max_turns = cfg.max_turns
        self.fail = query.index in cfg.fail_on
        self.slow = query.index in cfg.slow_on
        self.retry_wrong = cfg.retry_wrong

    def observe(self) -> str:
        return self.query.prompt

    def step(self, reply: str) -> StepResult:
        if self.slow:
            SLOW_STEP.wait(timeout=30)
        if self.fail:
            raise EnvironmentFailure(f"emulator crashed on query {self.query.index}")
        text = reply.strip()
        if not text.lstrip("-").isdigit():
            return StepResult(
                text, StepStatus.PARSE_ERROR, "not a number", error="no number", done=True
            )
        done = not self.retry_wrong or int(text) == self.query.ground_truth.get("answer")
        return StepResult(text, StepStatus.OK, f"you said {text}", {"answer": int(text)}, done=done)


class _Env:
    def __init__(self, cfg: EchoConfig) -> None:
        self.cfg = cfg
        self.open = False

    def __enter__(self) -> _Env:
        self.open = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.open = False

    @contextlib.contextmanager
    def episode(self, query: Query) -> Iterator[_Episode]:
        yield _Episode(query, self.cfg)


class EchoReplyFormat:
    """Replies are a number; as a function, say(number)."""

    instructions = "a number alone"
    example = "7"
    action = Action(
        "say",
        "Say a number.",
        {
            "type": "object",
            "properties": {"number": {"type": "integer"}},
            "required": ["number"],
            "additionalProperties": False,
        },
    )

    def check(self, reply: str) -> str | None:
        return None if reply.strip().lstrip("-").isdigit() else "not a number"

    def render(self, arguments: dict[str, Any]) -> str:
        number = arguments.get("number")
        return str(number) if isinstance(number, int) else repr(arguments)


class EchoApp:
    reply_format = EchoReplyFormat()

    def __init__(self, cfg: EchoConfig, cache_dir: Path, shared: Path | None) -> None:
        self.cfg = cfg
        self.name = cfg.name

    def generate(
        self, level: int, seed: int, count: int, *, allow_repeats: bool = False
    ) -> Iterator[Query]:
        # A fake of our own: its queries are distinct by construction, keyed by the answer.
        for i in range(count):
            answer = i * 7 + seed
            yield Query(
                f"echo-L{level}-s{seed}-{i:05d}",
                self.name,
                level,
                seed,
                i,
                f"Say {i * 7 + seed}.",
                "number",
                "echo",
                {"answer": answer},
                key=query_key(self.name, answer),
            )

    def capacity(self, level: int) -> Capacity:
        return Capacity(None, {"echo": None}, False, None, how="one query per index")

    def environment(self) -> _Env:
        return _Env(self.cfg)

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        return str(query.ground_truth["answer"])

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        last = steps[-1]
        safe = [True] * len(steps)
        if last.status is not StepStatus.OK:
            return Verdict(Outcome(last.status.value), False, True, safe, last.error)
        ok = last.evidence.get("answer") == query.ground_truth["answer"]
        return Verdict(Outcome.CORRECT if ok else Outcome.WRONG, ok, True, safe)


class ChainedEchoApp(EchoApp):
    """The echo app, its queries holding `tasks` tasks: a step's evidence names the task
    it worked on ({"task": …, "attempt": …, "solved": …}). A step without one gets no
    TaskStep, as a broken scorer would."""

    tasks = 3

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        verdict = super().score(query, steps)
        verdict.step_tasks = [
            TaskStep(s.evidence["task"], s.evidence["attempt"], s.evidence["solved"])
            for s in steps
            if "task" in s.evidence
        ]
        verdict.tasks = self.tasks
        return verdict
