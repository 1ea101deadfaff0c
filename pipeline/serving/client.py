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
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import httpx

from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.serving.server import Endpoint

Message = dict[str, str]


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

    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = 0


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
        sampling: Sampling | None = None,
        max_in_flight: int = 8,
        timeout_s: float = 300.0,
        connect_timeout_s: float = 5.0,
        connect_retries: int = 2,
        backoff_s: float = 0.2,
    ) -> None:
        if max_in_flight < 1:
            raise ConfigError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.sampling = sampling or Sampling()
        self.connect_retries = connect_retries
        self.backoff_s = backoff_s
        self._in_flight = asyncio.Semaphore(max_in_flight)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            headers=headers,
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
        self, messages: Sequence[Message], *, sampling: Sampling | None = None
    ) -> ChatResult:
        """One streamed chat completion, waiting for a free slot first."""
        s = sampling or self.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if s.seed is not None:
            body["seed"] = s.seed
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
        usage: dict[str, Any] | None = None
        finish: str | None = None
        async with self._http.stream("POST", url, json=body) as reply:
            if reply.status_code != 200:
                await reply.aread()
                raise self._http_error(reply)
            async for line in reply.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise EnvironmentFailure(
                        f"model endpoint {self.base_url} sent a stream line that is not "
                        f"JSON: {data[:200]!r}"
                    ) from None
                if "error" in chunk:
                    raise EnvironmentFailure(
                        f"model endpoint {self.base_url} failed mid-stream: "
                        f"{_server_message(chunk)}"
                    )
                for choice in chunk.get("choices") or []:
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        if first is None:
                            first = time.perf_counter()
                        parts.append(text)
                    finish = choice.get("finish_reason") or finish
                usage = chunk.get("usage") or usage
        done = time.perf_counter()
        if usage is None:
            raise EnvironmentFailure(
                f"model endpoint {self.base_url} sent no token usage; it must support "
                f"stream_options.include_usage (vLLM and OpenAI do)"
            )
        latency = done - started
        completion = int(usage.get("completion_tokens") or 0)
        return ChatResult(
            text="".join(parts),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=completion,
            latency_s=latency,
            ttft_s=(first if first is not None else done) - started,
            tokens_per_s=completion / latency if latency > 0 else 0.0,
            finish_reason=finish,
            model=self.model,
        )

    def _http_error(self, reply: httpx.Response) -> Exception:
        message = _server_message(_json_or_text(reply))
        where = f"{self.base_url} (HTTP {reply.status_code})"
        if reply.status_code == 404:
            return ModelNotFound(
                f"model endpoint {where} does not serve model '{self.model}': {message}; "
                f"check the model config's served_name"
            )
        if 400 <= reply.status_code < 500:
            return RequestRejected(
                f"model endpoint {where} rejected the request: {message}",
                reply.status_code,
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


def _json_or_text(reply: httpx.Response) -> Any:
    try:
        return reply.json()
    except ValueError:
        return reply.text


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
