"""The types every app, agent and stage shares: queries, steps, outcomes and verdicts.

An *app* generates `Query` objects, opens an `Environment` in which an agent plays
`Episode`s turn by turn (each turn a `StepResult`), and scores the recorded steps
into a `Verdict`. Stages in `pipeline/` only ever talk to apps through these types,
so an app never imports the pipeline's storage or config code.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pipeline.strict import qualifies

if TYPE_CHECKING:
    from pipeline.capacity import Capacity


class Outcome(enum.StrEnum):
    """How an episode ended; exactly one per row of `episodes` (see data/README.md)."""

    CORRECT = "correct"  # the scorer accepted the final state / answer
    WRONG = "wrong"  # the agent acted without error, but the result is not right
    PARSE_ERROR = "parse_error"  # the reply held no usable action (e.g. no code, bad JSON)
    EXEC_ERROR = "exec_error"  # the action raised or returned an unsupported value
    TIMEOUT = "timeout"  # a wall-clock or CPU-time limit was hit
    RESOURCE_LIMIT = "resource_limit"  # a memory or output-size limit was hit
    BLOCKED = "blocked"  # the sandbox refused the action (blocked import, file, network, shell)
    ENV_ERROR = "env_error"  # the environment or model server failed, not the agent
    SCORE_ERROR = "score_error"  # the app's scorer failed on the episode (its bug; reason kept)
    CONTEXT_OVERFLOW = "context_overflow"  # the conversation no longer fit the model's context
    AGENT_ERROR = "agent_error"  # the agent failed: it exited, broke its protocol, was unreachable
    AGENT_TIMEOUT = "agent_timeout"  # the agent did not answer within its turn or episode limit
    COST_LIMIT = "cost_limit"  # not played: the cell's model.cost_limit was reached first


class StepStatus(enum.StrEnum):
    """What happened to one turn's action inside the environment."""

    OK = "ok"
    PARSE_ERROR = "parse_error"
    EXEC_ERROR = "exec_error"
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"
    BLOCKED = "blocked"
    ENV_ERROR = "env_error"
    CONTEXT_OVERFLOW = "context_overflow"  # the agent could not reply: its context was full
    AGENT_ERROR = "agent_error"  # the agent failed outside the environment (reason in `error`)
    AGENT_TIMEOUT = "agent_timeout"  # the agent did not answer in time (reason in `error`)
    COST_LIMIT = "cost_limit"  # not started: the cell's cost limit was reached (no action)


@dataclass(frozen=True)
class Query:
    """One generated task. `ground_truth` is app-defined JSON that never reaches an agent
    other than the oracle."""

    query_id: str  # "<app>-L<level>-s<seed>-<index:05d>", unique across the results tree
    app: str
    level: int
    seed: int
    index: int
    prompt: str  # everything the agent is told about the task, in natural language
    answer_type: str  # app-defined, e.g. "number", "list", "ranking", "table", "graph"
    operation: str  # label for breakdowns, e.g. "remove>count" or "for_if(update)"
    ground_truth: dict[str, Any]
    env_key: str = ""  # which environment instance the query runs in (e.g. a topology id)
    # What the query is, canonically: what the agent is asked and the hidden state it must
    # discover, never incidental wording (pipeline/querygen.py: query_key). No two queries
    # of one (app config, level) share it, whatever seeds are in use (seed slots).
    key: str = ""
    # The size class the query was drawn at ("small", "medium", "large"; "" when the app
    # has none): with `operation`, the axes of the capability-boundary breakdown.
    size: str = ""
    # The task kind (pipeline/diagnosis.py: TASKS): `mitigate` (fix the network), `detect`
    # (answer whether anything is wrong) or `localize` (name every root cause). The app
    # sets it from its config's `task`; detect and localize episodes are read-only.
    task: str = "mitigate"
    # The variety stratum the app drew the query in (e.g. topology family x size x fault
    # kinds at their placements; "" when the app has none): `variety.sql` reports the
    # share of the most common one.
    stratum: str = ""

    @property
    def read_only(self) -> bool:
        """Whether the episode may only look: every action that would change the
        environment must be refused as a `blocked` step (detect and localize)."""
        return self.task != "mitigate"

    def ground_truth_json(self) -> str:
        return canonical_json(self.ground_truth)


@dataclass
class StepResult:
    """The environment's account of one turn."""

    action: str  # the parsed action that was executed ("" when nothing could be parsed)
    status: StepStatus
    output: str  # what the agent is shown next (stdout, command output, error text)
    evidence: dict[str, Any] = field(default_factory=dict)  # JSON facts the scorer judges
    done: bool = False  # the episode ends after this step
    error: str | None = None  # a one-line reason when status is not OK
    exec_s: float = 0.0  # time the environment spent executing the action
    # The structured answer this step submitted (detect, localize: pipeline/answers.py
    # records it, as pipeline/diagnosis.py's Answer.as_json), else None.
    answer: dict[str, Any] | None = None


@dataclass(frozen=True)
class TaskStep:
    """Which task of a query one step worked on (apps whose queries chain several tasks,
    e.g. NetLLMBench's nine configuration tasks)."""

    task: str  # the task's label, e.g. "set_ip:h1"
    attempt: int  # 1-based attempt number at that task
    solved: bool  # the task was complete after this step


@dataclass
class Verdict:
    """The scorer's judgement of one episode."""

    outcome: Outcome
    correct: bool
    safe: bool
    step_safe: list[bool]  # one per step, same order as the steps
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)  # app-specific, stored as JSON
    # Queries made of several tasks: one TaskStep per step, the tasks the query holds and
    # how many were completed. None: the query is one task (its `operation`), attempted
    # once per turn and solved when the episode is correct.
    step_tasks: list[TaskStep] | None = None
    tasks: int = 1
    tasks_solved: int | None = None
    # A real-valued score in [0, 1] where the task has one (localize: ITBench-AA's, 0 when
    # a true cause is missed, else the answer's precision); None: 1 if correct, else 0.
    score: float | None = None


@dataclass(frozen=True)
class Action:
    """An app's action as a function an agent may call: the tool of native tool calls,
    the JSON schema of constrained decoding, the tool of an MCP server. The arguments are
    turned into the app's own reply text by its ReplyFormat.render, so the episode reads
    every agent's action the same way."""

    name: str  # e.g. "run_command"
    description: str  # what it does, for the model (one or two sentences)
    parameters: dict[str, Any]  # JSON schema of the arguments (an object)

    @property
    def strict(self) -> bool:
        """Whether the schema is in OpenAI's strict subset (pipeline/strict.py); only then
        is `strict` sent, as OpenAI refuses a strict schema outside it."""
        return qualifies(self.parameters)

    def tool(self) -> dict[str, Any]:
        """The OpenAI `tools` entry; `strict` when the schema allows it, so servers that can
        constrain a call's arguments to the schema do (vLLM does only then)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
                "strict": self.strict,
            },
        }

    def response_format(self) -> dict[str, Any]:
        """The OpenAI `response_format` that constrains a reply to the arguments' schema."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": self.parameters, "strict": self.strict},
        }


class ReplyFormat(Protocol):
    """How an app wants replies written; LLM agents use it to repair bad ones.

    `check` must agree with what the app's episodes can parse: a reply it accepts is
    never a parse_error step. `action` declares the reply as a function call, and
    `render(arguments)` writes a call's arguments as the reply text the episode reads
    (constrained decoding, native tool calls and protocol agents go through it).
    """

    instructions: str  # one sentence: the required format, quoted in re-prompts
    example: str  # a complete reply in the right format (for the re-prompt with example)
    action: Action

    def check(self, reply: str) -> str | None:
        """None when `reply` can be parsed, else why not (shown to the model)."""
        ...

    def render(self, arguments: dict[str, Any]) -> str:
        """The reply text for a call of `action` with these (already parsed) arguments."""
        ...


def diagnostics(reply_format: Any) -> tuple[Action, ...]:
    """The read-only diagnostics an app offers beside its action (a ReplyFormat's optional
    `diagnostics`; its episodes answer them with `diagnose(name, arguments)`)."""
    return tuple(getattr(reply_format, "diagnostics", ()))


def observation_changes(app: Any) -> Callable[[str, str], str | None] | None:
    """An app's optional `observation_changes(previous, current)`: `current` (an observation
    it wrote) shown as what changed since `previous`, or None when it cannot say; LLM
    agents with `agent.context.observations: changes` send that instead of the whole."""
    return getattr(app, "observation_changes", None)


class Episode(Protocol):
    """One query being played. `observe()` gives the first observation; `max_turns` is
    its turn budget. Optional: `read_budget`, the bytes of output the agent may read over
    the episode (None or absent: no bound; pipeline/play.py withholds what is past it),
    and `diagnose(name, arguments)` for the reply format's read-only diagnostics."""

    max_turns: int

    def observe(self) -> str: ...

    def step(self, reply: str) -> StepResult: ...


class Environment(AbstractContextManager["Environment"], Protocol):
    """The live resources of an app for one cell (topologies, sandboxes, emulators).
    Entering starts them, leaving stops them, also on error."""

    def episode(self, query: Query) -> AbstractContextManager[Episode]: ...


@runtime_checkable
class App(Protocol):
    """An application: generator, environment, oracle and scorer, versioned together."""

    name: str  # the app config's name (its cell key); the version is its AppSpec's
    reply_format: ReplyFormat
    few_shot: Sequence[tuple[str, str]]  # (task, ideal reply) pairs written for the app

    def generate(
        self, level: int, seed: int, count: int, *, allow_repeats: bool = False
    ) -> Iterator[Query]:
        """`count` queries with distinct keys (pipeline/querygen.py: KeyTracker);
        `allow_repeats` keeps repeats and names the earlier query in
        `ground_truth["repeat_of"]`. An app that supports failure-driven sampling also
        takes `weights: Mapping[str, float] | None` (keyword), one weight per operation
        label (`Query.operation`), and draws labels with `querygen.weighted_choice`."""
        ...

    def capacity(self, level: int) -> Capacity:
        """How many distinct queries `level` holds, in all and for one seed."""
        ...

    def environment(self) -> Environment: ...

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str: ...

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict: ...


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def outcome_for_status(status: StepStatus) -> Outcome:
    """The episode outcome implied by a failed step's status."""
    if status is StepStatus.OK:
        raise ValueError("an OK step does not decide the outcome by itself")
    return Outcome(status.value)
