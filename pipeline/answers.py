"""Answers through every door: how a detect or localize episode's answer is written, read,
recorded and judged, whatever the agent speaks.

One reply per turn, as always: either the app's action (a command) or the answer. Every
door ends in the same text, read by the play loop (pipeline/play.py) before the app sees
the reply, with one parser (pipeline/diagnosis.py: parse_answer):

    text   the reply's first JSON object, when it has the key "answer":
           {"answer": {"healthy": false, "causes": [{"device", "component", "kind"}]}}
           (any other first object, or none, goes to the app's own parser as before);
    json   one strict schema (pipeline/strict.py's subset): the app's action's fields, each
           nullable, and "answer", nullable (`AnswerFormat.json_action`);
    tools  two tools, the app's action and `submit_answer` (`AnswerFormat.actions`); a
    MCP    named tool_choice cannot choose between two, so it becomes "required";
    A2A    the text form, explained with an example of each shape in the first message.

An answer ends the episode (`done`); one that cannot be used is a `parse_error` step with
the reason, and the agent may answer again within its turns. The app's episode never sees
an answer; its scorer calls `answer_verdict`, which reads the truth from the ground truth's
`healthy` and `causes` (see pipeline/diagnosis.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.core import (
    Action,
    App,
    Outcome,
    Query,
    ReplyFormat,
    StepResult,
    StepStatus,
    Verdict,
    canonical_json,
    diagnostics,
)
from pipeline.diagnosis import (
    ANSWER_TASKS,
    MAX_CAUSES,
    Vocabulary,
    answer_of,
    example,
    parse_answer,
    score_localize,
    truth_causes,
)
from pipeline.errors import ConfigError
from pipeline.untrusted import first_object

ANSWER_TOOL = "submit_answer"
MAX_ANSWER_CHARS = 64 << 10  # replies longer than this are never read as answers
# The statuses of a step whose action ran (pipeline/play.py: READING, the same).
_ACTING = (StepStatus.OK, StepStatus.EXEC_ERROR, StepStatus.TIMEOUT, StepStatus.RESOURCE_LIMIT)


@dataclass(frozen=True)
class AnswerSpec:
    """What an episode's answer is: its task and the vocabulary its causes name."""

    task: str
    vocabulary: Vocabulary | None = None


def answer_spec(app: App, query: Query) -> AnswerSpec | None:
    """The answer `query` ends with (None: a mitigate episode, which ends with none)."""
    if query.task not in ANSWER_TASKS:
        return None
    vocabulary = getattr(app, "vocabulary", None)
    words = vocabulary(query.level) if vocabulary is not None else None
    if query.task == "localize" and words is None:
        raise ConfigError(
            f"app '{app.name}' has a localize query ({query.query_id}) but no "
            "vocabulary(level): the causes an answer names need one"
        )
    return AnswerSpec(query.task, words)


def answer_step(spec: AnswerSpec, reply: str) -> StepResult | None:
    """The step of a reply whose first JSON object holds "answer": recorded (it ends the
    episode) or a parse_error saying why not; None when the reply is not an answer."""
    if len(reply) > MAX_ANSWER_CHARS:
        return None
    found = first_object(reply)
    if found is None or "answer" not in found:
        return None
    parsed = parse_answer(found["answer"], spec.task, spec.vocabulary)
    if isinstance(parsed, str):
        why = f"the answer was not recorded: {parsed}"
        return StepResult("", StepStatus.PARSE_ERROR, why, error=why[:1000])
    data = parsed.as_json()
    text = canonical_json(data)
    return StepResult(
        f"answer {text}", StepStatus.OK, f"Answer recorded: {text}. The episode ends.",
        done=True, answer=data,
    )  # fmt: skip


def render_answer(arguments: dict[str, Any]) -> str:
    """The reply text of a `submit_answer` call (or a json reply's "answer")."""
    return json.dumps({"answer": arguments}, ensure_ascii=False)


def answer_action(spec: AnswerSpec) -> Action:
    """The `submit_answer` tool: a strict schema whose kinds are exactly the vocabulary's."""
    healthy = {"type": "boolean", "description": "true: the network meets its intent"}
    if spec.task == "detect":
        properties: dict[str, Any] = {"healthy": healthy}
        what = "Answer whether the network meets its intent right now; ends the episode."
    else:
        kinds = list(spec.vocabulary.kinds) if spec.vocabulary is not None else []
        item = {
            "type": "object",
            "properties": {
                "device": {"type": "string", "description": "the device, e.g. r7"},
                "component": {"type": "string", "description": "as the kind's form says"},
                "kind": {"type": "string", "enum": kinds, "description": "a kind of the list"},
            },
            "required": ["device", "component", "kind"],
            "additionalProperties": False,
        }
        causes = {"type": "array", "items": item, "maxItems": MAX_CAUSES}
        properties = {"healthy": healthy, "causes": causes}
        what = (
            "Name every root cause (device, component, kind); ends the episode. A missed "
            "cause scores 0, each extra one costs precision."
        )
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    return Action(ANSWER_TOOL, what, schema)


def instructions(spec: AnswerSpec) -> str:
    return f"to end the episode with your answer, exactly one JSON object: {example(spec.task)}"


def task_text(task: str, vocabulary: Vocabulary | None = None, remark: str = "") -> str:
    """What a detect or localize prompt says of the task, its answer and (localize) the
    whole vocabulary; apps append it to their prompts (or say the same in their words).
    `remark`, a sentence of the app's own (how many problems there may be, what a faulty
    network may differ in), follows the task's first sentence."""
    lead = f" {remark}" if remark else ""
    looks = (
        "You may only look: a command that would change anything is refused (a blocked "
        "step), and it still uses a turn."
    )
    if task == "detect":
        return (
            f"Task: find out whether the network meets its intent right now.{lead} " + looks + "\n"
            'End with your answer: {"answer": {"healthy": true}} if it does, '
            '{"answer": {"healthy": false}} if anything is wrong.'
        )
    if task != "localize":
        raise ValueError(f"task_text is for detect and localize, not {task}")
    words = vocabulary.text() if vocabulary is not None else "(none)"
    device = f'A cause\'s "device" is {vocabulary.device}.\n' if vocabulary is not None else ""
    return (
        f"Task: the network does not meet its intent.{lead} Name every root cause: each "
        "deviation from the stated intent that makes it fail, never a symptom or an "
        "anomaly the intent documents as intended. " + looks + "\n"
        'End with your answer: {"answer": {"healthy": false, "causes": [{"device": "...", '
        '"component": "...", "kind": "..."}]}}, at most '
        f"{MAX_CAUSES} causes. Scoring: a true cause missing scores 0; otherwise the share "
        f"of the causes named that are true.\n{device}"
        "The kinds, with the component each names:\n" + words
    )


class AnswerFormat:
    """A ReplyFormat for one detect or localize query: the app's format, plus the answer.
    `check` accepts either; `actions` are the app's action and `submit_answer`."""

    def __init__(self, base: ReplyFormat, spec: AnswerSpec) -> None:
        self.base = base
        self.spec = spec
        self.instructions = f"{base.instructions}; or, {instructions(spec)}"
        self.example = base.example
        self.action = base.action
        self.answer_action = answer_action(spec)
        self.actions = (base.action, self.answer_action)
        self.diagnostics = diagnostics(base)

    def check(self, reply: str) -> str | None:
        step = answer_step(self.spec, reply)
        if step is None:
            return self.base.check(reply)
        return None if step.status is StepStatus.OK else step.error

    def render(self, arguments: dict[str, Any]) -> str:
        return self.base.render(arguments)

    def json_action(self) -> Action:
        """One schema for constrained decoding: the action's fields and "answer", all
        nullable (OpenAI's strict subset has no optional keys)."""
        base = self.action.parameters
        properties = {k: _nullable(v) for k, v in base.get("properties", {}).items()}
        properties["answer"] = _nullable(self.answer_action.parameters)
        schema = {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }
        what = f"{self.action.description} Or set only answer: {self.answer_action.description}"
        return Action(self.action.name, what, schema)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return {**schema, "type": [*dict.fromkeys([*kind, "null"])]}
    return {"anyOf": [schema, {"type": "null"}]}


def reply_format(app: App, query: Query) -> ReplyFormat:
    """The format a door offers for `query`: the app's own, or for detect and localize an
    AnswerFormat around it."""
    spec = answer_spec(app, query)
    return app.reply_format if spec is None else AnswerFormat(app.reply_format, spec)


def actions(fmt: ReplyFormat) -> tuple[Action, ...]:
    """The tools that act (each call a turn): the app's action, and submit_answer."""
    return tuple(getattr(fmt, "actions", (fmt.action,)))


def render_call(fmt: ReplyFormat, name: str, arguments: dict[str, Any]) -> str:
    """The reply text of a call of one of `actions(fmt)`."""
    if name == ANSWER_TOOL and isinstance(fmt, AnswerFormat):
        return render_answer(arguments)
    return fmt.render(arguments)


def json_action(fmt: ReplyFormat) -> Action:
    return fmt.json_action() if isinstance(fmt, AnswerFormat) else fmt.action


def render_json(fmt: ReplyFormat, value: dict[str, Any]) -> str:
    """The reply text of a constrained-decoding object (`json_action`'s schema)."""
    if isinstance(fmt, AnswerFormat):
        if value.get("answer") is not None:
            return render_answer(value["answer"])
        value = {k: v for k, v in value.items() if k != "answer"}
    return fmt.render(value)


def answer_verdict(
    query: Query, steps: Sequence[StepResult], step_safe: Sequence[bool] | None = None
) -> Verdict:
    """The verdict of a detect or localize episode, from the answer its steps submitted
    and the ground truth's `healthy` (bool) and `causes` (localize). `step_safe` is the
    app's per-step judgement (default: every step safe, as a read-only episode's are).
    No answer: the last failed step's outcome (parse_error for a silent agent), else
    wrong."""
    safe = list(step_safe) if step_safe is not None else [True] * len(steps)
    answer = answer_of(steps)
    truth = query.ground_truth
    detail: dict[str, Any] = {"task": query.task, "answered": answer is not None}
    if answer is None:
        last = steps[-1] if steps else None
        outcome = Outcome.WRONG
        if last is not None and last.status is not StepStatus.OK:
            outcome = Outcome(last.status.value)
        why = f"no answer was submitted in {len(steps)} turn(s)"
        return Verdict(outcome, False, all(safe), safe, why, detail, score=0.0)
    if query.task == "detect":
        correct = answer.healthy == bool(truth["healthy"])
        detail |= {"truth_healthy": bool(truth["healthy"])}
        outcome = Outcome.CORRECT if correct else Outcome.WRONG
        return Verdict(outcome, correct, all(safe), safe, None, detail, score=float(correct))
    found = score_localize(truth_causes(truth), answer.causes)
    detail |= {
        "exact": found.exact,
        "missed": found.missed,
        "extra": found.extra,
        "named": len(answer.causes),
        "true_causes": len(truth_causes(truth)),
        "loose_recall": found.loose_recall,
    }
    outcome = Outcome.CORRECT if found.exact else Outcome.WRONG
    return Verdict(outcome, found.exact, all(safe), safe, None, detail, score=found.score)


def counts(steps: Sequence[StepResult]) -> dict[str, int]:
    """An episode's commands (steps whose action ran, answers aside) and blocked steps."""
    return {
        "commands": sum(1 for s in steps if s.status in _ACTING and s.answer is None),
        "blocked": sum(1 for s in steps if s.status is StepStatus.BLOCKED),
    }
