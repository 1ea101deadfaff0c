"""The agent's side of the command sandbox: replies of the form {"machine", "command"}.

This is NetLLMBench's reply format, used by every app whose agent acts with one shell-less
command on one named machine per turn (routing, netllmbench). The first JSON object in
the reply text counts; code fences and prose around it are fine. `CommandReplyFormat`
is the pipeline.core.ReplyFormat the LLM agents' repair chain quotes: its `check`
accepts exactly the replies `parse_reply` understands. A reply longer than
MAX_REPLY_CHARS is refused before it is read, and the object is read by pipeline/untrusted.py's
`first_object` (a bounded number of starts tried), so reading is linear in the reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from generators.lab.diagnostics import SHOW
from pipeline.api import Action, first_object

INSTRUCTIONS = (
    'exactly one JSON object per turn: {"machine": "<a machine name>", "command": "<one command>"}'
)
REPLY_FORMAT = f"Reply with {INSTRUCTIONS}."
MAX_REPLY_CHARS = 64 << 10  # a command is at most 1,000 characters (netcmd.policy)


@dataclass(frozen=True)
class Command:
    machine: str
    command: str


def parse_reply(text: str) -> Command | str:
    """The reply's command, or the reason there is none (shown to the agent)."""
    if len(text) > MAX_REPLY_CHARS:
        return f"the reply is {len(text)} characters long; at most {MAX_REPLY_CHARS} are read"
    value = first_object(text)
    if value is None:
        return f"the reply holds no JSON object. {REPLY_FORMAT}"
    machine, command = value.get("machine"), value.get("command")
    if not isinstance(machine, str) or not machine.strip():
        return f'the JSON object has no "machine" string. {REPLY_FORMAT}'
    if not isinstance(command, str) or not command.strip():
        return f'the JSON object has no "command" string. {REPLY_FORMAT}'
    return Command(machine.strip(), command.strip())


ACTION = Action(
    name="run_command",
    description=(
        "Run one network command (no shell) on one machine of the lab; its output and the "
        "network's state come back."
    ),
    parameters={
        "type": "object",
        "properties": {
            "machine": {"type": "string", "description": "a machine's name, e.g. r0"},
            "command": {"type": "string", "description": "one command, e.g. ip addr show"},
        },
        "required": ["machine", "command"],
        "additionalProperties": False,
    },
)


class CommandReplyFormat:
    """pipeline.core.ReplyFormat of {"machine", "command"} replies; `example` is the
    app's (a command that makes sense on its labs). Its diagnostic is `show`
    (generators/lab/diagnostics.py)."""

    instructions = INSTRUCTIONS
    action = ACTION
    diagnostics = (SHOW,)

    def __init__(self, example: Command) -> None:
        self.example = json.dumps({"machine": example.machine, "command": example.command})

    def check(self, reply: str) -> str | None:
        parsed = parse_reply(reply)
        return parsed if isinstance(parsed, str) else None

    def render(self, arguments: dict[str, Any]) -> str:
        return json.dumps(
            {"machine": arguments.get("machine"), "command": arguments.get("command")},
            ensure_ascii=False,
        )
