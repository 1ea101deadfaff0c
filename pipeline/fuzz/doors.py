"""Hostile answers through every agent door: each turn ends as a reply or a typed failure.

A door turns what an agent sends into the reply text an episode reads. Each is played the
way the runner plays it (`agent.episode(...)`, then `agent.reply(...)` per turn) against a
hostile peer of our own (pipeline/fuzz/peers.py), for the reply format of every app:

    text, json, tools   the LLM agent (`decoding` text, JSON schema, native tools) against
                        a chat endpoint streaming mutated content, tool calls with mutated
                        names, indices and arguments, mutated usage, and broken streams
                        (lines nested 200,000 deep, not JSON, error bodies, no usage)
    mcp, a2a            the MCP agent's server and the A2A agent (protocol_doors.py)

The property: `reply` returns a Reply whose text is a str and whose calls JSON can store, or
raises AgentFailure (a typed step), EnvironmentFailure (the model endpoint failed: an
env_error step) or ConfigError (a model name the endpoint does not serve); anything else
is a finding. The replies that come out are returned too: the app harness plays them in
the app's live episodes, so every door reaches every app's step.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.agents import Reply
from pipeline.core import canonical_json
from pipeline.errors import AgentFailure, ConfigError, EnvironmentFailure
from pipeline.fuzz.grammar import Mutator, json_string, nested, obj
from pipeline.fuzz.harness import MAX_REPRO, Finding, Target, mutate, seeds, trace
from pipeline.fuzz.peers import serve, sse

TYPED = {
    AgentFailure: "agent_failure",
    EnvironmentFailure: "env_error",
    ConfigError: "config_error",
}


@dataclass
class DoorTally:
    door: str
    tried: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    replies: dict[str, list[str]] = field(default_factory=dict)  # target -> replies out
    seconds: float = 0.0


class Turns:
    """Plays turns through one door and keeps the tally."""

    def __init__(self, tally: DoorTally, target: Target) -> None:
        self.tally = tally
        self.target = target
        self.sent = ""  # what the peer answered last (the finding's reproducer)

    def play(self, turn: Callable[[], Reply]) -> bool:
        """One turn; False when it ended the episode (a typed failure or a finding)."""
        self.tally.tried += 1
        try:
            reply = turn()
        except tuple(TYPED) as err:
            kind = next(v for k, v in TYPED.items() if isinstance(err, k))
            self.tally.outcomes[kind] += 1
            return False
        except Exception as err:
            self.tally.outcomes["exception"] += 1
            self._finding(type(err).__name__, f"{type(err).__name__}: {err}", err)
            return False
        why = _broken(reply)
        if why is not None:
            self._finding("property", why)
            return False
        self.tally.outcomes["reply"] += 1
        self.tally.replies.setdefault(self.target.name, []).append(reply.text)
        return True

    def _finding(self, kind: str, message: str, err: BaseException | None = None) -> None:
        where = trace(err) if err else ""
        sent = self.sent
        self.tally.findings.append(
            Finding(
                f"{self.tally.door} {self.target.name}",
                "door",
                kind,
                message[:500],
                sent[:MAX_REPRO],
                len(sent),
                where,
            )
        )


def _broken(reply: object) -> str | None:
    if not isinstance(reply, Reply) or not isinstance(reply.text, str):
        return f"the door gave a {type(reply).__name__}, not a Reply with text"
    try:
        canonical_json(reply.calls)
    except (TypeError, ValueError, RecursionError) as err:
        return f"the turn's calls cannot be stored: {type(err).__name__}: {err}"
    return None


# -- the LLM agent: text, json, tools ----------------------------------------------------


def chat_stream(mutator: Mutator, target: Target, decoding: str, seed: dict[str, str]) -> bytes:
    """One hostile answer of the chat endpoint (a whole HTTP body, SSE or not)."""
    rng = mutator.rng
    roll = rng.random()
    usage = '{"prompt_tokens": 11, "completion_tokens": 3}'
    if rng.random() < 0.25:
        usage = obj(prompt_tokens=mutator.json_value(), completion_tokens=mutator.json_value())
    tail = obj(choices="[]", usage=usage)
    if roll < 0.12:  # a broken stream line
        line = rng.choice(
            [nested(200_000, rng), nested(rng.choice([100, 1000]), rng), "not json", "[]",
             '{"error": {"message": ' + mutator.json_value() + "}}",
             '{"choices": ' + mutator.json_value() + "}", "1" * 5000]
        )  # fmt: skip
        return sse([line, tail])
    if roll < 0.16:
        return b"data: \xff\xfe{\n\n" + sse([tail])
    if decoding == "tools" and roll < 0.7:
        names = [target.app.reply_format.action.name, mutator.text(), "show", "run_code"]
        name = (
            json_string(rng.choice(names), escape=True)
            if rng.random() < 0.9
            else mutator.json_value()
        )
        arguments = mutator.json_reply(arguments_of(seed))
        if rng.random() < 0.4:
            arguments = json.dumps(arguments_of(seed), ensure_ascii=rng.random() < 0.5)
        index = "0" if rng.random() < 0.8 else mutator.json_value()
        function = obj(name=name, arguments=json_string(arguments, escape=rng.random() < 0.5))
        call = obj(index=index, id='"c"', type='"function"', function=function)
        calls = f"[{call}]" if rng.random() < 0.9 else f"[{call}, {call}, {mutator.json_value()}]"
        choice = obj(delta=obj(tool_calls=calls), finish_reason='"tool_calls"')
        return sse([obj(choices=f"[{choice}]"), tail])
    text = mutate(mutator, target.shape, seed)
    if decoding == "json" and rng.random() < 0.6:
        text = mutator.json_reply(seed)
    pieces = [text[i : i + 4096] for i in range(0, len(text), 4096)] or [""]
    events = [obj(choices=f"[{obj(delta=obj(content=json_string(p, True)))}]") for p in pieces]
    finish = mutator.json_value() if rng.random() < 0.1 else '"stop"'
    last = obj(choices=f"[{obj(delta='{}', finish_reason=finish)}]")
    return sse([*events, last, tail])


def arguments_of(seed: dict[str, str]) -> dict[str, str]:
    """The action's arguments of a seed reply (malt's code without its fence)."""
    if "code" in seed:
        return {"code": seed["code"].split("```python\n", 1)[-1].rsplit("```", 1)[0]}
    return seed


def llm_door(target: Target, decoding: str, turns: int, seed: str) -> DoorTally:
    """The LLM agent with `decoding` against a hostile chat endpoint."""
    from pipeline.build import make_agent
    from pipeline.config import compose
    from pipeline.llm.models import ModelPool

    tally = DoorTally(decoding)
    mutator = Mutator(f"{seed}:{decoding}:{target.name}")
    query = target.queries[0]
    pool = seeds(target, query)
    lock = threading.Lock()
    player = Turns(tally, target)

    def answer(method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        with lock:
            if mutator.rng.random() < 0.05:
                status = mutator.rng.choice([400, 404, 500])
                return (
                    status,
                    "application/json",
                    mutator.json_reply({"error": "x"}).encode("utf-8", "surrogatepass"),
                )
            out = chat_stream(mutator, target, decoding, mutator.rng.choice(pool))
            player.sent = out.decode("utf-8", "replace")
            return 200, "text/event-stream", out

    reasoning = "react" if decoding == "tools" else "none"
    with serve(answer) as url, ModelPool("/nonexistent-fuzz-data") as models:
        cfg = compose(
            [f"app={target.app.name}", "agent=zero_shot", "model=smollm2",
             "model.endpoint=external", f"model.base_url={url}/v1", f"agent.decoding={decoding}",
             f"agent.reasoning={reasoning}", "agent.max_probes=2"]
        )  # fmt: skip
        agent = make_agent(cfg, target.app, models)
        looks = probe(target)
        started = time.monotonic()
        while tally.tried < turns:
            with agent.episode(query, 3, looks):  # type: ignore[attr-defined]
                for turn in range(1, 4):
                    if not player.play(lambda t=turn: agent.reply(query, "ok", [], t)):
                        break
        tally.seconds = time.monotonic() - started
    return tally


def probe(target: Target) -> Callable[[str, dict[str, Any]], str]:
    """A diagnostic that only says what it was given (the app harness runs the real ones
    with mutated arguments)."""

    def probe(name: str, arguments: dict[str, Any]) -> str:
        return f"{name[:50]}: {len(arguments)} arguments"

    return probe
