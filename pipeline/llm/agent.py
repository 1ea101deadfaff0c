"""`LLMAgent`: a served model behind the agent interface, with NetLLMBench's repair chain.

One turn: the strategy's messages (pipeline/llm/prompts.py, with the examples of
pipeline/llm/examples.py, fitted to the model's context by pipeline/llm/context.py) go to
the model, decoded as the agent config says:

    text   the reply is free text (the app's reply format, as its prompt says);
    json   decoding is constrained to the JSON schema of the app's action
           (`response_format`), and the object is written as the app's reply;
    tools  the app's action is offered as a tool (OpenAI `tools`; `tool_choice` names it,
           or is `required` / `auto`) and the call's arguments are written as the reply.

Detect and localize queries (pipeline/answers.py) add the answer: `json` decodes one
schema holding the action's fields and a nullable "answer"; `tools` offers a second tool,
`submit_answer`, and a named tool_choice becomes "required" (naming one tool would forbid
the other); `text` replies name it as the prompt says.

If the app's reply format still rejects the reply, the chain tries, in order and each at
most once per turn (each can be turned off): (1) a re-prompt saying the format was wrong,
(2) a re-prompt with an example of the right format, (3) a master model extracting the
action, in the same decoding mode, so repair counts compare across modes. What is still
unparseable goes to the environment as it is and becomes a parse_error step: scored,
never retried forever. Every call is recorded (the `calls` table) with the text it
answered and what the model said.

Every request of a turn (the first, each after a diagnostic, the re-prompts, the master
model's) is fitted to its model's context; one that cannot fit even without the past
turns ends the episode as `context_overflow` (ContextOverflow, with the turn's calls); a
server that still refuses a request for its length gets one with half the past turns,
down to none. `agent.context.observations: changes` shows later observations as what
changed (the app's `observation_changes`, e.g. routing's reachability matrix).

ReAct with tools (`reasoning: react`, `decoding: tools`) also offers the app's read-only
diagnostics (MALT's `run_code` on a copy of the graph, the lab apps' `show(machine, what)`,
k8s's `kubectl_read`): the model may call up to `max_probes` of them per turn, sees each
result, and then acts; each exchange is plain text in the conversation, so any chat
template holds it, and each diagnostic is a call of its own (purpose `diagnostic`).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pipeline import answers
from pipeline.agents import EpisodeEnd, Exchange, Probe, Reply
from pipeline.config import load_choice
from pipeline.core import App, Query, ReplyFormat, diagnostics, observation_changes
from pipeline.errors import ContextOverflow
from pipeline.llm import context, examples, prompts
from pipeline.llm.config import LLMAgentConfig
from pipeline.llm.models import ChatBackend, ModelPool
from pipeline.serving.client import ChatResult, RequestRejected
from pipeline.untrusted import JSON

PURPOSES = {
    "reprompt": "re-prompt",
    "example": "re-prompt with an example",
    "master": "master model's extraction",
}
DIAGNOSTIC = "\x00diagnostic:"  # marks a diagnostic call inside the agent (never a reply)
MAX_STORED = 16_384  # characters of a call's request and response kept in `calls`
Message = dict[str, str]


class LLMAgent:
    def __init__(self, cfg: DictConfig, app: App, *, model: DictConfig, models: ModelPool) -> None:
        self.cfg: LLMAgentConfig = OmegaConf.to_object(cfg)
        self.name = self.cfg.name
        self._app = app
        self._format = app.reply_format
        self._backend = models.backend(model)
        self._master: ChatBackend | None = None
        if self.cfg.repair.master_model:
            self._master = models.backend(load_choice("model", self.cfg.repair.master_model))
        self._library = examples.library(getattr(app, "few_shot", ()), self.cfg.library)
        self._shown: dict[str, list[tuple[str, str]]] = {}  # query id -> its examples
        self._formats: dict[str, ReplyFormat] = {}  # query id -> the format it is offered
        self._probes: dict[str, Probe] = {}  # query id -> its episode's diagnostics
        self._condense: context.Condense | None = None
        if self.cfg.context.observations == "changes":
            self._condense = observation_changes(app)

    @contextlib.contextmanager
    def episode(
        self, query: Query, max_turns: int, probe: Probe | None = None
    ) -> Iterator[EpisodeEnd]:
        """Holds the episode's diagnostics while it is played (episodes run on threads)."""
        if probe is not None and self._probing():
            self._probes[query.query_id] = probe
        try:
            yield EpisodeEnd()
        finally:
            self._probes.pop(query.query_id, None)
            self._shown.pop(query.query_id, None)
            self._formats.pop(query.query_id, None)

    def _probing(self) -> bool:
        return (
            self.cfg.reasoning == "react"
            and self.cfg.decoding == "tools"
            and self.cfg.max_probes > 0
            and bool(diagnostics(self._format))
        )

    def reply(self, query: Query, observation: str, history: list[Exchange], turn: int) -> Reply:
        task = history[0].observation if history else observation
        if query.query_id not in self._shown:
            self._shown[query.query_id] = examples.choose(
                self.cfg.examples, self._library, task, self.cfg.shots
            )
        head, turns = prompts.parts(
            self.cfg.reasoning, observation, history, self._shown[query.query_id]
        )
        calls: list[dict[str, Any]] = []
        probe = self._probes.get(query.query_id)
        tail: list[Message] = []  # this turn's messages after the latest observation
        fmt = self._formats.get(query.query_id) or answers.reply_format(self._app, query)
        self._formats[query.query_id] = fmt

        def ask(purpose: str, probing: bool = False) -> str:
            return self._ask(
                self._backend, purpose, calls, head, turns, tail, fmt=fmt, probing=probing
            )

        budget = self.cfg.max_probes if probe is not None else 0
        looked = 0
        text = ask("act", probing=budget > 0)
        while looked < budget and (called := self._diagnostic(text)) is not None:
            looked += 1
            name, arguments = called
            shown = self._probe(probe, name, arguments, calls)
            tail += [
                {"role": "assistant", "content": f"[{name}] {json.dumps(arguments)}"},
                {"role": "user", "content": f"Observation ({name}): {shown}"},
            ]
            text = ask("act", probing=looked < budget)  # past the budget: the action only
        if self._diagnostic(text) is not None:  # a diagnostic it was no longer offered
            text = ""
        problem = fmt.check(text)
        repair = self.cfg.repair
        if problem and repair.reprompt:
            tail += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": prompts.reprompt(problem, fmt.instructions)},
            ]
            text = ask("reprompt")
            problem = fmt.check(text)
        if problem and repair.example:
            note = prompts.reprompt_with_example(problem, fmt.instructions, fmt.example)
            tail += [{"role": "assistant", "content": text}, {"role": "user", "content": note}]
            text = ask("example")
            problem = fmt.check(text)
        if problem and self._master is not None:
            extraction = prompts.master_extraction(fmt.instructions, fmt.example, text)
            extracted = self._ask(self._master, "master", calls, extraction, [], [], fmt=fmt)
            if fmt.check(extracted) is None:
                text = extracted
        return Reply(
            text,
            prompt_tokens=_total(calls, "prompt_tokens"),
            completion_tokens=_total(calls, "completion_tokens"),
            calls=calls,
        )

    def _ask(
        self,
        backend: ChatBackend,
        purpose: str,
        calls: list[dict[str, Any]],
        head: list[Message],
        turns: list[tuple[Message, Message]],
        tail: list[Message],
        *,
        fmt: ReplyFormat,
        probing: bool = False,
    ) -> str:
        """One request of the turn, with as many past turns as fit the backend's context
        (fewer if its server refuses the request for its length). A request that cannot
        fit even without them ends the episode: ContextOverflow, with the turn's calls."""
        cfg = self.cfg.context
        limit = (cfg.max_tokens if backend is self._backend else None) or backend.context
        keep = cfg.keep_turns
        while True:
            try:
                chat, dropped = context.fit(
                    head,
                    turns,
                    budget=limit - backend.max_reply,
                    keep_turns=keep,
                    chars_per_token=cfg.chars_per_token,
                    tail=tail,
                    condense=self._condense,
                )
            except ContextOverflow as err:
                raise ContextOverflow(_request(purpose, str(err)), calls=calls) from None
            try:
                return self._call(
                    backend, chat, purpose, calls, fmt=fmt, dropped=dropped, probing=probing
                )
            except RequestRejected as err:
                if not _too_long(err):
                    raise
                kept = len(turns) - 1 - dropped
                if kept <= 0:
                    why = (
                        "the model's server refused it for its length even with no past turn: "
                        f"{err.server_message[:300]}"
                    )
                    raise ContextOverflow(_request(purpose, why), calls=calls) from err
                keep = kept // 2

    def _probe(
        self, probe: Probe | None, name: str, arguments: dict[str, Any], calls: list[dict[str, Any]]
    ) -> str:
        """Run a diagnostic the model called; it is recorded as a call of its own
        (purpose "diagnostic": no tokens, its latency the diagnostic's own time)."""
        if probe is None:
            raise RuntimeError("a diagnostic was called in an episode without diagnostics")
        started = time.perf_counter()
        shown = probe(name, arguments)
        calls.append(
            {
                "purpose": "diagnostic",
                "model": self._backend.name,
                "prompt_tokens": None,
                "completion_tokens": None,
                "latency_s": time.perf_counter() - started,
                "ttft_s": None,
                "tokens_per_s": None,
                "finish_reason": None,
                "request": f"{name} {json.dumps(arguments, ensure_ascii=False)}"[:MAX_STORED],
                "response": shown[:MAX_STORED],
                "dropped_turns": 0,
            }
        )
        return shown

    def _call(
        self,
        backend: ChatBackend,
        chat: list[dict[str, str]],
        purpose: str,
        calls: list[dict[str, Any]],
        *,
        fmt: ReplyFormat,
        dropped: int = 0,
        probing: bool = False,
    ) -> str:
        result: ChatResult = backend.chat(chat, **self._decoding(fmt, probing))
        text = self._reply_text(result, fmt)
        calls.append(
            {
                "purpose": purpose,
                "model": backend.name,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "cached_tokens": result.cached_tokens,
                "latency_s": result.latency_s,
                "ttft_s": result.ttft_s,
                "tokens_per_s": result.tokens_per_s,
                "finish_reason": result.finish_reason,
                "request": chat[-1]["content"][:MAX_STORED],
                "response": _response(result)[:MAX_STORED],
                "dropped_turns": dropped,
                "cache": result.cache,
            }
        )
        return text

    def _decoding(self, fmt: ReplyFormat, probing: bool) -> dict[str, Any]:
        if self.cfg.decoding == "json":
            return {"response_format": answers.json_action(fmt).response_format()}
        if self.cfg.decoding == "tools":
            tools = list(answers.actions(fmt))
            choice: Any = self.cfg.tool_choice
            if probing:  # the model chooses: a diagnostic, or the action
                tools += list(diagnostics(fmt))
            if choice == "named" and len(tools) > 1:  # naming one would forbid the others
                choice = "required"
            elif choice == "named":
                choice = {"type": "function", "function": {"name": tools[0].name}}
            return {"tools": [t.tool() for t in tools], "tool_choice": choice}
        return {}

    def _diagnostic(self, text: str) -> tuple[str, dict[str, Any]] | None:
        """(name, arguments) when the reply text is a call of a diagnostic (as
        `_reply_text` writes one), else None."""
        for action in diagnostics(self._format):
            prefix = f"{DIAGNOSTIC}{action.name} "
            if text.startswith(prefix):
                arguments = _object(text[len(prefix) :])
                return (action.name, arguments) if arguments is not None else None
        return None

    def _reply_text(self, result: ChatResult, fmt: ReplyFormat) -> str:
        """The reply as the app reads it: a structured answer written in the app's format;
        one that is not a JSON object of arguments stays as the model wrote it (the
        repair chain sees why it cannot be used)."""
        if self.cfg.decoding == "tools" and result.tool_calls:
            call = result.tool_calls[0]
            arguments = _arguments(call.arguments, call.name)
            if arguments is not None and call.name in {a.name for a in answers.actions(fmt)}:
                return answers.render_call(fmt, call.name, arguments)
            if arguments is not None and call.name in {d.name for d in diagnostics(fmt)}:
                return f"{DIAGNOSTIC}{call.name} {json.dumps(arguments)}"
            return call.arguments or result.text
        if self.cfg.decoding == "json":
            arguments = _object(result.text)
            if arguments is not None:
                return answers.render_json(fmt, arguments)
        return result.text


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = JSON.decode(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _arguments(text: str, name: str) -> dict[str, Any] | None:
    """A call's arguments: a JSON object, or (as some servers send a forced call) a list
    of {"name", "parameters" | "arguments"} objects, the first of them named `name`."""
    found = _object(text)
    if found is not None:
        return found
    try:
        items = JSON.decode(text)
    except (ValueError, RecursionError):
        return None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("name") == name:
            inner = item.get("parameters", item.get("arguments"))
            return inner if isinstance(inner, dict) else None
    return None


def _response(result: ChatResult) -> str:
    """What the model said: its text, and each tool call as name(arguments)."""
    calls = "".join(f"\n[tool call] {c.name}({c.arguments})" for c in result.tool_calls)
    return result.text + calls


def _total(calls: list[dict[str, Any]], key: str) -> int:
    """The turn's tokens of `key` (diagnostics report none)."""
    return sum(c[key] for c in calls if c[key] is not None)


def _request(purpose: str, why: str) -> str:
    """Why a request of the turn could not be sent; the first one's reason is the bare one."""
    return why if purpose == "act" else f"the {PURPOSES[purpose]} could not be sent: {why}"


def _too_long(err: RequestRejected) -> bool:
    message = err.server_message.lower()
    return err.status == 400 and (
        "context" in message
        or "too long" in message
        or ("maximum" in message and "token" in message)
    )
