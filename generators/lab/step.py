"""One reply played as one sandboxed command: the step both lab apps take each turn.

`play_command` parses the `{"machine", "command"}` reply, runs the command through the
lab's command sandbox and returns what every lab app records of it — the step status,
the text shown to the agent, the action label and the evidence facts. What the step
then means (reachability, a task's state) is the app's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from emulators.netcmd.sandbox import STEP_STATUS, CommandSandbox, SandboxResult
from generators.lab.reply import Command, parse_reply
from pipeline.api import StepStatus


@dataclass
class CommandStep:
    command: Command | None  # None: the reply held no command
    result: SandboxResult | None  # None: nothing was run
    status: StepStatus
    error: str | None  # why the reply could not be parsed, or the sandbox's reason
    action: str  # "machine: command", "" when nothing was parsed
    shown: str  # the prompt-like echo and the command's output, or the parse error
    facts: dict[str, Any] = field(
        default_factory=dict
    )  # machine, command, argv, sandbox, exit_code

    @property
    def changed_network(self) -> bool:
        """Whether the command ran (a refused or unparsed one changed nothing; one undone
        past a bound ran, and what it deleted or changed in place stays so)."""
        return self.result is not None and bool(self.result.argv)


def play_command(sandbox: CommandSandbox, reply: str) -> CommandStep:
    parsed = parse_reply(reply)
    if not isinstance(parsed, Command):
        return CommandStep(None, None, StepStatus.PARSE_ERROR, parsed, "", parsed)
    result = sandbox.run(parsed.machine, parsed.command)
    output = result.output.rstrip() or "(no output)"
    return CommandStep(
        command=parsed,
        result=result,
        status=STEP_STATUS[result.status],
        error=result.reason,
        action=f"{parsed.machine}: {parsed.command}",
        shown=f"{parsed.machine}$ {parsed.command}\n{output}",
        facts={
            "machine": parsed.machine,
            "command": parsed.command,
            "argv": list(result.argv),
            "sandbox": str(result.status),
            "exit_code": result.exit_code,
        },
    )
