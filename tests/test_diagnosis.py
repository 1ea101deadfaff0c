"""The diagnosis tasks' rules (pipeline/diagnosis.py, pipeline/answers.py): answers read
within bounds from hostile input, ITBench-AA's localization score, normalised names, the
strict schemas of the doors, and the play loop's answers and read budget."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from pipeline.answers import (
    ANSWER_TOOL,
    AnswerFormat,
    AnswerSpec,
    actions,
    answer_step,
    answer_verdict,
    json_action,
    render_call,
    render_json,
)
from pipeline.core import Action, Outcome, Query, StepResult, StepStatus
from pipeline.diagnosis import (
    MAX_CAUSES,
    Answer,
    Cause,
    Label,
    Vocabulary,
    cause,
    normalise,
    parse_answer,
    score_localize,
)
from pipeline.play import EpisodeLoop
from pipeline.strict import problems

WORDS = Vocabulary(
    (
        Label("ospf.mtu_mismatch", "an OSPF hop whose ends differ in MTU", "the interface"),
        Label("bgp.remote_as", "a BGP session with the wrong remote AS", "bgp:<peer>"),
        Label("route.missing", "a missing route", "route:<prefix>"),
    )
)
R1 = cause("r1", "r1-eth2", "ospf.mtu_mismatch")
R2 = cause("r2", "bgp:10.0.0.2", "bgp.remote_as")


def test_a_missed_true_cause_scores_zero_whatever_else_is_right() -> None:
    found = score_localize([R1, R2], [R1])
    assert (found.score, found.exact, found.missed, found.extra) == (0.0, False, 1, 0)
    assert found.loose_recall == 0.5


def test_extra_causes_cost_precision_and_duplicates_count_once() -> None:
    extra = cause("r3", "route:10.0.3.0/24", "route.missing")
    assert score_localize([R1], [R1, extra]).score == 0.5
    assert score_localize([R1], [R1, R2, extra]).score == pytest.approx(1 / 3)
    exact = score_localize([R1, R2], [R2, R1, R1])  # named twice: one cause
    assert (exact.score, exact.exact, exact.extra) == (1.0, True, 0)
    # The right device and kind on the wrong component: a miss, but loose recall sees it.
    near = score_localize([R1], [cause("r1", "r1-eth1", "ospf.mtu_mismatch")])
    assert (near.score, near.loose_recall) == (0.0, 1.0)
    assert score_localize([], []).score == 1.0 and score_localize([], [R1]).score == 0.0


def test_names_are_compared_after_normalisation() -> None:
    assert normalise("  R1-ETH2 ") == "r1-eth2"
    assert normalise("BGP : 010.000.000.002") == "bgp:10.0.0.2"
    assert normalise("route: 10.0.3.0 / 24") == "route:10.0.3.0/24"
    assert normalise("Ｒ１") == "r1"  # full-width, NFKC
    assert normalise("addr 300.1.1.1") == "addr 300.1.1.1"  # not an address: as written
    answer = parse_answer(
        {"causes": [{"device": " R2", "component": "BGP: 10.0.0.02", "kind": "BGP.Remote_AS"}]},
        "localize",
        WORDS,
    )
    assert answer == Answer(False, (R2,))


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (None, "must be a JSON object"),
        ([], "must be a JSON object"),
        ({"healthy": "false"}, '"healthy" must be true or false'),
        ({}, 'no "causes" list'),
        ({"causes": "r1"}, 'no "causes" list'),
        ({"causes": [{"device": "r1", "component": "x"}]}, 'cause 1: "kind" must be'),
        ({"causes": [1]}, "cause 1: must be an object"),
        (
            {"causes": [{"device": "r1", "component": "x", "kind": "ospf.area"}]},
            "unknown kind 'ospf.area'; the kinds are: ospf.mtu_mismatch, bgp.remote_as",
        ),
        (
            {"causes": [{"device": "r" * 201, "component": "x", "kind": "route.missing"}]},
            '"device" is 201 characters long; at most 200',
        ),
        (
            {"causes": [{"device": "r1", "component": "x", "kind": "route.missing"}] * 17},
            f"names 17 causes; at most {MAX_CAUSES}",
        ),
        (
            {
                "healthy": True,
                "causes": [{"device": "r", "component": "c", "kind": "route.missing"}],
            },
            "say one or the other",
        ),
    ],
)
def test_unusable_answers_say_why_and_never_raise(value: object, why: str) -> None:
    got = parse_answer(value, "localize", WORDS)
    assert isinstance(got, str) and why in got


def test_detect_answers_and_hostile_replies() -> None:
    spec = AnswerSpec("detect")
    assert parse_answer({"healthy": False}, "detect", None) == Answer(False)
    assert 'no "healthy"' in parse_answer({"causes": []}, "detect", None)
    assert answer_step(spec, '{"machine": "r1", "command": "ip route"}') is None
    assert answer_step(spec, "no JSON here {{{") is None
    assert answer_step(spec, "x" * (64 << 10) + '{"answer": {"healthy": true}}') is None
    deep = '{"answer": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert answer_step(spec, deep) is None  # too deep to decode: the app's parser says why
    # an integer past Python's 4,300 digits is a number JSON allows (it raised ValueError)
    huge = answer_step(spec, '{"answer": {"healthy": true, "n": 1' + "0" * 5000 + "}}")
    assert (huge.status, huge.answer) == (StepStatus.OK, {"healthy": True, "causes": []})
    step = answer_step(spec, 'I checked. {"answer": {"healthy": true, "why": "all fine"}}')
    assert (step.status, step.done, step.answer) == (
        StepStatus.OK,
        True,
        {"healthy": True, "causes": []},
    )


def _query(task: str, truth: dict) -> Query:
    return Query("q", "toynet", 1, 0, 0, "p", "causes", "op", truth, task=task)


def test_verdicts_of_answers() -> None:
    truth = {"healthy": False, "causes": [R1.as_json(), R2.as_json()]}
    named = {"healthy": False, "causes": [R1.as_json()]}
    shown = StepResult("r1: show", StepStatus.OK, "...")
    answered = StepResult("answer", StepStatus.OK, "", done=True, answer=named)
    verdict = answer_verdict(_query("localize", truth), [shown, answered])
    assert (verdict.outcome, verdict.correct, verdict.score) == (Outcome.WRONG, False, 0.0)
    assert verdict.detail["missed"] == 1 and verdict.detail["loose_recall"] == 0.5
    silent = StepResult("", StepStatus.PARSE_ERROR, "", error="no JSON")
    verdict = answer_verdict(_query("detect", {"healthy": True}), [silent, silent])
    assert (verdict.outcome, verdict.score, verdict.safe) == (Outcome.PARSE_ERROR, 0.0, True)
    right = StepResult("answer", StepStatus.OK, "", done=True, answer={"healthy": True})
    verdict = answer_verdict(_query("detect", {"healthy": True}), [right])
    assert (verdict.outcome, verdict.correct, verdict.score) == (Outcome.CORRECT, True, 1.0)


ACT = Action(
    "run_command",
    "Run a command.",
    {
        "type": "object",
        "properties": {"machine": {"type": "string"}, "command": {"type": "string"}},
        "required": ["machine", "command"],
        "additionalProperties": False,
    },
)


@dataclass
class _Format:
    instructions: str = 'one JSON object {"machine", "command"}'
    example: str = '{"machine": "r1", "command": "ip route"}'
    action: Action = ACT

    def check(self, reply: str) -> str | None:
        return None if '"command"' in reply else "no command"

    def render(self, arguments: dict) -> str:
        return json.dumps({"machine": arguments["machine"], "command": arguments["command"]})


def test_the_doors_schemas_are_strict_and_render_to_the_one_parser() -> None:
    for task in ("detect", "localize"):
        fmt = AnswerFormat(_Format(), AnswerSpec(task, WORDS))
        assert [a.name for a in actions(fmt)] == ["run_command", ANSWER_TOOL]
        for action in (fmt.answer_action, json_action(fmt)):
            assert problems(action.parameters) == [] and action.strict
    fmt = AnswerFormat(_Format(), AnswerSpec("localize", WORDS))
    kinds = fmt.answer_action.parameters["properties"]["causes"]["items"]["properties"]["kind"]
    assert kinds["enum"] == list(WORDS.kinds)
    call = {"healthy": False, "causes": [R1.as_json()]}
    text = render_call(fmt, ANSWER_TOOL, call)
    assert (
        fmt.check(text) is None
        and answer_step(fmt.spec, text).answer == Answer(False, (R1,)).as_json()
    )
    assert render_call(fmt, "run_command", {"machine": "r1", "command": "ip r"}) == (
        '{"machine": "r1", "command": "ip r"}'
    )
    assert render_json(fmt, {"machine": None, "command": None, "answer": call}) == text
    assert render_json(fmt, {"machine": "r1", "command": "ip r", "answer": None}) == (
        '{"machine": "r1", "command": "ip r"}'
    )
    assert "unknown kind" in fmt.check(
        '{"answer": {"causes": [{"device": "r1", "component": "c", "kind": "nope"}]}}'
    )
    assert fmt.check("ip route") == "no command"


class _Episode:
    max_turns = 5
    read_budget = 100

    def observe(self) -> str:
        return "task"

    def step(self, reply: str) -> StepResult:
        if reply == "write":
            return StepResult("write", StepStatus.BLOCKED, "read-only episode", error="blocked")
        return StepResult("show", StepStatus.OK, "x" * 60)

    def diagnose(self, name: str, arguments: dict) -> str:
        return "d" * 30


def test_the_read_budget_withholds_output_past_it_and_counts_diagnostics() -> None:
    loop = EpisodeLoop(_Episode(), answers=AnswerSpec("detect"))
    assert loop.step("show").output == "x" * 60 and loop.read_left == 40
    assert loop.diagnose("peek", {}) == "d" * 30 and loop.read_left == 10
    crossing = loop.step("show").output
    assert crossing.startswith("x" * 10) and "read budget of 0.1 KiB used: the other 50" in crossing
    assert loop.step("show").output == "(read budget of 0.1 KiB used: output withheld)"
    blocked = loop.step("write")  # feedback: shown whole, never counted
    assert blocked.output == "read-only episode" and loop.bytes_read == 100
    assert [s.bytes_out for s in loop.shown] == [60, 10, 0, 17]
    assert [s.diagnostics for s in loop.shown] == [0, 1, 0, 0]
    done = loop.step('{"answer": {"healthy": false}}')
    assert done.done and done.answer == {"healthy": False, "causes": []} and loop.over


def test_a_vocabulary_refuses_duplicates_and_lists_every_kind() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        Vocabulary((WORDS.labels[0], WORDS.labels[0]))
    with pytest.raises(ValueError, match="lower-case id"):
        Vocabulary((Label("OSPF MTU", "x", "y"),))
    assert WORDS.text().count("\n") == 2 and "bgp.remote_as: a BGP session" in WORDS.text()
    assert Cause("r1", "r1-eth2", "ospf.mtu_mismatch") == R1
