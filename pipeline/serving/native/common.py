"""What the native providers share: the conversation split into a system prompt and
alternating turns, a reply assembled from stream events under a size bound, the response
cache around a send, and the OpenAI `finish_reason` words every provider's stop reason
maps to (so `calls.finish_reason = 'length'` means a reply cut by max_tokens everywhere).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pipeline.errors import EnvironmentFailure
from pipeline.serving.client import MAX_REPLY_CHARS, MISS, ChatResult, Message, Sampling, ToolCall
from pipeline.untrusted import storable

if TYPE_CHECKING:
    from pipeline.serving.cache import ResponseCache

# An empty turn is refused by both APIs (a reply that was only a tool call leaves an empty
# assistant text in the history); it is sent as this instead.
EMPTY_TURN = "(empty)"


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[tuple[str, str]]]:
    """(the system prompt, [(role, text)]): system messages joined into the one system
    prompt both APIs take apart from the turns; consecutive turns of one role joined (both
    APIs want user and assistant to alternate); empty text replaced by EMPTY_TURN."""
    system = [storable(m.get("content") or "") for m in messages if m.get("role") == "system"]
    turns: list[tuple[str, str]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        text = storable(message.get("content") or "") or EMPTY_TURN
        role = "assistant" if role == "assistant" else "user"
        if turns and turns[-1][0] == role:
            turns[-1] = (role, f"{turns[-1][1]}\n\n{text}")
        else:
            turns.append((role, text))
    return ("\n\n".join(system) if system else None), turns


def tool_schema(tool: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(name, description, JSON schema of the arguments) of an OpenAI `tools` entry."""
    function = tool.get("function", tool)
    return (
        str(function["name"]),
        str(function.get("description", "")),
        dict(function.get("parameters") or {"type": "object"}),
    )


def forced_tool(tool_choice: Any) -> str | None:
    """The tool an OpenAI `tool_choice` names, else None."""
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name")
        return str(name) if name else None
    return None


def json_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON schema an OpenAI `response_format` of type json_schema constrains to."""
    if not response_format or response_format.get("type") != "json_schema":
        return None
    return dict(response_format["json_schema"]["schema"])


class Assembled:
    """A reply as its stream events arrive: text, tool calls (name, argument pieces),
    the time of the first token; more than MAX_REPLY_CHARS is the endpoint's failure."""

    def __init__(self, where: str, max_tokens: int) -> None:
        self.where = where
        self.max_tokens = max_tokens
        self.started = time.perf_counter()
        self.first: float | None = None
        self.text: list[str] = []
        self.calls: dict[int, list[str]] = {}  # index -> [name, argument pieces...]
        self.size = 0

    def add_text(self, text: Any) -> None:
        if isinstance(text, str) and text:
            self._grow(len(text))
            self.text.append(text)

    def add_call(self, index: int, name: Any = None, arguments: Any = None) -> None:
        found = self.calls.setdefault(index, [""])
        if isinstance(name, str) and name:
            self._grow(len(name))
            found[0] = name
        if isinstance(arguments, str) and arguments:
            self._grow(len(arguments))
            found.append(arguments)

    def _grow(self, size: int) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        self.size += size
        if self.size > MAX_REPLY_CHARS:
            raise EnvironmentFailure(
                f"model endpoint {self.where} sent more than {MAX_REPLY_CHARS} characters in "
                f"one reply (max_tokens {self.max_tokens}); it does not honour max_tokens"
            )

    def result(
        self,
        model: str,
        *,
        prompt: int,
        completion: int,
        cached: int | None,
        finish: str | None,
    ) -> ChatResult:
        done = time.perf_counter()
        latency = done - self.started
        return ChatResult(
            text="".join(self.text),
            prompt_tokens=prompt,
            completion_tokens=completion,
            latency_s=latency,
            ttft_s=(self.first if self.first is not None else done) - self.started,
            tokens_per_s=completion / latency if latency > 0 else 0.0,
            finish_reason=finish,
            model=model,
            tool_calls=tuple(
                ToolCall(found[0], "".join(found[1:])) for _, found in sorted(self.calls.items())
            ),
            cached_tokens=cached,
        )


class NativeChat:
    """`chat` of ChatClient's interface for a native provider: the request's body in the
    provider's own form (`body`, a plain-JSON builder), answered by the cache or `_send`."""

    model: str
    sampling: Sampling
    body: Callable[..., dict[str, Any]]  # staticmethod(anthropic_body), ...

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        sampling: Sampling | None = None,
        response_format: dict[str, Any] | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        cache: ResponseCache | None = None,
    ) -> ChatResult:
        body = self.body(
            self.model,
            messages,
            sampling or self.sampling,
            response_format=response_format,
            tools=tools,
            tool_choice=tool_choice,
        )
        return await answered(cache, body, self._send)

    async def _send(self, body: dict[str, Any]) -> ChatResult:
        raise NotImplementedError


async def answered(
    cache: ResponseCache | None,
    body: dict[str, Any],
    send: Callable[[dict[str, Any]], Awaitable[ChatResult]],
) -> ChatResult:
    """`send(body)`, or the cache's reply to `body`; a new whole reply is kept."""
    if cache is None:
        return await send(body)
    key = cache.key(body)
    found = cache.get(key)
    if found is not None:
        return found
    result = await send(body)
    cache.put(key, result)  # only a whole reply: a failed request raised above
    return dataclasses.replace(result, cache=MISS)


def count(value: Any) -> int:
    """A token count from the server; anything that is not a non-negative integer is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
