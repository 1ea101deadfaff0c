"""Every app's action and diagnostic schemas are inside OpenAI's strict-mode subset, so a
hosted API accepts the `strict: true` NetGauge sends with them; a schema outside it is
sent without `strict` rather than refused."""

from __future__ import annotations

import re

import pytest

from generators.k8s.reply import ACTION as KUBECTL
from generators.k8s.reply import K8sReplyFormat, parse_reply
from pipeline import strict
from pipeline.core import Action, diagnostics
from pipeline.registry import APPS


def _actions() -> list[tuple[str, Action]]:
    found = []
    for name in APPS.names():
        reply_format = APPS.get(name).app_class().reply_format
        for action in (reply_format.action, *diagnostics(reply_format)):
            found.append((f"{name}:{action.name}", action))
    return found


ACTIONS = _actions()


def test_every_registered_app_has_its_action_here():
    assert {k.split(":")[0] for k, _ in ACTIONS} == set(APPS.names())


@pytest.mark.parametrize(("key", "action"), ACTIONS, ids=[k for k, _ in ACTIONS])
def test_every_action_schema_qualifies_for_strict_mode(key, action):
    assert strict.problems(action.parameters) == []
    assert action.tool()["function"]["strict"] is True
    assert action.response_format()["json_schema"]["strict"] is True


def test_kubectl_stdin_is_nullable_and_required_and_null_means_none():
    stdin = KUBECTL.parameters["properties"]["stdin"]
    assert stdin["type"] == ["string", "null"] and "stdin" in KUBECTL.parameters["required"]
    rendered = K8sReplyFormat().render({"command": "kubectl get netpol", "stdin": None})
    assert rendered == '{"command": "kubectl get netpol"}'
    sent = parse_reply('{"command": "kubectl get netpol", "stdin": null}')
    assert (sent.command, sent.stdin) == ("kubectl get netpol", "")


OPTIONAL = {
    "type": "object",
    "properties": {"command": {"type": "string"}, "stdin": {"type": "string"}},
    "required": ["command"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (OPTIONAL, r"every property must be required .*: stdin is not"),
        ({**OPTIONAL, "required": ["command", "stdin"], "additionalProperties": True},
         r"\$: additionalProperties must be false"),
        ({"anyOf": [OPTIONAL]}, r"the root must be a schema of type object"),
        ({"type": "object", "properties": {"n": {"type": "string", "minLength": 1}},
          "required": ["n"], "additionalProperties": False},
         r"\$\.n: unsupported keywords minLength"),
        ({"type": "object", "properties": {"n": {"description": "anything"}},
          "required": ["n"], "additionalProperties": False},
         r"\$\.n: says neither type"),
        ({"type": "object", "properties": {"o": {"type": "object", "properties": {}}},
          "required": ["o"], "additionalProperties": False},
         r"\$\.o: additionalProperties must be false"),
    ],
)  # fmt: skip
def test_schemas_outside_strict_mode_are_named_and_sent_without_it(schema, reason):
    found = strict.problems(schema)
    assert any(re.search(reason, p) for p in found), found
    action = Action("loose", "a plug-in app's looser action", schema)
    assert action.tool()["function"]["strict"] is False
    assert action.response_format()["json_schema"]["strict"] is False
