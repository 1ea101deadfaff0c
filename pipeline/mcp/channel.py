"""One episode's meeting point of the runner and the MCP server: turns in, tool calls out.

The runner plays turns on a worker thread; the MCP server answers the agent's tool calls
on its event loop. A call of the app's action (or, in a detect or localize episode, of
`submit_answer`, pipeline/answers.py) is the turn's reply: the runner takes it
(`exchange`), plays it, and the observation that follows is the call's result, given
when the runner asks for the next action (or, for the last one, at `finish`). The app's
read-only diagnostics (e.g. `show`, `run_code`, `kubectl_read`) are run by the runner too,
on its thread while it waits for the action (so the episode is only ever used from one
thread), at most `max_diagnostics` between two actions; they use no turn. The other
tools answer at once:

    read_task  the task (the episode's first observation), the tools, turns left;
    stop       ends the episode; it is scored as it stands.

Misbehaviour is bounded: an unknown tool, or an action while one is still being played,
is a bad call answered with an error; past `max_bad_calls` of them the episode ends as
`agent_error`; so is a diagnostic past its budget. Every call is recorded for the `calls`
table (`purpose` "act" for the action, whose result is the step's output; "diagnostic"
for a diagnostic that ran, with its output; "tool" for the others).
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from pipeline.agents import Probe
from pipeline.core import Action
from pipeline.errors import AgentFailure, AgentStopped, AgentTimeout

TASK_TOOL = "read_task"
STOP_TOOL = "stop"
USAGE_META = "netgauge/usage"  # _meta of an action call: {"prompt_tokens", "completion_tokens"}
CLIENT_META = "netgauge/client"  # set by the stdio bridge: the client behind it
MAX_STORED = 16_384  # characters of a call's request and response kept in `calls`
POLL_S = 0.2  # how often a waiting runner checks that the agent's program still runs


@dataclass
class ToolResult:
    """What a tool call returns: text for the agent, the same as data, and whether it is
    an error (MCP's `isError`: the agent may correct itself)."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    error: bool = False


@dataclass
class _Event:
    kind: str  # action | diagnostic | stop | fail
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    result: Future[ToolResult] | None = None
    name: str = ""  # the diagnostic's, or the acting tool's


class Channel:
    """The tools' state for one episode (see the module docstring)."""

    def __init__(
        self,
        action: Action,
        task: str,
        max_turns: int,
        max_bad_calls: int,
        *,
        diagnostics: Sequence[Action] = (),
        probe: Probe | None = None,
        max_diagnostics: int = 0,
        answer: Action | None = None,
    ) -> None:
        self.action = action
        self.answer = answer  # a second tool that acts: submit_answer (detect, localize)
        self.acting = (action, answer) if answer is not None else (action,)
        self.acted = action.name  # the tool of the action `exchange` returned last
        self.task = task
        self.max_turns = max_turns
        self.max_bad_calls = max_bad_calls
        # Diagnostics are offered only with an episode to run them on.
        self.diagnostics = tuple(diagnostics) if probe is not None else ()
        self.max_diagnostics = max_diagnostics
        self._probe = probe
        self._diagnosed = 0  # diagnostics since the last action
        self.client = "mcp"  # the agent as it introduced itself (name/version)
        self._events: queue.Queue[_Event] = queue.Queue()
        self._lock = threading.RLock()  # _act records its call holding it
        self._waiting: Future[ToolResult] | None = None  # an action sent, not yet answered
        self._playing: Future[ToolResult] | None = None  # the one the runner took
        self._calls: list[dict[str, Any]] = []
        self._bad: list[str] = []
        self._turn = 0
        self._closed: str | None = None
        self._since = time.monotonic()  # when the agent was last given something to answer

    # The server's side (its event loop).

    async def call(
        self, name: str, arguments: dict[str, Any] | None, meta: Mapping[str, Any] | None
    ) -> ToolResult:
        started = time.monotonic()
        arguments = arguments if isinstance(arguments, dict) else {}
        meta = meta or {}
        self._introduced(meta)
        acts = {a.name for a in self.acting}
        if name in acts or name in {d.name for d in self.diagnostics}:
            future = self._act(arguments, meta, started, name)
            if isinstance(future, ToolResult):
                return future
            return await asyncio.wrap_future(future)
        if name == TASK_TOOL:
            result = self._task()
        elif name == STOP_TOOL:
            result = self._stop(arguments)
        else:
            names = (*acts, *(d.name for d in self.diagnostics), TASK_TOOL, STOP_TOOL)
            why = f"unknown tool '{name[:100]}'; the tools are {', '.join(names)}"
            result = self._bad_call(why)
        self._record("tool", name, arguments, meta, time.monotonic() - started, result.text)
        return result

    def _act(
        self, arguments: dict[str, Any], meta: Mapping[str, Any], started: float, name: str
    ) -> Future[ToolResult] | ToolResult:
        """The action, or a diagnostic (`name`), handed to the runner; or why not."""
        with self._lock:
            if self._closed is not None:
                result = self._over()
            elif name not in {a.name for a in self.acting}:
                if self._diagnosed >= self.max_diagnostics:
                    result = self._bad_call(
                        f"at most {self.max_diagnostics} diagnostics between two actions; "
                        f"act with {self.action.name} first"
                    )
                else:
                    self._diagnosed += 1
                    future: Future[ToolResult] = Future()
                    self._events.put(_Event("diagnostic", arguments, result=future, name=name))
                    return future
            elif self._waiting is not None:
                result = self._bad_call(
                    f"one action at a time: {self.action.name} is still being played; "
                    "wait for its result"
                )
            else:
                self._waiting = Future()
                self._turn += 1
                self._diagnosed = 0
                self._record("act", name, arguments, meta, started - self._since, "")
                self._events.put(_Event("action", arguments, result=self._waiting, name=name))
                return self._waiting
        self._record("tool", name, arguments, meta, 0.0, result.text)
        return result

    def _task(self) -> ToolResult:
        data = {
            "task": self.task,
            "action": self.action.name,
            "answer": self.answer.name if self.answer is not None else None,
            "diagnostics": [d.name for d in self.diagnostics],
            "max_diagnostics": self.max_diagnostics,
            "max_turns": self.max_turns,
            "turns_used": self._turn,
            "turns_left": max(0, self.max_turns - self._turn),
            "over": self._closed is not None,
        }
        note = (
            f"\n\n[Act with the tool {self.action.name}: each call is one turn "
            f"({data['turns_left']} of {self.max_turns} left); call {STOP_TOOL} when done."
        )
        if self.answer is not None:
            note += (
                f" End with your answer: call {self.answer.name} (one turn; it ends the episode)."
            )
        if self.diagnostics:
            looks = ", ".join(d.name for d in self.diagnostics)
            note += f" Look first with {looks} (no turn used; {self.max_diagnostics} per turn)."
        note += "]"
        return ToolResult(self.task + note, data)

    def _stop(self, arguments: dict[str, Any]) -> ToolResult:
        why = arguments.get("reason")
        reason = "the agent called stop" + (
            f": {why[:200]}" if isinstance(why, str) and why else ""
        )
        with self._lock:
            if self._closed is not None:
                return self._over()
            self._closed = reason
            self._events.put(_Event("stop", reason=reason))
        return ToolResult("The episode ends now; it is scored as it stands.", {"over": True})

    def _bad_call(self, why: str) -> ToolResult:
        self._bad.append(why)
        if len(self._bad) > self.max_bad_calls:
            self._events.put(
                _Event("fail", reason=f"{len(self._bad)} bad tool calls, the last: {why}")
            )
        return ToolResult(why, {"error": why}, error=True)

    def _over(self) -> ToolResult:
        return ToolResult(
            f"The episode is over ({self._closed}); call no more tools.",
            {"over": True, "reason": self._closed},
            error=True,
        )

    def _introduced(self, meta: Mapping[str, Any]) -> None:
        info = meta.get(CLIENT_META) or meta.get("io.modelcontextprotocol/clientInfo")
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            self.client = f"{info['name']}/{info.get('version', '')}"[:100]

    def _record(
        self,
        purpose: str,
        name: str,
        arguments: dict[str, Any],
        meta: Mapping[str, Any],
        latency_s: float,
        response: str,
    ) -> None:
        usage = meta.get(USAGE_META) if purpose == "act" else None
        usage = usage if isinstance(usage, dict) else {}
        request = f"{name[:100]} {json.dumps(arguments, ensure_ascii=False)}"
        call = {
            "purpose": purpose,
            "model": self.client,
            "prompt_tokens": _count(usage.get("prompt_tokens")),
            "completion_tokens": _count(usage.get("completion_tokens")),
            "latency_s": max(0.0, latency_s),
            "ttft_s": None,
            "tokens_per_s": None,
            "finish_reason": None,
            "request": request[:MAX_STORED],
            "response": response[:MAX_STORED],
            "dropped_turns": 0,
        }
        with self._lock:
            self._calls.append(call)

    # The runner's side (a worker thread).

    def exchange(
        self,
        observation: str,
        timeout_s: float,
        why_late: str,
        gone: Callable[[], AgentFailure | None] = lambda: None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Give the action being played (none on the first turn) its result, `observation`,
        and wait for the next action: (its arguments, the calls since the last one).

        Raises AgentStopped (stop), AgentFailure (too many bad calls, or what `gone`
        returns once the agent's program has ended) or AgentTimeout (`why_late`)."""
        with self._lock:
            if self._playing is not None:
                self._playing.set_result(self._observed(observation, None))
                self._playing = self._waiting = None
            self._since = time.monotonic()
        deadline = self._since + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                event = self._events.get(timeout=max(0.0, min(POLL_S, left)))
            except queue.Empty:
                ended = gone()
                if ended is not None:
                    try:  # an action sent just before it exited still counts
                        event = self._events.get_nowait()
                    except queue.Empty:
                        raise type(ended)(str(ended), calls=self.take_calls()) from None
                elif left <= 0:
                    raise AgentTimeout(why_late, calls=self.take_calls()) from None
                else:
                    continue
            if event.kind == "diagnostic":
                self._diagnose(event)
                continue
            if event.kind == "action":
                with self._lock:
                    self._playing = event.result
                    self.acted = event.name or self.action.name
                return event.arguments, self.take_calls()
            if event.kind == "stop":
                raise AgentStopped(event.reason, calls=self.take_calls())
            raise AgentFailure(event.reason, calls=self.take_calls())

    def _diagnose(self, event: _Event) -> None:
        """Run a diagnostic on this (the runner's) thread; its result goes to the agent."""
        assert self._probe is not None and event.result is not None
        started = time.monotonic()
        try:
            shown = self._probe(event.name, event.arguments)
        except BaseException:
            event.result.set_result(
                ToolResult("The environment failed; the episode ends.", {"over": True}, True)
            )
            raise
        data = {
            "diagnostic": event.name,
            "output": shown,
            "turn": self._turn,
            "turns_left": max(0, self.max_turns - self._turn),
        }
        elapsed = time.monotonic() - started
        self._record("diagnostic", event.name, event.arguments, {}, elapsed, shown)
        event.result.set_result(ToolResult(shown, data))

    def finish(self, observation: str, reason: str) -> None:
        """End the episode: the action being played gets its last result, saying why it
        ended; every later call is told the episode is over."""
        with self._lock:
            if self._closed is None:
                self._closed = reason
            if self._playing is not None:
                self._playing.set_result(self._observed(observation, reason))
                self._playing = self._waiting = None
            while True:
                try:
                    event = self._events.get_nowait()
                except queue.Empty:
                    break
                if event.result is not None and not event.result.done():
                    event.result.set_result(self._over())

    def take_calls(self) -> list[dict[str, Any]]:
        with self._lock:
            calls, self._calls = self._calls, []
        return calls

    def _observed(self, observation: str, ended: str | None) -> ToolResult:
        data = {
            "observation": observation,
            "turn": self._turn,
            "turns_left": max(0, self.max_turns - self._turn),
            "over": ended is not None,
            "reason": ended,
        }
        text = observation
        if ended is not None:
            text += f"\n\n[The episode is over: {ended}. Call no more tools.]"
        return ToolResult(text, data)


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 40
    return value if ok else None
