"""Native providers: a vendor's own API through its official SDK (`model.provider`).

`anthropic` (the Messages API, `anthropic` SDK) and `gemini` (the Gemini API,
`google-genai` SDK) clients have ChatClient's interface (pipeline/serving/client.py), so the
LLM agent, its reply formats (text, JSON, tools), the response cache and the `calls` table
are the same for every provider. Each maps the OpenAI-shaped request the agent builds to
its API (`body`: the request as sent, which the response cache also keys, together with
the model config's provider) and its reply, usage and stop reason back; errors become the
pipeline's typed failures (errors.py). The API key is read from the variable
`model.api_key_env` names when the client opens, and is never stored or logged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pipeline.errors import ConfigError
from pipeline.serving.client import Sampling
from pipeline.serving.config import VllmModelConfig

NATIVE = ("anthropic", "gemini")


def body_of(provider: str) -> Callable[..., dict[str, Any]]:
    """The request builder of a native provider (`request_body`'s signature)."""
    if provider == "anthropic":
        from pipeline.serving.native.anthropic_api import anthropic_body

        return anthropic_body
    from pipeline.serving.native.gemini_api import gemini_body

    return gemini_body


def native_client(model: VllmModelConfig, headers: dict[str, str]) -> Any:
    """A client of `model`'s native provider; made on the event loop it will run on."""
    variable = model.api_key_env
    key = os.environ.get(variable or "")
    if not variable or not key:
        raise ConfigError(
            f"model.api_key_env names ${variable}, which is unset or empty; export it"
        )
    assert model.base_url is not None  # validate() checked it
    sampling = Sampling(temperature=model.temperature, max_tokens=model.max_tokens, seed=model.seed)
    if model.provider == "anthropic":
        from pipeline.serving.native.anthropic_api import AnthropicClient as Client
    else:
        from pipeline.serving.native.gemini_api import GeminiClient as Client  # type: ignore[assignment]
    return Client(
        model.base_url,
        model.served_name,
        api_key=key,
        key_variable=variable,
        headers=headers,
        sampling=sampling,
        max_in_flight=model.max_in_flight,
    )
