"""The agent's side of the command sandbox: replies of the form {"machine", "command"}.

This is NetLLMBench's reply format, used by every app whose agent acts with one shell-less
command on one named machine per turn (routing, netllmbench). The first JSON object in
the reply text counts; code fences and prose around it are fine. `CommandReplyFormat`
is the pipeline.core.ReplyFormat the LLM agents' repair chain quotes: its `check`
accepts exactly the replies `parse_reply` understands.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

INSTRUCTIONS = (
    'exactly one JSON object per turn: {"machine": "<a machine name>", "command": "<one command>"}'
)
REPLY_FORMAT = f"Reply with {INSTRUCTIONS}."


@dataclass(frozen=True)
class Command:
    machine: str
    command: str


def _first_object(text: str) -> dict | None:
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def parse_reply(text: str) -> Command | str:
    """The reply's command, or the reason there is none (shown to the agent)."""
    value = _first_object(text)
    if value is None:
        return f"the reply holds no JSON object. {REPLY_FORMAT}"
    machine, command = value.get("machine"), value.get("command")
    if not isinstance(machine, str) or not machine.strip():
        return f'the JSON object has no "machine" string. {REPLY_FORMAT}'
    if not isinstance(command, str) or not command.strip():
        return f'the JSON object has no "command" string. {REPLY_FORMAT}'
    return Command(machine.strip(), command.strip())


class CommandReplyFormat:
    """pipeline.core.ReplyFormat of {"machine", "command"} replies; `example` is the
    app's (a command that makes sense on its labs)."""

    instructions = INSTRUCTIONS

    def __init__(self, example: Command) -> None:
        self.example = json.dumps({"machine": example.machine, "command": example.command})

    def check(self, reply: str) -> str | None:
        parsed = parse_reply(reply)
        return parsed if isinstance(parsed, str) else None
