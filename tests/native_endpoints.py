"""Anthropic- and Gemini-speaking endpoints of our own, for tests of the native providers
(pipeline/serving/native/) with the real SDKs: a ThreadingHTTPServer on loopback that
answers `POST /v1/messages` (the Messages API's event stream: message_start, content
blocks of text or tool_use with input_json_delta pieces, message_delta with the stop
reason and usage, message_stop) or `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`
(GenerateContentResponse chunks with candidates, finishReason and usageMetadata), as
each API documents them, and records every request (path, headers, JSON body).

`answer(body)` says what to send: a str (the reply's text), a ToolCall (one tool call),
a Say (text with a stop reason of the API's own), or a Fault (an HTTP status and raw
bytes, sent as they are: an error, a malformed or a binary body).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pipeline.serving.client import ToolCall

COMPLETION_TOKENS = 7


@dataclass(frozen=True)
class Say:
    text: str
    stop: str  # the API's own stop / finish reason, e.g. "refusal", "MAX_TOKENS"


@dataclass(frozen=True)
class Fault:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()  # e.g. (("retry-after-ms", "20"),)


Answer = Callable[[dict[str, Any]], str | ToolCall | Say | Fault]


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user turns' texts of a Messages or Gemini request body."""
    if "messages" in body:
        return [m["content"] for m in body["messages"] if m["role"] == "user"]
    return [p["text"] for c in body["contents"] if c["role"] == "user" for p in c["parts"]]


def error_body(provider: str, status: int, message: str) -> bytes:
    if provider == "anthropic":
        kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return json.dumps({"error": {"code": status, "message": message, "status": "ERROR"}}).encode()


def _anthropic_events(said: str | ToolCall | Say, prompt: int, cached: int | None) -> bytes:
    usage: dict[str, Any] = {"input_tokens": prompt, "output_tokens": 1}
    if cached is not None:
        usage |= {"input_tokens": prompt - cached, "cache_read_input_tokens": cached}
    start = {
        "id": "msg_0", "type": "message", "role": "assistant", "model": "m", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage,
    }  # fmt: skip
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start})]
    if isinstance(said, ToolCall):
        block = {"type": "tool_use", "id": "toolu_0", "name": said.name, "input": {}}
        events.append(("content_block_start", {"index": 0, "content_block": block}))
        for at in range(0, len(said.arguments), 50):  # the input arrives in pieces
            piece = {"type": "input_json_delta", "partial_json": said.arguments[at : at + 50]}
            events.append(("content_block_delta", {"index": 0, "delta": piece}))
        stop = "tool_use"
    else:
        text, stop = (said.text, said.stop) if isinstance(said, Say) else (said, "end_turn")
        block = {"type": "text", "text": ""}
        events.append(("content_block_start", {"index": 0, "content_block": block}))
        for at in range(0, len(text), 1 << 16):
            piece = {"type": "text_delta", "text": text[at : at + (1 << 16)]}
            events.append(("content_block_delta", {"index": 0, "delta": piece}))
    events.append(("content_block_stop", {"index": 0}))
    delta = {"stop_reason": stop, "stop_sequence": None}
    final = {"output_tokens": COMPLETION_TOKENS}  # message_delta's usage: cumulative
    events.append(("message_delta", {"delta": delta, "usage": final}))
    events.append(("message_stop", {}))
    return b"".join(
        f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
        for kind, data in events
    )


def _gemini_chunks(said: str | ToolCall | Say, prompt: int, cached: int | None) -> bytes:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": COMPLETION_TOKENS,
        "totalTokenCount": prompt + COMPLETION_TOKENS,
    }
    if cached is not None:
        usage["cachedContentTokenCount"] = cached
    if isinstance(said, ToolCall):
        call = {"name": said.name, "args": json.loads(said.arguments)}
        pieces, stop = [[{"functionCall": call}]], "STOP"
    else:
        text, stop = (said.text, said.stop) if isinstance(said, Say) else (said, "STOP")
        pieces = [[{"text": text[at : at + (1 << 16)]}] for at in range(0, len(text), 1 << 16)]
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
        for parts in pieces or [[{"text": ""}]]
    ]
    chunks[-1]["candidates"][0]["finishReason"] = stop
    chunks[-1]["usageMetadata"] = usage
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


@contextlib.contextmanager
def native_endpoint(
    provider: str, answer: Answer, cached_tokens: int | None = None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(the base URL a model config's base_url takes, the requests received so far)."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # the preflight probe: any answer means a server is here
            self._send(404, error_body(provider, 404, "no such path"), "application/json")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
                said = answer(body)
            if isinstance(said, Fault):
                self._send(said.status, said.body, said.content_type, said.headers)
                return
            prompt = sum(len(t) for t in user_texts(body)) // 4 + 1
            make = _anthropic_events if provider == "anthropic" else _gemini_chunks
            self._send(200, make(said, prompt, cached_tokens), "text/event-stream")

        def _send(self, status: int, data: bytes, content_type: str, headers: tuple = ()) -> None:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # A short poll: shutdown() waits for it, once per test.
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
