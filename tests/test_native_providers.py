"""Native providers (pipeline/serving/native/) with the real `anthropic` and `google-genai`
SDKs against endpoints of our own that speak each API (tests/native_endpoints.py): how
a request is mapped, the config's refusals, the cache keys, and every failure typed
(a dead server, a refused key, rate limits and overloads retried a bounded number of
times, 5xx, malformed, binary, empty and oversized bodies, refusals and cut replies)."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from pipeline.errors import ConfigError, EnvironmentFailure
from pipeline.llm.models import cache_settings
from pipeline.serving.cache import ResponseCache
from pipeline.serving.client import RequestRejected, Sampling, ToolCall, request_body
from pipeline.serving.config import load_model_config, model_config
from pipeline.serving.native.anthropic_api import AnthropicClient, anthropic_body
from pipeline.serving.native.common import EMPTY_TURN
from pipeline.serving.native.errors import KeyRejected, Overloaded
from pipeline.serving.native.gemini_api import GeminiClient, gemini_body
from tests.native_endpoints import Fault, Say, error_body, native_endpoint

PROVIDERS = ("anthropic", "gemini")
KEY = "sk-test-" + "e" * 24  # a key the tests look for wherever it must not be
MESSAGES = [
    {"role": "system", "content": "You manage networks."},
    {"role": "user", "content": "How many ports?"},
    {"role": "assistant", "content": ""},  # a reply that was only a tool call
    {"role": "user", "content": "Format was wrong."},
    {"role": "user", "content": "Try again."},
]
TOOL = {
    "type": "function",
    "function": {
        "name": "submit_code",
        "description": "Submit the code.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
    },
}
JSON_REPLY = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}


def ask(provider: str, url: str, messages=MESSAGES, **options):
    """One chat through the provider's real client (short backoffs: the retries are what
    is tested, not their waiting)."""

    async def once():
        if provider == "anthropic":
            client = AnthropicClient(
                url, "m-1", api_key=KEY, key_variable="NG_KEY", sampling=Sampling(None, 64, None)
            )
        else:
            client = GeminiClient(
                url, "m-1", api_key=KEY, key_variable="NG_KEY", backoff_s=0.05,
                sampling=Sampling(0.0, 64, 3),
            )  # fmt: skip
        try:
            return await client.chat(messages, **options)
        finally:
            await client.aclose()

    return asyncio.run(once())


def test_anthropic_request_maps_system_turns_tools_and_json():
    body = anthropic_body(
        "m", MESSAGES, Sampling(None, 64, None), tools=[TOOL], tool_choice="required"
    )
    assert body["system"] == "You manage networks."
    assert body["messages"] == [
        {"role": "user", "content": "How many ports?"},
        {"role": "assistant", "content": EMPTY_TURN},
        {"role": "user", "content": "Format was wrong.\n\nTry again."},
    ]
    assert body["max_tokens"] == 64 and "temperature" not in body and "seed" not in body
    assert body["tools"] == [
        {"name": "submit_code", "description": "Submit the code.",
         "input_schema": TOOL["function"]["parameters"]},
    ]  # fmt: skip
    assert body["tool_choice"] == {"type": "any"}
    named = {"type": "function", "function": {"name": "submit_code"}}
    assert anthropic_body("m", MESSAGES, Sampling(None), tools=[TOOL], tool_choice=named)[
        "tool_choice"
    ] == {"type": "tool", "name": "submit_code"}
    fmt = anthropic_body("m", MESSAGES, Sampling(None), response_format=JSON_REPLY)
    assert fmt["output_config"] == {"format": {"type": "json_schema", "schema": {"type": "object"}}}


def test_gemini_request_maps_system_turns_tools_json_and_seed():
    body = gemini_body("m", MESSAGES, Sampling(0.3, 64, 7), response_format=JSON_REPLY)
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    config = body["config"]
    assert config["system_instruction"] == "You manage networks."
    assert (config["temperature"], config["max_output_tokens"], config["seed"]) == (0.3, 64, 7)
    assert config["response_mime_type"] == "application/json"
    assert config["response_json_schema"] == {"type": "object"}
    named = {"type": "function", "function": {"name": "submit_code"}}
    tools = gemini_body("m", MESSAGES, Sampling(), tools=[TOOL], tool_choice=named)["config"]
    assert (
        tools["tools"][0]["function_declarations"][0]["parameters_json_schema"]
        == (TOOL["function"]["parameters"])
    )
    assert tools["tool_config"] == {
        "function_calling_config": {"mode": "ANY", "allowed_function_names": ["submit_code"]}
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"provider": "anthropic", "seed": 0, "temperature": None}, r"model.seed=0: Anthropic"),
        (
            {"provider": "anthropic", "seed": None},
            r"model.temperature=0.0: Anthropic.*no temperature",
        ),
        ({"provider": "gemini", "temperature": None}, r"temperature=null: the gemini API"),
        ({"provider": "gemini", "endpoint": "managed"}, r"NetGauge does not run"),
        ({"provider": "gemini", "api_key_env": None}, r"needs model.api_key_env"),
        ({"provider": "bedrock"}, r"model.provider='bedrock'.*openai, anthropic, gemini"),
        ({"kind": "hosted", "endpoint": "managed", "provider": "openai"}, r"kind='hosted' needs"),
    ],
)
def test_config_refuses_what_the_api_cannot_do(overrides, message):
    base = {"endpoint": "external", "base_url": "http://x", "api_key_env": "K", "seed": 0}
    with pytest.raises(ConfigError, match=message):
        model_config(base | overrides)


def test_the_default_provider_changes_no_identity_and_native_keys_differ(tmp_path):
    smollm2 = load_model_config("smollm2")
    assert smollm2.provider == "openai" and "provider" not in cache_settings(smollm2)
    claude = load_model_config("claude_sonnet")
    assert cache_settings(claude)["provider"] == "anthropic"
    same = dict(cache_settings(smollm2), served_name=claude.served_name)
    as_openai = ResponseCache(tmp_path, same).key(
        request_body(claude.served_name, MESSAGES, Sampling(0.0, 64, None))
    )
    native = ResponseCache(tmp_path, cache_settings(claude)).key(
        anthropic_body(claude.served_name, MESSAGES, Sampling(None, 64, None))
    )
    assert as_openai != native


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_its_usage_and_the_key_sent_only_as_a_header(provider):
    call = ToolCall("submit_code", '{"code": "x = 1"}')
    with native_endpoint(provider, lambda body: "hello", cached_tokens=2) as (url, seen):
        result = ask(provider, url)
    with native_endpoint(provider, lambda body: call) as (url, more):
        called = ask(provider, url, tools=[TOOL], tool_choice="required")
    assert (result.text, result.finish_reason, result.completion_tokens) == ("hello", "stop", 7)
    assert result.cached_tokens == 2 and result.prompt_tokens > 2 and result.ttft_s >= 0
    assert called.tool_calls == (call,)
    assert called.finish_reason == "tool_calls"
    for request in seen + more:
        assert any(KEY in value for value in request["headers"].values())
        assert KEY not in str(request["body"]) and KEY not in request["path"]


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_dead_server_is_an_environment_failure_after_bounded_attempts(provider):
    with pytest.raises(EnvironmentFailure, match=r"cannot reach .* after 3 attempts"):
        ask(provider, closed_port_url())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_key_names_the_variable_and_never_the_key(provider):
    echo = error_body(provider, 401, f"invalid x-api-key {KEY}")
    with (
        native_endpoint(provider, lambda body: Fault(401, echo)) as (url, seen),
        pytest.raises(KeyRejected) as caught,
    ):
        ask(provider, url)
    assert len(seen) == 1  # a refused key is not retried
    assert "$NG_KEY" in str(caught.value) and KEY not in str(caught.value)
    assert "***" in str(caught.value)


@pytest.mark.parametrize(
    ("provider", "status"), [("anthropic", 429), ("anthropic", 529), ("gemini", 429)]
)
def test_rate_limits_and_overloads_are_retried_then_answered(provider, status):
    statuses = iter([status, status])
    soon = (("retry-after-ms", "20"),)  # Anthropic's SDK waits as the server says

    def answer(body):
        code = next(statuses, None)
        return (
            Fault(code, error_body(provider, code, "slow down"), headers=soon)
            if code
            else "at last"
        )

    with native_endpoint(provider, answer) as (url, seen):
        assert ask(provider, url).text == "at last"
    assert len(seen) == 3


@pytest.mark.parametrize(
    ("provider", "status"), [("anthropic", 529), ("anthropic", 500), ("gemini", 503)]
)
def test_an_overload_or_5xx_that_lasts_is_typed_after_three_attempts(provider, status):
    fault = Fault(
        status, error_body(provider, status, "overloaded"), headers=(("retry-after-ms", "20"),)
    )
    with (
        native_endpoint(provider, lambda body: fault) as (url, seen),
        pytest.raises(Overloaded, match=rf"HTTP {status}.*after 3 attempts") as caught,
    ):
        ask(provider, url)
    assert caught.value.status == status and len(seen) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_request_refused_for_its_length_is_a_request_rejected(provider):
    fault = Fault(400, error_body(provider, 400, "prompt is too long: 300000 tokens"))
    with (
        native_endpoint(provider, lambda body: fault) as (url, seen),
        pytest.raises(RequestRejected) as caught,
    ):
        ask(provider, url)
    assert caught.value.status == 400 and "too long" in caught.value.server_message
    assert len(seen) == 1


HOSTILE = {
    "malformed": Fault(200, b"event: message_start\ndata: {not json\n\n", "text/event-stream"),
    "binary": Fault(200, os.urandom(1 << 14), "application/octet-stream"),
    "empty": Fault(200, b"", "text/event-stream"),
    "html": Fault(200, b"<html><body>proxy login</body></html>", "text/html"),
}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_body_is_an_environment_failure(provider, kind):
    with (
        native_endpoint(provider, lambda body: HOSTILE[kind]) as (url, _),
        pytest.raises(EnvironmentFailure, match=r"127\.0\.0\.1"),
    ):
        ask(provider, url)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_past_any_max_tokens_is_cut_off(provider):
    with (
        native_endpoint(provider, lambda body: "x" * (5 << 20)) as (url, _),
        pytest.raises(EnvironmentFailure, match=r"more than \d+ characters"),
    ):
        ask(provider, url)


@pytest.mark.parametrize(
    ("provider", "stop", "finish"),
    [
        ("anthropic", "refusal", "refusal"),
        ("anthropic", "max_tokens", "length"),
        ("gemini", "SAFETY", "safety"),
        ("gemini", "MAX_TOKENS", "length"),
    ],
)
def test_refusals_and_cut_replies_keep_their_reason(provider, stop, finish):
    with native_endpoint(provider, lambda body: Say("def f(", stop)) as (url, _):
        result = ask(provider, url)
    assert (result.text, result.finish_reason) == ("def f(", finish)
