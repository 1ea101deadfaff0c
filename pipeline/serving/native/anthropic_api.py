"""Anthropic's Messages API through the official `anthropic` SDK (`model.provider: anthropic`).

The request (`anthropic_body`, which is also what the response cache keys): the system
messages as `system`, the turns as `messages` (common.split_system), `max_tokens` (the
API has no temperature and no seed any more, so the config refuses them:
pipeline/serving/config.py), a JSON reply as
`output_config.format` (structured outputs), tools as `tools` with `input_schema`, and
`tool_choice` as auto / any (OpenAI's "required") / none / {"type": "tool", "name"}. The
reply streams (`stream: true`): text deltas, tool_use blocks whose input arrives as JSON
pieces, and the usage of message_start and message_delta. Prompt tokens are
`input_tokens + cache_read_input_tokens + cache_creation_input_tokens` (Anthropic counts
them apart), the cached ones `cache_read_input_tokens`.

Stop reasons become OpenAI finish reasons: end_turn and stop_sequence `stop`, max_tokens
`length`, tool_use `tool_calls`; refusal and any other stay as Anthropic names them (a
refusal holds no usable action: the agent's repair chain and then a parse_error step).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anthropic

from pipeline.errors import EnvironmentFailure
from pipeline.serving.client import ChatResult, Message, Sampling
from pipeline.serving.native.common import (
    Assembled,
    NativeChat,
    count,
    forced_tool,
    json_schema,
    split_system,
    tool_schema,
)
from pipeline.serving.native.errors import status_error, transport_error

if TYPE_CHECKING:
    pass

PROVIDER = "anthropic"
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


def anthropic_body(
    model: str,
    messages: Sequence[Message],
    sampling: Sampling,
    *,
    response_format: dict[str, Any] | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of `messages.create` for one request (plain JSON)."""
    system, turns = split_system(messages)
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": role, "content": text} for role, text in turns],
        "max_tokens": sampling.max_tokens,
        "stream": True,
    }
    if system is not None:
        body["system"] = system
    schema = json_schema(response_format)
    if schema is not None:
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    if tools:
        body["tools"] = [
            {"name": name, "description": text, "input_schema": params}
            for name, text, params in map(tool_schema, tools)
        ]
        named = forced_tool(tool_choice)
        if named is not None:
            body["tool_choice"] = {"type": "tool", "name": named}
        elif tool_choice in ("required", "auto", "none"):
            body["tool_choice"] = {"type": {"required": "any"}.get(tool_choice, tool_choice)}
    return body


class AnthropicClient(NativeChat):
    """ChatClient's interface (`chat`, `aclose`) over the Messages API; one per event loop."""

    body = staticmethod(anthropic_body)

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str,
        key_variable: str,
        headers: dict[str, str] | None = None,
        sampling: Sampling | None = None,
        max_in_flight: int = 8,
        timeout_s: float = 300.0,
        retries: int = 2,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.sampling = sampling or Sampling(seed=None)
        self.retries = retries
        self._key_variable = key_variable
        self._secret = api_key
        self._in_flight = asyncio.Semaphore(max_in_flight)
        # The SDK retries what may pass (connection failures, 408, 409, 429, 5xx and 529
        # overloaded) `retries` times with backoff, honouring retry-after; nothing else.
        self._sdk = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=self.base_url,
            default_headers=headers or {},
            max_retries=retries,
            timeout=timeout_s,
        )

    async def _send(self, body: dict[str, Any]) -> ChatResult:
        async with self._in_flight:
            reply = Assembled(self.base_url, body["max_tokens"])
            usage: dict[str, int] = {}
            finish: str | None = None
            try:
                stream = await self._sdk.messages.create(**body)
                async with stream:
                    async for event in stream:
                        finish = _take(event, reply, usage) or finish
            except anthropic.APIStatusError as err:
                raise status_error(
                    self.base_url, self.model, err.status_code, err.message,
                    self._key_variable, attempts=self.retries + 1, secret=self._secret,
                ) from None  # fmt: skip
            except (anthropic.APIConnectionError, anthropic.APIResponseValidationError) as err:
                raise transport_error(self.base_url, err, self.retries + 1) from None
            except (ValueError, TypeError, AttributeError) as err:  # a body the SDK misread
                raise EnvironmentFailure(
                    f"model endpoint {self.base_url} sent a reply that is not a Messages API "
                    f"stream ({type(err).__name__}: {str(err)[:200]!r})"
                ) from None
        if "input" not in usage:
            raise EnvironmentFailure(
                f"model endpoint {self.base_url} sent no message_start with token usage; "
                "it does not speak the Messages API"
            )
        prompt = usage["input"] + usage.get("read", 0) + usage.get("created", 0)
        return reply.result(
            self.model,
            prompt=prompt,
            completion=usage.get("output", 0),
            cached=usage.get("read"),
            finish=FINISH.get(finish, finish) if finish else None,
        )

    async def aclose(self) -> None:
        await self._sdk.close()


def _take(event: Any, reply: Assembled, usage: dict[str, int]) -> str | None:
    """Add one stream event to `reply` and `usage`; the stop reason if it carries one."""
    kind = getattr(event, "type", None)
    if kind == "message_start":
        _usage(getattr(getattr(event, "message", None), "usage", None), usage)
    elif kind == "content_block_start":
        block = getattr(event, "content_block", None)
        if getattr(block, "type", None) == "tool_use":
            reply.add_call(_index(event), getattr(block, "name", None))
            given = getattr(block, "input", None)
            if isinstance(given, dict) and given:  # a whole input, not streamed pieces
                reply.add_call(_index(event), arguments=json.dumps(given))
        elif getattr(block, "type", None) == "text":
            reply.add_text(getattr(block, "text", None))
    elif kind == "content_block_delta":
        delta = getattr(event, "delta", None)
        if getattr(delta, "type", None) == "text_delta":
            reply.add_text(getattr(delta, "text", None))
        elif getattr(delta, "type", None) == "input_json_delta":
            reply.add_call(_index(event), arguments=getattr(delta, "partial_json", None))
    elif kind == "message_delta":
        _usage(getattr(event, "usage", None), usage)
        stop = getattr(getattr(event, "delta", None), "stop_reason", None)
        return stop if isinstance(stop, str) else None
    return None


def _usage(value: Any, usage: dict[str, int]) -> None:
    """Counts of a usage object (message_delta's are cumulative: the latest wins)."""
    for name, key in (
        ("input_tokens", "input"),
        ("output_tokens", "output"),
        ("cache_read_input_tokens", "read"),
        ("cache_creation_input_tokens", "created"),
    ):
        found = getattr(value, name, None)
        if found is not None:
            usage[key] = count(found)


def _index(event: Any) -> int:
    index = getattr(event, "index", 0)
    return index if isinstance(index, int) else 0
