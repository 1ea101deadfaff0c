"""`CommandSandbox`: run an agent's command on one named machine of a running lab.

Order of checks: the machine must be one the agent may use (routers and hosts, never a
switch), then the policy (policy.check) must allow the command; only then does it run,
through the emulator's `run` (no shell, per-command timeout, output cap), inside the jail
of confine.py: what the command can touch is bounded by the kernel, whatever the policy
let through. Around a command that changes anything, the device's kernel objects (rules,
qdiscs, routes, addresses, policy rules, lasting neighbour entries) are counted
(budget.py): it is refused when it would certainly break a bound, and what it added is
removed again when it broke one after all (a `limit` either way). The modules the
allowed kinds need are loaded once, when the first sandbox is made (kinds.preload).
Every outcome is a `SandboxResult` with a status the app maps to a step status.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace

from emulators.base import CommandResult, Emulator
from emulators.jail import Jail, joined_cgroup
from emulators.netcmd import budget, confine, kinds, readonly, vtysh
from emulators.netcmd.policy import check
from emulators.zygote.spec import Root, Turn
from pipeline.core import StepStatus


class Status(enum.StrEnum):
    OK = "ok"  # ran and exited 0
    FAILED = "failed"  # ran and exited non-zero
    REJECTED = "rejected"  # refused: never ran
    LIMIT = "limit"  # past a bound on the device's objects: refused, or run and undone
    TIMEOUT = "timeout"  # killed at the time limit
    OUTPUT_LIMIT = "output_limit"  # killed past the output cap


# How an app records each outcome as a step (pipeline.core.StepStatus).
STEP_STATUS = {
    Status.OK: StepStatus.OK,
    Status.FAILED: StepStatus.EXEC_ERROR,
    Status.REJECTED: StepStatus.BLOCKED,
    Status.LIMIT: StepStatus.RESOURCE_LIMIT,
    Status.TIMEOUT: StepStatus.TIMEOUT,
    Status.OUTPUT_LIMIT: StepStatus.RESOURCE_LIMIT,
}


@dataclass(frozen=True)
class SandboxResult:
    status: Status
    machine: str
    command: str
    argv: tuple[str, ...] = ()  # what ran; () when rejected
    output: str = ""  # what the agent is shown
    exit_code: int | None = None
    reason: str | None = None  # one line: why it was rejected or failed
    exec_s: float = 0.0


class CommandSandbox:
    """The gate between an agent's {"machine", "command"} and a lab."""

    def __init__(
        self,
        emulator: Emulator,
        machines: Iterable[str],
        *,
        timeout_s: float = 5.0,
        output_bytes: int = 16384,
        switches: Iterable[str] = (),
        vty_dirs: dict[str, str] | None = None,
        read_only: bool = False,
    ) -> None:
        self.emulator = emulator
        self.machines = tuple(machines)
        self.switches = frozenset(switches)
        self.timeout_s = timeout_s
        self.output_bytes = output_bytes
        # Backends whose devices are network namespaces say where (both real ones do).
        self._netns = getattr(emulator, "netns_path", None)
        # Routers running FRR: their folder of vty sockets and vtysh.conf (emulators/netcmd/
        # vtysh.py), the only FRR their vtysh sees.
        self.vty_dirs = dict(vty_dirs or {})
        # A read-only episode (detect, localize): commands that may change anything are
        # refused (readonly.py), so a diagnosis never fixes its way to an answer.
        self.read_only = read_only
        kinds.preload()

    def run(self, machine: str, command: str) -> SandboxResult:
        if machine not in self.machines:
            if machine in self.switches:
                why = f"{machine} is a switch (a Linux bridge); run commands on a router or a host"
            else:
                why = f"there is no machine {machine!r}; machines: {', '.join(self.machines)}"
            return SandboxResult(Status.REJECTED, machine, command, reason=why, output=why)
        checked = check(command)
        if not checked.allowed:
            why = f"command refused: {checked.reason}"
            return SandboxResult(Status.REJECTED, machine, command, reason=why, output=why)
        if self.read_only:
            why = readonly.write_refusal(checked.argv)
            if why:
                why = f"command refused: {why}"
                return SandboxResult(Status.REJECTED, machine, command, reason=why, output=why)
        if checked.argv[0].endswith("/vtysh"):
            return self._vtysh(machine, command, checked.argv)
        watched = None
        if self._netns is not None:
            watched, why = budget.watch(self._netns(machine), checked.argv, checked.writes)
            if why:
                return SandboxResult(Status.LIMIT, machine, command, reason=why, output=why)
        turn = confine.lab_turn(checked.argv, checked.writes)
        oneshot = confine.jail(checked.argv[:1], checked.writes)
        result = self._jailed(machine, confine.lab_root(), turn, oneshot)
        done = self._result(machine, command, replace(result, argv=checked.argv))
        why = budget.settle(watched) if watched is not None else None
        if why:  # it ran, and what it added is gone again
            output = f"{done.output.rstrip()}\n[{why}]".lstrip()
            return replace(done, status=Status.LIMIT, reason=why, output=output)
        return done

    def _vtysh(self, machine: str, command: str, argv: tuple[str, ...]) -> SandboxResult:
        """vtysh on a router running FRR, jailed with only that router's vty sockets."""
        vty_dir = self.vty_dirs.get(machine)
        if vty_dir is None:
            why = f"{machine} runs no routing daemons; vtysh works on the FRR routers only"
            return SandboxResult(Status.REJECTED, machine, command, reason=why, output=why)
        checked = vtysh.check_vtysh(list(argv[1:]), vtysh.DAEMONS)
        if self._netns is not None:
            why = budget.vtysh_refusal(self._netns(machine), checked.lines)
            if why:
                return SandboxResult(Status.LIMIT, machine, command, reason=why, output=why)
        inner = vtysh.argv(argv[0], checked)
        root = vtysh.zygote_root(argv[0], self.vty_dirs, confine.MEMORY_BYTES, confine.PIDS)
        turn = vtysh.zygote_turn(inner, self.vty_dirs, machine)
        result = self._jailed(machine, root, turn, vtysh.jail(argv[0], vty_dir))
        return self._result(machine, command, replace(result, argv=argv))

    def _jailed(self, machine: str, root: Root, turn: Turn, oneshot: Jail) -> CommandResult:
        """Run `turn` jailed on `machine`, in a memory and pids cgroup of its own: forked
        from the lab's jail for `root`, or in `oneshot` (the same jail, made afresh)."""
        run_jailed = getattr(self.emulator, "run_jailed", None)
        if run_jailed is not None:
            return run_jailed(
                machine, root, turn, timeout_s=self.timeout_s, output_bytes=self.output_bytes
            )
        with joined_cgroup(root.label, root.memory_bytes, root.pids) as prefix:
            return self.emulator.run(
                machine,
                oneshot.argv(turn.argv),
                timeout_s=self.timeout_s,
                output_bytes=self.output_bytes,
                host_prefix=prefix,
            )

    def _result(self, machine: str, command: str, result: CommandResult) -> SandboxResult:
        output, reason = result.output, None
        if result.timed_out:
            status, reason = Status.TIMEOUT, f"the command was stopped after {self.timeout_s:g} s"
        elif result.truncated:
            status = Status.OUTPUT_LIMIT
            reason = f"the output passed {self.output_bytes} bytes; the command was stopped"
        elif result.exit_code != 0:
            status, reason = Status.FAILED, f"exit status {result.exit_code}"
        else:
            status = Status.OK
        if reason:
            output = f"{output.rstrip()}\n[{reason}]".lstrip()
        return SandboxResult(
            status,
            machine,
            command,
            argv=result.argv,
            output=output,
            exit_code=result.exit_code,
            reason=reason,
            exec_s=result.exec_s,
        )
