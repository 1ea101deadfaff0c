"""Async OpenAI-compatible chat client that measures every call.

Each call streams (`POST {base_url}/chat/completions`, `stream: true`, with
`stream_options.include_usage` so the server reports token counts) and returns a
`ChatResult`: the text, the server's prompt and completion token counts, the latency, the
time to first token and completion tokens per second. A semaphore bounds the requests in
flight; only connection failures (nothing was sent) are retried, with exponential backoff.

Errors: an unreachable endpoint is an EnvironmentFailure; a model name the server does not
serve is a ModelNotFound (a ConfigError) quoting the server's message; a request the server
rejects (e.g. a prompt past the context length) is a RequestRejected with its message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import httpx

from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.serving.server import Endpoint
from pipeline.untrusted import JSON, storable

if TYPE_CHECKING:
    from pipeline.serving.cache import ResponseCache

Message = dict[str, str]
# What one reply may hold before the endpoint counts as broken: far more than any
# max_tokens we send, and a bound on the memory a hostile endpoint can make us use.
MAX_REPLY_CHARS = 4 << 20
MAX_LINE_BYTES = 8 << 20
HIT, MISS = "hit", "miss"  # ChatResult.cache and `calls.cache` (None: no cache)


class ModelNotFound(ConfigError):
    """The endpoint does not serve the requested model name (HTTP 404)."""


class RequestRejected(EnvironmentFailure):
    """The server refused one request (HTTP 4xx other than 404), e.g. too long a prompt."""

    def __init__(self, message: str, status: int, server_message: str) -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters sent with every request."""

    temperature: float | None = 0.0  # None: not sent (Anthropic's API has none)
    max_tokens: int = 512
    seed: int | None = 0


@dataclass(frozen=True)
class ToolCall:
    """One function call a model made: its name and its arguments as the JSON text sent."""

    name: str
    arguments: str


@dataclass(frozen=True)
class ChatResult:
    """One chat completion and its measurements (seconds; token counts from the server)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    ttft_s: float
    tokens_per_s: float  # completion_tokens / latency_s: what the caller waited for
    finish_reason: str | None
    model: str
    tool_calls: tuple[ToolCall, ...] = ()
    cache: str | None = None  # HIT (replayed from the response cache), MISS, None (no cache)
    # Prompt tokens the server read from its prompt cache (usage.prompt_tokens_details;
    # priced as cached input, pipeline/pricing.py); None when it did not say.
    cached_tokens: int | None = None


class ChatClient:
    """`async with ChatClient(base_url, model) as client: await client.chat(messages)`.

    One client per event loop (its connections and semaphore belong to the loop).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        sampling: Sampling | None = None,
        max_in_flight: int = 8,
        timeout_s: float = 300.0,
        connect_timeout_s: float = 5.0,
        connect_retries: int = 2,
        backoff_s: float = 0.2,
        cache: ResponseCache | None = None,
    ) -> None:
        if max_in_flight < 1:
            raise ConfigError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.sampling = sampling or Sampling()
        self.connect_retries = connect_retries
        self.backoff_s = backoff_s
        self.cache = cache  # pipeline/serving/cache.py: replies replayed by request
        self._in_flight = asyncio.Semaphore(max_in_flight)
        sent = dict(headers or {})
        if api_key:
            sent["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.AsyncClient(
            headers=sent,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            limits=httpx.Limits(
                max_connections=max_in_flight, max_keepalive_connections=max_in_flight
            ),
        )

    @classmethod
    def for_endpoint(cls, endpoint: Endpoint, **kwargs: Any) -> ChatClient:
        """A client for a ManagedServer or ExternalEndpoint (after it has started)."""
        return cls(endpoint.base_url, endpoint.model, api_key=endpoint.api_key, **kwargs)

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
        """One streamed chat completion, waiting for a free slot first. `response_format`
        (e.g. a JSON schema), `tools` and `tool_choice` are sent as the OpenAI API names
        them; the model's tool calls come back in `ChatResult.tool_calls`. `cache` (else
        the client's own, if any) answers a request it holds and keeps each new reply."""
        body = request_body(
            self.model,
            messages,
            sampling or self.sampling,
            response_format=response_format,
            tools=tools,
            tool_choice=tool_choice,
        )
        cache = cache or self.cache
        if cache is None:
            return await self._send(body)
        key = cache.key(body)
        found = cache.get(key)
        if found is not None:
            return found
        result = await self._send(body)
        cache.put(key, result)  # only a whole reply: a failed request raised above
        return dataclasses.replace(result, cache=MISS)

    async def _send(self, body: dict[str, Any]) -> ChatResult:
        """`body` sent, waiting for a free slot first; connection failures retried."""
        async with self._in_flight:
            for attempt in range(self.connect_retries + 1):
                try:
                    return await self._stream(body)
                except (httpx.ConnectError, httpx.ConnectTimeout) as err:
                    if attempt == self.connect_retries:
                        raise EnvironmentFailure(
                            f"cannot reach the model endpoint {self.base_url} "
                            f"({type(err).__name__}: {err or 'no answer'}) after "
                            f"{attempt + 1} attempts; is the server running?"
                        ) from err
                    await asyncio.sleep(self.backoff_s * 2**attempt)
                except httpx.TimeoutException as err:
                    raise EnvironmentFailure(
                        f"model endpoint {self.base_url} did not answer in time "
                        f"({type(err).__name__}); raise timeout_s or check the server"
                    ) from err
                except httpx.TransportError as err:
                    # Not retried: the request may have reached the server.
                    raise EnvironmentFailure(
                        f"model endpoint {self.base_url} failed during the request "
                        f"({type(err).__name__}: {err})"
                    ) from err
        raise AssertionError("unreachable")

    async def _stream(self, body: dict[str, Any]) -> ChatResult:
        url = f"{self.base_url}/chat/completions"
        started = time.perf_counter()
        first: float | None = None
        parts: list[str] = []
        calls: dict[int, list[str]] = {}  # tool-call index -> [name, argument fragments...]
        size = 0
        usage: dict[str, Any] | None = None
        finish: str | None = None
        async with self._http.stream("POST", url, json=body) as reply:
            if reply.status_code != 200:
                body_bytes = await _read_capped(reply, MAX_LINE_BYTES)
                raise self._http_error(reply.status_code, body_bytes)
            async for line in _lines(reply, self.base_url):
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                chunk = self._chunk(data)
                for choice in _list(chunk.get("choices")):
                    delta = choice.get("delta") if isinstance(choice, dict) else None
                    text = delta.get("content") if isinstance(delta, dict) else None
                    pieces = [text] if isinstance(text, str) and text else []
                    if isinstance(delta, dict):
                        pieces += _tool_fragments(delta.get("tool_calls"), calls)
                    for piece in pieces:
                        if first is None:
                            first = time.perf_counter()
                        size += len(piece)
                    if isinstance(text, str) and text:
                        parts.append(text)
                    if pieces and size > MAX_REPLY_CHARS:
                        raise EnvironmentFailure(
                            f"model endpoint {self.base_url} sent more than "
                            f"{MAX_REPLY_CHARS} characters in one reply (max_tokens "
                            f"{body['max_tokens']}); it does not honour max_tokens"
                        )
                    if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str):
                        finish = choice["finish_reason"]
                if isinstance(chunk.get("usage"), dict):
                    usage = chunk["usage"]
        done = time.perf_counter()
        if usage is None:
            raise EnvironmentFailure(
                f"model endpoint {self.base_url} sent no token usage; it must support "
                f"stream_options.include_usage (vLLM and OpenAI do)"
            )
        latency = done - started
        completion = _count(usage.get("completion_tokens"))
        return ChatResult(
            text="".join(parts),
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=completion,
            latency_s=latency,
            ttft_s=(first if first is not None else done) - started,
            tokens_per_s=completion / latency if latency > 0 else 0.0,
            finish_reason=finish,
            model=self.model,
            tool_calls=tuple(
                ToolCall(found[0], "".join(found[1:])) for _, found in sorted(calls.items())
            ),
            cached_tokens=_cached(usage),
        )

    def _chunk(self, data: str) -> dict[str, Any]:
        """One stream event as a JSON object; anything else is the endpoint's failure."""
        try:  # every number JSON allows (pipeline/untrusted.py: JSON)
            chunk = JSON.decode(data)
        except (ValueError, RecursionError):
            chunk = None
        if not isinstance(chunk, dict):
            raise EnvironmentFailure(
                f"model endpoint {self.base_url} sent a stream line that is not a JSON "
                f"object: {data[:200]!r}"
            )
        if "error" in chunk:
            raise EnvironmentFailure(
                f"model endpoint {self.base_url} failed mid-stream: {_server_message(chunk)}"
            )
        return chunk

    def _http_error(self, status: int, body: bytes) -> Exception:
        message = _server_message(_json_or_text(body))
        where = f"{self.base_url} (HTTP {status})"
        if status == 404:
            return ModelNotFound(
                f"model endpoint {where} does not serve model '{self.model}': {message}; "
                f"check the model config's served_name"
            )
        if 400 <= status < 500:
            return RequestRejected(
                f"model endpoint {where} rejected the request: {message}",
                status,
                message,
            )
        return EnvironmentFailure(f"model endpoint {where} failed: {message}")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def request_body(
    model: str,
    messages: Sequence[Message],
    sampling: Sampling,
    *,
    response_format: dict[str, Any] | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one streamed chat completion, as ChatClient.chat sends it (and as
    the response cache keys it)."""
    body: dict[str, Any] = {
        "model": model,
        # A model's earlier reply (or what an environment printed) may hold a lone
        # surrogate, which no JSON body can carry: it is sent as its escape.
        "messages": [{k: storable(v) for k, v in m.items()} for m in messages],
        "temperature": sampling.temperature,
        "max_tokens": sampling.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if response_format is not None:
        body["response_format"] = response_format
    if tools:
        body["tools"] = list(tools)
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
    return body


async def _read_capped(reply: httpx.Response, limit: int) -> bytes:
    """An error body, at most `limit` bytes of it (the rest is not read)."""
    kept = bytearray()
    async for piece in reply.aiter_bytes():
        kept += piece[: max(0, limit - len(kept))]
        if len(kept) >= limit:
            break
    return bytes(kept)


async def _lines(reply: httpx.Response, where: str) -> AsyncIterator[str]:
    """The stream's lines, none longer than MAX_LINE_BYTES (a server that never sends a
    newline cannot make us hold its whole body)."""
    pending = b""
    async for piece in reply.aiter_bytes():
        pending += piece
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.decode("utf-8", errors="replace").rstrip("\r")
        if len(pending) > MAX_LINE_BYTES:
            raise EnvironmentFailure(
                f"model endpoint {where} sent a stream line longer than {MAX_LINE_BYTES} bytes"
            )
    if pending:
        yield pending.decode("utf-8", errors="replace").rstrip("\r")


def _tool_fragments(value: Any, calls: dict[int, list[str]]) -> list[str]:
    """Add a stream delta's tool-call fragments to `calls`; return the text they add.
    A call's name comes once, its arguments in pieces; odd shapes are ignored."""
    added = []
    for position, item in enumerate(_list(value)):
        if not isinstance(item, dict):
            continue
        index = item.get("index", position)
        function = item.get("function")
        if not isinstance(index, int) or not isinstance(function, dict):
            continue
        found = calls.setdefault(index, [""])
        name, arguments = function.get("name"), function.get("arguments")
        if isinstance(name, str) and name:
            found[0] = name
            added.append(name)
        if isinstance(arguments, str) and arguments:
            found.append(arguments)
            added.append(arguments)
    return added


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(value: Any) -> int:
    """A token count from the server; anything that is not a non-negative integer is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _json_or_text(body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _server_message(payload: Any) -> str:
    """The human part of an OpenAI-style error body, whichever of its shapes it has."""
    if isinstance(payload, dict):
        err = payload.get("error", payload)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
        if payload.get("message"):
            return str(payload["message"])
    return str(payload)[:500] or "(empty body)"


def _cached(usage: dict[str, Any]) -> int | None:
    details = usage.get("prompt_tokens_details")
    if not isinstance(details, dict) or details.get("cached_tokens") is None:
        return None
    return _count(details.get("cached_tokens"))
