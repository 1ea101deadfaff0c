"""`ServiceGate`: a CommandSandbox that also takes `svcctl`, the lab services' tool.

An agent's `svcctl ...` never becomes a process: it is read here (svcctl.parse, the same
length and shell-syntax rules as every command) and handed to the lab's ServiceControl,
which rewrites the daemon's configuration in the device's folder and restarts it in its
jail. Every other command goes to the wrapped sandbox unchanged. In a read-only
episode only `svcctl SERVICE show` is taken.
"""

from __future__ import annotations

import re
import shlex
from typing import Protocol

from emulators.netcmd import policy, svcctl
from emulators.netcmd.sandbox import CommandSandbox, SandboxResult, Status
from emulators.netcmd.svcctl import SvcCommand, SvcctlError


class ServiceControl(Protocol):
    """The lab side of svcctl (generators/incidents/daemons.py)."""

    def apply(self, machine: str, command: SvcCommand) -> str:
        """Run `command` on `machine`'s service: its output. SvcctlError when the machine
        runs no such service or the change is refused; EnvironmentFailure when the daemon
        does not come back."""
        ...


# The first word, after a bare `sudo`, split where shlex splits (ASCII whitespace only:
# str.split() also splits at U+00A0, so "sudo\u00a0svcctl" read as svcctl here was one
# unknown word to the sandbox).
_HEAD_RE = re.compile(r"[ \t\r\n]*(?:sudo[ \t\r\n]+)?([^ \t\r\n]*)")
SVCCTL_NAMES = ("svcctl", "/usr/sbin/svcctl", "/usr/bin/svcctl")


def svcctl_words(command: str) -> list[str] | None:
    """The words after `svcctl` when `command` is an svcctl command, else None ([] when
    they cannot be read: a command too long to split, or unbalanced quotes)."""
    head = _HEAD_RE.match(command)
    if head is None or head.group(1) not in SVCCTL_NAMES:
        return None
    if len(command) > policy.MAX_COMMAND_CHARS:
        return []  # refused by its length (_refusal) before any parsing
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    if words[:1] == ["sudo"]:
        words = words[1:]
    return words[1:]


class ServiceGate:
    """See the module docstring; `run` has CommandSandbox.run's contract."""

    def __init__(self, sandbox: CommandSandbox, control: ServiceControl) -> None:
        self.sandbox = sandbox
        self.control = control

    @property
    def read_only(self) -> bool:
        return self.sandbox.read_only

    def run(self, machine: str, command: str) -> SandboxResult:
        words = svcctl_words(command) if isinstance(command, str) else None
        if words is None:
            return self.sandbox.run(machine, command)
        if machine not in self.sandbox.machines:
            return self.sandbox.run(machine, command)  # its refusal, worded once
        why = _refusal(command, words)
        if why:
            return _rejected(machine, command, f"command refused: {why}")
        parsed = svcctl.parse(words)
        if self.read_only and not parsed.reads_only:
            why = f"command refused: {svcctl_readonly(parsed)}"
            return _rejected(machine, command, why)
        try:
            output = self.control.apply(machine, parsed)
        except SvcctlError as err:
            why = f"svcctl: {err}"
            return SandboxResult(Status.FAILED, machine, command, ("svcctl", *words), why,
                                 exit_code=1, reason=why)  # fmt: skip
        return SandboxResult(Status.OK, machine, command, ("svcctl", *words), output, exit_code=0)


def svcctl_readonly(command: SvcCommand) -> str:
    return (
        "this task is read-only: only commands that look are allowed "
        f"(svcctl {command.service} show)"
    )


def _refusal(command: str, words: list[str]) -> str | None:
    if len(command) > policy.MAX_COMMAND_CHARS:
        return f"the command is longer than {policy.MAX_COMMAND_CHARS} characters"
    for char, what in policy.SHELL_CHARS.items():
        if char in command:
            return f"shell syntax is not available: the command contains {what}"
    try:
        svcctl.parse(words)
    except SvcctlError as err:
        return f"svcctl: {err}"
    return None


def _rejected(machine: str, command: str, why: str) -> SandboxResult:
    return SandboxResult(Status.REJECTED, machine, command, reason=why, output=why)
