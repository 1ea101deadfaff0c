"""An agent's reply -> one kubectl command line, its stdin and any files sent with it.

Understood, in this order: a JSON object with "command" (and optional "stdin", text or
null, and "files"), bare or in a ```json block; a fenced shell block (bash, sh, shell,
console or untagged) whose first command line starts with kubectl; a plain line starting
with kubectl. A here-document after the command line is kept with it. Anything else is a
ReplyError. A reply longer than MAX_REPLY_CHARS is refused before any of it is read, and JSON
objects are read by pipeline/untrusted.py's `json_objects` (a bounded number of starts tried);
reading is linear in the reply's length.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.api import Action, json_objects
from pipeline.api import fenced_blocks as _fences

EXAMPLE = '{"command": "kubectl get networkpolicies"}'
MAX_REPLY_CHARS = 640 << 10  # a command, its stdin and files (emulators.k8s.kubectl limits)
_SHELL_TAGS = ("", "bash", "sh", "shell", "console", "zsh")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_KUBECTL = re.compile(r"^\s*(?:\$\s+)?(?:cat\s*<<.*\|\s*)?kubectl\b")


class ReplyError(ValueError):
    """The reply holds no usable command; the message tells the agent what to send."""


@dataclass
class ReplyCommand:
    command: str
    stdin: str = ""
    files: dict[str, str] = field(default_factory=dict)


def _from_json(obj: dict[str, Any]) -> ReplyCommand:
    command, stdin, files = obj.get("command"), obj.get("stdin"), obj.get("files") or {}
    stdin = "" if stdin is None else stdin  # null: none (the action's schema allows it)
    if not isinstance(command, str) or not command.strip():
        raise ReplyError(f'"command" must be a non-empty string, e.g. {EXAMPLE}')
    if not isinstance(stdin, str):
        raise ReplyError('"stdin" must be a string (the text kubectl reads with -f -)')
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise ReplyError('"files" must map file names to their text')
    return ReplyCommand(command.strip(), stdin, dict(files))


def _command_lines(body: str) -> str | None:
    """The first kubectl line of a block, with its continuation lines or here-document."""
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if not _KUBECTL.match(line):
            continue
        taken = [line]
        while taken[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            taken.append(lines[i])
        m = _HEREDOC.search(taken[-1])
        if m:
            for rest in lines[i + 1 :]:
                taken.append(rest)
                if rest.strip() == m.group(2):
                    break
        return "\n".join(taken)
    return None


def parse_reply(text: str) -> ReplyCommand:
    if len(text) > MAX_REPLY_CHARS:
        raise ReplyError(
            f"the reply is {len(text)} characters long; at most {MAX_REPLY_CHARS} are read"
        )
    if not text or not text.strip():
        raise ReplyError(f"the reply is empty; send one kubectl command, e.g. {EXAMPLE}")
    for obj in json_objects(text):
        if "command" in obj:
            return _from_json(obj)
    for lang, body in _fences(text):
        if lang.lower() in _SHELL_TAGS:
            found = _command_lines(body)
            if found:
                return ReplyCommand(found.strip())
    if "```" not in text:
        found = _command_lines(text)
        if found:
            return ReplyCommand(found.strip())
    raise ReplyError(f"no kubectl command found in the reply; send one, e.g. {EXAMPLE}")


ACTION = Action(
    name="kubectl",
    description=(
        "Run one kubectl command against the cluster; its output and the connectivity "
        "report come back."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "one command: kubectl ..."},
            # Nullable and required, not optional: OpenAI's strict mode (pipeline/strict.py).
            "stdin": {
                "type": ["string", "null"],
                "description": "text for `-f -` or kubectl edit; null when none",
            },
        },
        "required": ["command", "stdin"],
        "additionalProperties": False,
    },
)


# Verbs of kubectl_read: they only read the cluster's objects and the API's schema.
READ_VERBS = ("get", "describe", "explain", "api-resources", "api-versions")
READ = Action(
    name="kubectl_read",
    description=(
        "Look at the cluster without changing it and without using a turn: one read-only "
        f"kubectl command ({', '.join(READ_VERBS)}); its output comes back, and no "
        "connectivity is probed."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "e.g. kubectl describe networkpolicy adservice",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
)


class K8sReplyFormat:
    """What a k8s reply must look like (pipeline.core.ReplyFormat); `check` accepts exactly
    the replies `parse_reply` understands, so an accepted reply is never a parse_error.
    Its diagnostic is `kubectl_read` (K8sEpisode.diagnose)."""

    action = ACTION
    diagnostics = (READ,)

    instructions = (
        'one JSON object {"command": "kubectl ..."} holding a single kubectl command, with '
        '"stdin" for text read by `-f -` or `kubectl edit`'
    )
    example = EXAMPLE

    def check(self, reply: str) -> str | None:
        try:
            parse_reply(reply)
        except ReplyError as err:
            return str(err)
        return None

    def render(self, arguments: dict[str, Any]) -> str:
        out = {"command": arguments.get("command")}
        if arguments.get("stdin"):
            out["stdin"] = arguments["stdin"]
        return json.dumps(out, ensure_ascii=False)


_PATCH = (
    '{"command": "kubectl patch networkpolicy adservice --type=json -p '
    '\'[{\\"op\\": \\"replace\\", \\"path\\": \\"/spec/ingress/0/ports/0/port\\", '
    '\\"value\\": 9555}]\'"}'
)
# Tasks in the style of the generated reports, answered the way we would answer them.
FEW_SHOT: tuple[tuple[str, str], ...] = (
    (
        "1 of 121 pairs do not match the intended connectivity:\n"
        "  frontend → adservice:9555 (expected: allowed, actual: blocked)",
        '{"command": "kubectl describe networkpolicy adservice"}',
    ),
    (
        "kubectl describe networkpolicy adservice shows:\n"
        "  Allowing ingress traffic:\n    To Port: 9556/TCP\n    From:\n"
        "      PodSelector: app=frontend\n"
        "1 of 121 pairs do not match: frontend → adservice:9555 "
        "(expected: allowed, actual: blocked)",
        _PATCH,
    ),
)
