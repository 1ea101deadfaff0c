"""Diagnosis tasks: the task kinds, the vocabulary of fault kinds, answers and their scores.

Three task kinds (`Query.task`, an app config's `task`):

    mitigate   fix the network until it meets its intent (every app; scored by the app)
    detect     say whether anything is wrong: {"healthy": true|false}; healthy networks
               are the negatives; correct when the answer equals the truth
    localize   name every root cause: {"healthy": false, "causes": [{"device",
               "component", "kind"}, ...]}; scored as ITBench-AA does: 0 when a true cause
               is missing, else the answer's precision |truth ∩ answer| / |answer|

Detect and localize episodes are read-only (`Query.read_only`). An app offering them
declares a `Vocabulary`: every fault kind it can draw, with one line of meaning and the
form of its component, listed in full in every prompt so the agent sees each allowed label.

Names are compared after `normalise` (case, Unicode width, whitespace, spaces around
separators, IPv4 addresses and prefixes written canonically); a cause is its normalised
(device, component, kind), and an answer that names one twice names it once. No judge:
the comparison is exact. `parse_answer` reads an untrusted answer within bounds (at most
MAX_CAUSES causes, strings of at most MAX_TEXT characters, only the vocabulary's kinds)
and never raises: what it cannot use comes back as the reason, for the agent to read.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TASKS = ("mitigate", "detect", "localize")
ANSWER_TASKS = ("detect", "localize")  # the tasks that end with an answer, read-only
MAX_CAUSES = 16
MAX_TEXT = 200  # characters of a device, component or kind as written
_KIND = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")
_SPACES = re.compile(r"\s+")
_AROUND = re.compile(r"\s*([:/=,@])\s*")
_IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?:/(\d{1,3}))?(?![\w.])")


@dataclass(frozen=True)
class Label:
    """One fault kind of a vocabulary: its id (what answers name), one line saying what
    it is, and the form of the component an answer names for it."""

    kind: str  # e.g. "ospf.mtu_mismatch"
    meaning: str  # e.g. "an OSPF hop whose two ends have different interface MTUs"
    component: str  # e.g. "the interface whose MTU differs from the intent (r7-eth2)"


@dataclass(frozen=True)
class Vocabulary:
    """The fault kinds an app's answers may name (at one level), in the order prompts list
    them; kinds are lower-case ids, distinct."""

    labels: tuple[Label, ...]

    def __post_init__(self) -> None:
        if not self.labels:
            raise ValueError("a vocabulary needs at least one fault kind")
        seen: set[str] = set()
        for label in self.labels:
            if not _KIND.match(label.kind) or len(label.kind) > MAX_TEXT:
                raise ValueError(
                    f"fault kind {label.kind!r} must be a lower-case id ([a-z0-9_.-], "
                    f"at most {MAX_TEXT} characters)"
                )
            if label.kind in seen:
                raise ValueError(f"fault kind {label.kind!r} is listed twice")
            seen.add(label.kind)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(label.kind for label in self.labels)

    def text(self) -> str:
        """The whole vocabulary as a prompt lists it: one line per kind."""
        return "\n".join(
            f"- {label.kind}: {label.meaning}; component: {label.component}"
            for label in self.labels
        )


@dataclass(frozen=True, order=True)
class Cause:
    """A root cause as named: device, component and fault kind, each normalised."""

    device: str
    component: str
    kind: str

    def as_json(self) -> dict[str, str]:
        return {"device": self.device, "component": self.component, "kind": self.kind}


@dataclass(frozen=True)
class Answer:
    """A parsed answer: whether the network is healthy, and the causes it names (sorted,
    each once)."""

    healthy: bool
    causes: tuple[Cause, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"healthy": self.healthy, "causes": [c.as_json() for c in self.causes]}


def normalise(text: str) -> str:
    """A name as compared: NFKC, case-folded, whitespace collapsed, no spaces around
    `: / = , @`, IPv4 addresses without leading zeros (a prefix length kept as written)."""
    text = unicodedata.normalize("NFKC", text).casefold().strip()
    text = _AROUND.sub(r"\1", _SPACES.sub(" ", text))
    return _IPV4.sub(_canonical_ipv4, text)


def _canonical_ipv4(match: re.Match[str]) -> str:
    octets = [int(part) for part in match.group(1).split(".")]
    if any(o > 255 for o in octets):
        return match.group(0)
    address = ".".join(str(o) for o in octets)
    length = match.group(2)
    if length is None:
        return address
    return f"{address}/{int(length)}" if int(length) <= 32 else match.group(0)


def cause(device: str, component: str, kind: str) -> Cause:
    """A cause from trusted names (an app's ground truth), normalised as answers are."""
    return Cause(normalise(device), normalise(component), normalise(kind))


def parse_answer(value: Any, task: str, vocabulary: Vocabulary | None) -> Answer | str:
    """The answer `value` (the decoded JSON under "answer") holds for `task`, or why it
    cannot be used (one line, for the agent). Never raises on any input."""
    if task not in ANSWER_TASKS:
        return f"a {task} episode takes no answer; act on the network instead"
    if not isinstance(value, dict):
        return f"the answer must be a JSON object, e.g. {example(task)}; got {_kind_of(value)}"
    healthy = value.get("healthy")
    if healthy is not None and not isinstance(healthy, bool):
        return f'"healthy" must be true or false, got {_kind_of(healthy)}'
    if task == "detect":
        if healthy is None:
            return f'the answer has no "healthy" (true or false), e.g. {example(task)}'
        return Answer(healthy)
    causes = value.get("causes")
    if not isinstance(causes, list):
        return f'the answer has no "causes" list, e.g. {example(task)}'
    if len(causes) > MAX_CAUSES:
        return f"the answer names {len(causes)} causes; at most {MAX_CAUSES} are read"
    if vocabulary is None:
        return "this app has no fault vocabulary, so no cause can be named"
    kinds = {normalise(k): k for k in vocabulary.kinds}
    parsed: set[Cause] = set()
    for i, item in enumerate(causes):
        one = _parse_cause(item, kinds)
        if isinstance(one, str):
            return f"cause {i + 1}: {one}"
        parsed.add(one)
    if healthy and parsed:
        return 'the answer says "healthy": true and names causes; say one or the other'
    return Answer(bool(healthy) if healthy is not None else not parsed, tuple(sorted(parsed)))


def _parse_cause(item: Any, kinds: Mapping[str, str]) -> Cause | str:
    if not isinstance(item, dict):
        return f'must be an object {{"device", "component", "kind"}}, got {_kind_of(item)}'
    names = []
    for key in ("device", "component", "kind"):
        text = item.get(key)
        if not isinstance(text, str) or not text.strip():
            return f'"{key}" must be a non-empty string, got {_kind_of(text)}'
        if len(text) > MAX_TEXT:
            return f'"{key}" is {len(text)} characters long; at most {MAX_TEXT}'
        names.append(normalise(text))
    if names[2] not in kinds:
        return f"unknown kind {item['kind']!r}; the kinds are: {', '.join(kinds.values())}"
    return Cause(*names)


def example(task: str) -> str:
    if task == "detect":
        return '{"answer": {"healthy": false}}'
    return (
        '{"answer": {"healthy": false, "causes": [{"device": "r2", "component": "r2-eth1", '
        '"kind": "<a kind of the list>"}]}}'
    )


def _kind_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return str(value).lower()
    return type(value).__name__ if not isinstance(value, str) else repr(value[:40])


@dataclass(frozen=True)
class Localization:
    """How a localize answer compares with the truth."""

    score: float  # ITBench-AA: 0 if a true cause is missing, else |truth ∩ answer| / |answer|
    exact: bool  # the answer is the truth, no more, no less
    missed: int  # true causes the answer lacks
    extra: int  # causes named that are not true causes
    loose_recall: float  # share of the true (device, kind) pairs named, components aside


def score_localize(truth: Iterable[Cause], answer: Iterable[Cause]) -> Localization:
    want, got = set(truth), set(answer)
    found = want & got
    missed, extra = len(want - got), len(got - want)
    precision = len(found) / len(got) if got else 1.0
    score = 0.0 if missed else precision
    pairs = {(c.device, c.kind) for c in want}
    named = {(c.device, c.kind) for c in got}
    loose = len(pairs & named) / len(pairs) if pairs else 1.0
    return Localization(score, want == got, missed, extra, loose)


def truth_causes(ground_truth: Mapping[str, Any]) -> tuple[Cause, ...]:
    """The causes of an app's ground truth (`causes`: [{"device", "component", "kind"}])."""
    return tuple(
        sorted(
            {cause(c["device"], c["component"], c["kind"]) for c in ground_truth.get("causes", [])}
        )
    )


def answer_of(steps: Sequence[Any]) -> Answer | None:
    """The answer an episode's steps submitted (the last one that did), else None."""
    for step in reversed(steps):
        if getattr(step, "answer", None) is not None:
            data = step.answer
            causes = tuple(Cause(**c) for c in data.get("causes", ()))
            return Answer(bool(data["healthy"]), causes)
    return None
