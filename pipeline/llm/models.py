"""Served models for LLM agents: one endpoint per model, one event loop for all requests.

`ModelPool` opens each model's endpoint once (a managed vLLM server is started on first
use and stopped when the pool closes, also on error) and hands out `ChatBackend`s whose
blocking `chat()` runs on the pool's asyncio loop, so episodes on many threads share one
HTTP client per model and the server batches their requests. A model with `cache: true`
has its replies cached under the data directory's `cache/responses/`
(pipeline/serving/cache.py), and its endpoint is opened (a managed server started) only
when a request misses the cache. A model whose `provider` is not "openai" is reached
through its vendor's SDK (pipeline/serving/native/), behind the same ChatBackend.

Servers are started on a thread of the pool's own, which lives as long as the pool: a
managed server dies with the thread that started it (PR_SET_PDEATHSIG, so that a killed
run leaves no server behind), and the first request may come from an episode's or a
cell's thread that ends long before the pool does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from pipeline.cells import Layout
from pipeline.errors import ConfigError
from pipeline.heartbeat import waiting
from pipeline.serving.cache import ResponseCache
from pipeline.serving.client import ChatClient, ChatResult, Sampling, request_body
from pipeline.serving.config import VllmModelConfig
from pipeline.serving.native import body_of, native_client
from pipeline.serving.server import open_endpoint
from pipeline.variants import result_settings


class ChatBackend:
    """Blocking access to one model, safe to call from any thread. `client` gives the
    model's client, opening its endpoint on first use (a managed server starts then)."""

    def __init__(
        self,
        client: Callable[[], ChatClient],
        loop: asyncio.AbstractEventLoop,
        model: VllmModelConfig,
        sampling: Sampling,
        cache: ResponseCache | None = None,
    ) -> None:
        self.client = client
        self._loop = loop
        self._served = model.served_name
        self._cache = cache
        # The request as the model's provider sends it: what its cached reply is keyed by.
        self._body = request_body if model.provider == "openai" else body_of(model.provider)
        self.name = model.name
        self.context = model.max_model_len  # tokens the model takes per request (both ways)
        self.sampling = sampling
        self.max_reply = sampling.max_tokens

    def chat(self, messages: Sequence[dict[str, str]], **options: Any) -> ChatResult:
        """One completion; `options` are ChatClient.chat's (response_format, tools, ...).
        A cached reply is served here, before any endpoint is opened: a rerun that only
        hits starts no server."""
        options.setdefault("sampling", self.sampling)
        if self._cache is not None:
            found = self._cache.get(self._cache.key(self._body(self._served, messages, **options)))
            if found is not None:
                return found
        future = asyncio.run_coroutine_threadsafe(
            self.client().chat(messages, cache=self._cache, **options), self._loop
        )
        with waiting(f"the model {self.name}"):
            return future.result()


class ModelPool:
    """Endpoints and clients of the models a run uses; a context manager."""

    def __init__(self, data_dir: str | Path) -> None:
        self._data_dir = Path(data_dir)
        self._stack = contextlib.ExitStack()
        self._opened: dict[str, ChatClient] = {}  # model name -> its endpoint's client
        self._backends: dict[tuple[str, Sampling], ChatBackend] = {}
        self._clients: list[ChatClient] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="llm-loop", daemon=True)
        self._starter = ThreadPoolExecutor(1, thread_name_prefix="llm-servers")

    def __enter__(self) -> ModelPool:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self._clients:
            asyncio.run_coroutine_threadsafe(client.aclose(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
        try:
            self._stack.close()  # stops managed servers
        finally:
            self._starter.shutdown()  # only now: its thread's end would stop them too

    def backend(self, cfg: Any) -> ChatBackend:
        """The backend of a model config (a VllmModelConfig or its DictConfig). Configs of
        one model name share its endpoint and client (the first one's settings open it);
        each sampling (temperature, max_tokens, seed: a trial's seed, pipeline/trials.py)
        gets a backend of its own that sends it with every request, and its own cache
        (keyed by its own settings)."""
        model: VllmModelConfig = (
            cfg if isinstance(cfg, VllmModelConfig) else (OmegaConf.to_object(cfg))
        )
        sampling = Sampling(
            temperature=model.temperature, max_tokens=model.max_tokens, seed=model.seed
        )
        key = (model.name, sampling)
        with self._lock:
            if key not in self._backends:
                cache = self._cache(model)
                self._backends[key] = ChatBackend(
                    lambda: self._client(model), self._loop, model, sampling, cache
                )
        backend = self._backends[key]
        if not model.cache:  # opened now: a wrong endpoint or header fails before any play
            backend.client()
        return backend

    def _client(self, model: VllmModelConfig) -> ChatClient:
        """The client of `model`'s name, its endpoint opened by the first caller."""
        with self._lock:
            if model.name not in self._opened:
                self._opened[model.name] = self._open(model)
            return self._opened[model.name]

    def _cache(self, model: VllmModelConfig) -> ResponseCache | None:
        if not model.cache:
            return None
        return ResponseCache(Layout(self._data_dir).cache, cache_settings(model))

    def _open(self, model: VllmModelConfig) -> ChatClient:
        endpoint = self._starter.submit(
            self._stack.enter_context, open_endpoint(model, self._data_dir)
        ).result()
        sampling = Sampling(
            temperature=model.temperature, max_tokens=model.max_tokens, seed=model.seed
        )

        headers = dict(model.headers)
        for header, variable in model.headers_env.items():
            value = os.environ.get(variable)
            if value is None:
                raise ConfigError(
                    f"model.headers_env: the variable {variable} (for header {header}) is not set"
                )
            headers[header] = value

        async def make() -> ChatClient:
            if model.provider != "openai":  # the same interface, the vendor's own API
                return native_client(model, headers)
            return ChatClient.for_endpoint(
                endpoint,
                sampling=sampling,
                max_in_flight=model.max_in_flight,
                headers=headers,
            )

        client = asyncio.run_coroutine_threadsafe(make(), self._loop).result()
        self._clients.append(client)
        return client


def cache_settings(model: VllmModelConfig) -> dict[str, Any]:
    """What of a model config keys its cached replies: its result settings (all that can
    change a reply) but its cost limit, which changes which queries a cell plays, never
    what the model answers to one."""
    settings = result_settings(dataclasses.asdict(model), VllmModelConfig)
    settings.pop("cost_limit", None)
    return settings
