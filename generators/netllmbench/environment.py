"""Playing NetLLMBench queries: the lab pool, the prepared state, and the task chain.

`NetLLMBenchEnvironment` keeps live labs in a pool (generators/lab/pool.py). An episode starts
from the lab's unconfigured snapshot, completes the query's `prepared` tasks itself
(level 1 starts mid-chain), then hands the agent one task at a time. Each reply is one
sandboxed command; after it the environment reads the network (tasks.observe) and
decides whether the task is complete. A task gets `attempts` tries; a task still
incomplete after them is failed and, with `assist_failed_tasks`, completed by the
environment so the next one starts from the state it assumes (the agent is told so).

Each step's evidence holds what the scorer needs: the task and attempt, whether the task
was complete after the step, the earlier tasks the step undid (its safety), and whether
the environment had to complete the task.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from emulators.base import Emulator
from emulators.netcmd.sandbox import CommandSandbox
from generators.lab.diagnostics import diagnose
from generators.lab.pool import PooledEnvironment
from generators.lab.reply import REPLY_FORMAT
from generators.lab.step import play_command
from generators.netllmbench.config import NetLLMBenchConfig
from generators.netllmbench.lab import Network
from generators.netllmbench.tasks import Task, holds, observe, pinged
from pipeline.core import Query, StepResult, StepStatus
from pipeline.errors import EnvironmentFailure

log = logging.getLogger(__name__)


def query_tasks(query: Query) -> tuple[Network, list[Task], list[Task]]:
    """(network, tasks completed before the agent starts, tasks the agent plays)."""
    truth = query.ground_truth
    tasks = [Task.from_json(t) for t in truth["tasks"]]
    first = int(truth["first"])
    return Network.from_json(truth["network"]), tasks[:first], tasks[first:]


def complete(emu: Emulator, task: Task) -> str | None:
    """Carry out a configuration task as the environment (no sandbox, trusted argv);
    None when the command ran cleanly, else what it printed."""
    argv = task.assist()
    if argv is None:
        return None
    result = emu.run(task.device, argv, timeout_s=10.0, output_bytes=4096)
    if result.exit_code == 0:
        return None
    output = result.output.strip()[:200]
    return f"`{shlex.join(argv)}` on {task.device} exited {result.exit_code}: {output}"


def prepare(emu: Emulator, tasks: list[Task]) -> None:
    """Complete the tasks done before the agent starts; a failure is the environment's."""
    for task in tasks:
        failed = complete(emu, task)
        if failed is not None:
            raise EnvironmentFailure(f"preparing {task.label}: {failed}")


class TaskChain:
    """One query being played; see the module docstring."""

    def __init__(
        self,
        query: Query,
        emu: Emulator,
        sandbox: CommandSandbox,
        net: Network,
        prepared: list[Task],
        tasks: list[Task],
        cfg: NetLLMBenchConfig,
    ) -> None:
        self.query = query
        self.cfg = cfg
        self.max_turns = cfg.attempts * len(tasks)
        self._emu = emu
        self._sandbox = sandbox
        self._net = net
        self._tasks = tasks
        self._k = 0  # the task being played
        self._attempt = 0  # attempts used on it
        self._completed = [t for t in prepared if t.kind != "ping"]  # state tasks done so far
        self._states = observe(emu, net.machines)
        self._holding = {t.label for t in self._completed if holds(t, self._states)}
        if len(self._holding) != len(self._completed):
            raise EnvironmentFailure(f"{query.query_id}: the prepared tasks do not hold")
        first = tasks[0]
        if first.kind != "ping" and holds(first, self._states):
            raise EnvironmentFailure(
                f"{query.query_id}: {first.label} already holds before the agent acts"
            )

    def _task_text(self) -> str:
        task = self._tasks[self._k]
        left = self.cfg.attempts - self._attempt
        return (
            f"Task {self._k + 1} of {len(self._tasks)}: {task.text()}\n"
            f"({left} attempt{'s' * (left > 1)} left for this task.) {REPLY_FORMAT}"
        )

    def observe(self) -> str:
        return f"{self.query.prompt}\n\n{self._task_text()}"

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        """A read-only look (generators/lab/diagnostics.py): no attempt is used."""
        return diagnose(self._sandbox, name, arguments)

    def step(self, reply: str) -> StepResult:
        task = self._tasks[self._k]
        self._attempt += 1
        started = time.perf_counter()
        played = play_command(self._sandbox, reply)
        facts: dict[str, Any] = {"task": task.label, "attempt": self._attempt, **played.facts}
        status, error, shown, action = played.status, played.error, played.shown, played.action
        solved = False
        if played.command is not None and played.result is not None:
            if played.changed_network:
                self._states = observe(self._emu, self._net.machines)
            result = played.result
            if task.kind == "ping":
                machine = played.command.machine
                solved = pinged(task, machine, result.argv, result.exit_code, result.output)
            else:
                solved = holds(task, self._states)
        now = {t.label for t in self._completed if holds(t, self._states)}
        facts["broken"] = sorted(self._holding - now)
        self._holding = now
        facts["solved"] = solved
        lines = [shown, ""]
        if solved:
            lines.append(f"Task {self._k + 1} ({task.label}) is complete.")
        elif self._attempt < self.cfg.attempts:
            lines.append(f"Task {self._k + 1} is not complete yet.")
        else:
            lines.append(self._give_up(task, facts))
        if facts["broken"]:
            lines.append(f"Warning: this step undid earlier tasks: {', '.join(facts['broken'])}.")
        if solved or self._attempt >= self.cfg.attempts:
            self._finish(task)
        done = self._k >= len(self._tasks)
        if not done:
            lines += ["", self._task_text()]
        return StepResult(
            action=action,
            status=status,
            output="\n".join(lines),
            evidence=facts,
            done=done,
            error=error if status is not StepStatus.OK else None,
            exec_s=time.perf_counter() - started,
        )

    def _give_up(self, task: Task, facts: dict[str, Any]) -> str:
        text = f"Task {self._k + 1} ({task.label}) failed after {self.cfg.attempts} attempts."
        if not self.cfg.assist_failed_tasks or task.kind == "ping":
            return text
        failed = complete(self._emu, task)  # it may fail where the agent undid a need
        self._states = observe(self._emu, self._net.machines)
        facts["assisted"] = holds(task, self._states)
        if not facts["assisted"]:
            log.info("%s: could not complete %s: %s", self.query.query_id, task.label, failed)
            return f"{text} It could not be completed for you either (an earlier task is undone)."
        return f"{text} It was completed for you, so the next task can start."

    def _finish(self, task: Task) -> None:
        if task.kind != "ping" and holds(task, self._states):
            self._completed.append(task)
            self._holding.add(task.label)
        self._k += 1
        self._attempt = 0


class NetLLMBenchEnvironment(PooledEnvironment):
    """The app's Environment: live labs for one thread, from enter to exit."""

    cfg: NetLLMBenchConfig

    @contextmanager
    def episode(self, query: Query) -> Iterator[TaskChain]:
        pool = self.live_pool()
        net, prepared, tasks = query_tasks(query)
        emu, sandbox = pool.get(net)
        prepare(emu, prepared)
        yield TaskChain(query, emu, sandbox, net, prepared, tasks, self.cfg)
