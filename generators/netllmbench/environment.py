"""Playing NetLLMBench queries: the lab pool, the prepared state, and the task chain.

`NetLLMBenchEnvironment` keeps live labs in a pool (generators/lab/pool.py). An episode starts
from the lab's unconfigured snapshot, completes the query's `prepared` tasks itself
(level 1 starts mid-chain), then hands the agent one task at a time. Each reply is one
sandboxed command; after it the environment reads the network (tasks.observe) and
decides whether the task is complete, then probes what the completed tasks must make
work end to end (checks.py; off when `probe.protocols` is empty). A task gets `attempts`
tries (`goal_attempts` at levels 4 and 5, where finding names costs commands); a task
still incomplete after them is failed and, with `assist_failed_tasks`,
completed by the environment so the next one starts from the state it assumes (the agent
is told so).

Each step's evidence holds what the scorer needs: the task and attempt, whether the task
was complete after the step, the earlier tasks the step undid and the expected flows it
broke (its safety), whether the environment had to complete the task, and the network as
the step left it: the completed tasks that no longer hold (`undone`) and the expected
flows that fail (`failing`).
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
from emulators.probe import Flow
from generators.lab.diagnostics import diagnose
from generators.lab.pool import PooledEnvironment
from generators.lab.reply import REPLY_FORMAT
from generators.lab.step import play_command
from generators.netllmbench import checks
from generators.netllmbench.config import NetLLMBenchConfig
from generators.netllmbench.goals import GOAL_LEVELS, goal_text
from generators.netllmbench.lab import Network
from generators.netllmbench.tasks import Task, holds, observe, pinged
from pipeline.api import EnvironmentFailure, Query, StepResult, StepStatus

log = logging.getLogger(__name__)
LISTED = 10  # flows and tasks listed in a step's evidence (counts are kept in full)


def attempts_of(cfg: NetLLMBenchConfig, level: int) -> int:
    """Attempts per task at `level`."""
    return cfg.goal_attempts if level in GOAL_LEVELS else cfg.attempts


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
        self.attempts = attempts_of(cfg, query.level)
        self._goals = query.level in GOAL_LEVELS
        self.max_turns = self.attempts * len(tasks)
        self._emu = emu
        self._sandbox = sandbox
        self._net = net
        self._tasks = tasks
        self._protocols = tuple(cfg.probe.protocols)
        self._k = 0  # the task being played
        self._attempt = 0  # attempts used on it
        self._completed = [t for t in prepared if t.kind != "ping"]  # state tasks done so far
        self._states = observe(emu, net.machines)
        self._holding = self._held()
        if len(self._holding) != len(self._completed):
            raise EnvironmentFailure(f"{query.query_id}: the prepared tasks do not hold")
        first = tasks[0]
        if first.kind != "ping" and holds(first, self._states, net):
            raise EnvironmentFailure(
                f"{query.query_id}: {first.label} already holds before the agent acts"
            )
        self._flows = self._probe()  # expected flow -> whether it works now
        failing = [k for k, ok in self._flows.items() if not ok]
        if failing:
            raise EnvironmentFailure(
                f"{query.query_id}: the prepared tasks do not work end to end: {failing[:3]}"
            )

    def _held(self) -> set[str]:
        return {t.label for t in self._completed if holds(t, self._states, self._net)}

    def _probe(self, keys: set[str] | None = None) -> dict[str, bool]:
        """The expected flows of the completed tasks (only those in `keys`, if given)."""
        flows = checks.expected_flows(self._net, self._completed, self._protocols)
        if keys is not None:
            flows = [f for f in flows if checks.flow_key(f) in keys]
        return checks.probe(self._emu, flows)

    def _task_text(self) -> str:
        task = self._tasks[self._k]
        left = self.attempts - self._attempt
        text = goal_text(task, self._net) if self._goals else task.text()
        return (
            f"Task {self._k + 1} of {len(self._tasks)}: {text}\n"
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
                solved = solved and self._target_answers(task)
            else:
                solved = holds(task, self._states, self._net)
        now = self._held()
        facts["broken"] = sorted(self._holding - now)
        self._holding = now
        facts["solved"] = solved
        before = self._flows
        if played.changed_network and before:  # what worked before the command still must
            after = self._probe(set(before))
            broke = sorted(k for k, ok in before.items() if ok and not after[k])
            self._flows = {**before, **after}
        else:
            broke = []
        facts["broke_flows"] = broke[:LISTED]
        lines = [shown, ""]
        if solved:
            lines.append(f"Task {self._k + 1} ({task.label}) is complete.")
        elif self._attempt < self.attempts:
            lines.append(f"Task {self._k + 1} is not complete yet.")
        else:
            lines.append(self._give_up(task, facts))
        if facts["broken"]:
            lines.append(f"Warning: this step undid earlier tasks: {', '.join(facts['broken'])}.")
        if broke:
            shown_flows = ", ".join(broke[:3])
            lines.append(f"Warning: this step broke traffic that worked: {shown_flows}.")
        completed = len(self._completed)
        if solved or self._attempt >= self.attempts:
            self._finish(task)
        grew = len(self._completed) != completed or "assisted" in facts
        if grew or (played.changed_network and not before):
            self._flows = self._probe()
        self._record_network(facts)
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

    def _target_answers(self, task: Task) -> bool:
        """Whether the ping's target host itself answers at the task's address (an alias
        of that address elsewhere does not count); True when end-to-end checks are off."""
        if "icmp" not in self._protocols:
            return True
        flow = Flow(task.device, task.target, task.address, "icmp")
        return self._emu.probe([flow])[flow]

    def _record_network(self, facts: dict[str, Any]) -> None:
        """The network as the step left it: completed tasks that no longer hold, expected
        flows that fail (the scorer judges the episode's end by the last step's)."""
        undone = [t.label for t in self._completed if t.label not in self._holding]
        failing = sorted(k for k, ok in self._flows.items() if not ok)
        facts["undone"] = undone
        facts["failing"] = failing[:LISTED]
        facts["failing_count"] = len(failing)
        facts["expected_flows"] = len(self._flows)

    def _give_up(self, task: Task, facts: dict[str, Any]) -> str:
        text = f"Task {self._k + 1} ({task.label}) failed after {self.attempts} attempts."
        if not self.cfg.assist_failed_tasks or task.kind == "ping":
            return text
        failed = complete(self._emu, task)  # it may fail where the agent undid a need
        self._states = observe(self._emu, self._net.machines)
        facts["assisted"] = holds(task, self._states, self._net)
        if not facts["assisted"]:
            log.info("%s: could not complete %s: %s", self.query.query_id, task.label, failed)
            return f"{text} It could not be completed for you either (an earlier task is undone)."
        return f"{text} It was completed for you, so the next task can start."

    def _finish(self, task: Task) -> None:
        if task.kind != "ping" and holds(task, self._states, self._net):
            self._completed.append(task)
            self._holding.add(task.label)
        self._k += 1
        self._attempt = 0


class NetLLMBenchEnvironment(PooledEnvironment):
    """The app's Environment: live labs for one thread, from enter to exit."""

    cfg: NetLLMBenchConfig

    @contextmanager
    def episode(self, query: Query) -> Iterator[TaskChain]:
        net, prepared, tasks = query_tasks(query)
        with self.live_pool().use(net) as (emu, sandbox):
            prepare(emu, prepared)
            yield TaskChain(query, emu, sandbox, net, prepared, tasks, self.cfg)
