"""The Gemini API through the official `google-genai` SDK (`model.provider: gemini`).

The request (`gemini_body`, which is also what the response cache keys): the turns as
`contents` (user and model roles), the system messages as `config.system_instruction`,
`temperature`, `max_output_tokens` and `seed`, a JSON reply as `response_mime_type`
application/json with `response_json_schema`, tools as `function_declarations` with
`parameters_json_schema`, and `tool_choice` as the function-calling mode AUTO / ANY
(OpenAI's "required"; a named tool: ANY with `allowed_function_names`) / NONE; the SDK's
automatic function calling is off (NetGauge runs the tools). The reply streams
(`streamGenerateContent?alt=sse`); thought parts are not the reply. Prompt tokens are
`prompt_token_count` (its `cached_content_token_count` the cached ones), completion
tokens `candidates_token_count + thoughts_token_count` (both billed as output).

Finish reasons become OpenAI's: STOP `stop`, MAX_TOKENS `length`, a reply with a function
call `tool_calls`; SAFETY, RECITATION and the others stay as Gemini names them (lower
case), and a prompt Gemini blocked is `blocked:<reason>` with no reply: each holds no
usable action, so the agent's repair chain and then a parse_error step follow.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx
from google import genai
from google.genai import errors as genai_errors

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

PROVIDER = "gemini"
API_VERSION = "v1beta"
RETRIED = [429, 500, 502, 503, 504]  # the HTTP statuses retried, with backoff
MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}


def gemini_body(
    model: str,
    messages: Sequence[Message],
    sampling: Sampling,
    *,
    response_format: dict[str, Any] | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of `models.generate_content_stream` (plain JSON)."""
    system, turns = split_system(messages)
    config: dict[str, Any] = {
        "temperature": sampling.temperature,
        "max_output_tokens": sampling.max_tokens,
        "automatic_function_calling": {"disable": True},
    }
    if sampling.seed is not None:
        config["seed"] = sampling.seed
    if system is not None:
        config["system_instruction"] = system
    schema = json_schema(response_format)
    if schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = schema
    if tools:
        declared = [
            {"name": name, "description": text, "parameters_json_schema": params}
            for name, text, params in map(tool_schema, tools)
        ]
        config["tools"] = [{"function_declarations": declared}]
        named = forced_tool(tool_choice)
        if named is not None:
            calling = {"mode": "ANY", "allowed_function_names": [named]}
            config["tool_config"] = {"function_calling_config": calling}
        elif isinstance(tool_choice, str) and tool_choice in MODES:
            config["tool_config"] = {"function_calling_config": {"mode": MODES[tool_choice]}}
    contents = [
        {"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
        for role, text in turns
    ]
    return {"model": model, "contents": contents, "config": config}


class GeminiClient(NativeChat):
    """ChatClient's interface (`chat`, `aclose`) over the Gemini API; one per event loop."""

    body = staticmethod(gemini_body)

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
        backoff_s: float = 1.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.sampling = sampling or Sampling()
        self.attempts = retries + 1
        self._key_variable = key_variable
        self._secret = api_key
        self._in_flight = asyncio.Semaphore(max_in_flight)
        # Our own httpx client (the SDK would otherwise pick aiohttp when it is installed),
        # so connection failures and timeouts are httpx's, as in pipeline/serving/client.py.
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=5.0))
        options = genai.types.HttpOptions(
            base_url=self.base_url,
            api_version=API_VERSION,
            headers=dict(headers or {}),
            httpx_async_client=self._http,
            retry_options=genai.types.HttpRetryOptions(
                attempts=self.attempts,
                initial_delay=backoff_s,
                max_delay=8 * backoff_s,
                jitter=backoff_s / 4,
                http_status_codes=RETRIED,
            ),
        )
        self._sdk = genai.Client(api_key=api_key, http_options=options)

    async def _send(self, body: dict[str, Any]) -> ChatResult:
        async with self._in_flight:
            reply = Assembled(self.base_url, body["config"]["max_output_tokens"])
            state: dict[str, Any] = {}
            try:
                stream = await self._sdk.aio.models.generate_content_stream(**body)
                async for chunk in stream:
                    _take(chunk, reply, state)
            except genai_errors.APIError as err:
                raise status_error(
                    self.base_url, self.model, err.code, err.message or err.status,
                    self._key_variable, attempts=self.attempts, secret=self._secret,
                ) from None  # fmt: skip
            except (httpx.TransportError, OSError) as err:
                raise transport_error(self.base_url, err, self.attempts) from None
            except (ValueError, TypeError, AttributeError, KeyError) as err:
                raise EnvironmentFailure(
                    f"model endpoint {self.base_url} sent a reply that is not a Gemini API "
                    f"stream ({type(err).__name__}: {str(err)[:200]!r})"
                ) from None
        usage = state.get("usage")
        if usage is None:
            raise EnvironmentFailure(
                f"model endpoint {self.base_url} sent no usage_metadata; it does not speak "
                "the Gemini API"
            )
        finish = state.get("finish")
        if reply.calls and finish in (None, "stop"):
            finish = "tool_calls"
        return reply.result(
            self.model,
            prompt=count(getattr(usage, "prompt_token_count", None)),
            completion=count(getattr(usage, "candidates_token_count", None))
            + count(getattr(usage, "thoughts_token_count", None)),
            cached=_cached(usage),
            finish=finish,
        )

    async def aclose(self) -> None:
        await self._http.aclose()


def _take(chunk: Any, reply: Assembled, state: dict[str, Any]) -> None:
    """Add one streamed GenerateContentResponse to `reply` and `state` (usage, finish)."""
    if getattr(chunk, "usage_metadata", None) is not None:
        state["usage"] = chunk.usage_metadata  # cumulative: the latest wins
    blocked = getattr(getattr(chunk, "prompt_feedback", None), "block_reason", None)
    if blocked is not None:
        state["finish"] = f"blocked:{_name(blocked)}"
    for candidate in (getattr(chunk, "candidates", None) or [])[:1]:
        parts = getattr(getattr(candidate, "content", None), "parts", None) or []
        for part in parts:
            call = getattr(part, "function_call", None)
            if call is not None:
                index = len(reply.calls)
                reply.add_call(index, getattr(call, "name", None) or "")
                arguments = getattr(call, "args", None)
                reply.add_call(index, arguments=json.dumps(arguments or {}))
            elif not getattr(part, "thought", None):
                reply.add_text(getattr(part, "text", None))
        reason = getattr(candidate, "finish_reason", None)
        if reason is not None:
            name = _name(reason).lower()
            state["finish"] = {"stop": "stop", "max_tokens": "length"}.get(name, name)


def _name(value: Any) -> str:
    return str(getattr(value, "name", None) or getattr(value, "value", None) or value)


def _cached(usage: Any) -> int | None:
    found = getattr(usage, "cached_content_token_count", None)
    return None if found is None else count(found)
