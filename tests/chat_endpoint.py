"""An OpenAI-compatible chat endpoint of our own, for tests of the LLM-agent path: a
ThreadingHTTPServer on loopback that streams whatever `answer(request_body)` returns as
chat-completion chunks, with token usage, and records every request it was sent. A str
is the reply's text; a ToolCall (pipeline.serving.client) a native tool call. A request
that does not ask to stream (Inspect's openai provider) gets one chat.completion object."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pipeline.serving.client import ToolCall

Answer = Callable[[dict[str, Any]], str | ToolCall]


@contextlib.contextmanager
def chat_endpoint(
    answer: Answer, serial: bool = True, cached_tokens: int | None = None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(base URL ending in /v1, the request bodies received so far). `serial`: one
    `answer` call at a time; otherwise concurrent requests are answered concurrently.
    `cached_tokens`: reported in usage.prompt_tokens_details, as OpenAI does."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                seen.append(body)
            with lock if serial else contextlib.nullcontext():
                text = answer(body)
            if not body.get("stream"):
                self._whole(body, text)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if isinstance(text, ToolCall):
                function = {"name": text.name, "arguments": text.arguments}
                call = {"index": 0, "id": "call_0", "type": "function", "function": function}
                delta = {"delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}
                self.wfile.write(b"data: " + json.dumps({"choices": [delta]}).encode() + b"\n\n")
                text = ""
            for start in range(0, len(text), 1 << 16):
                piece = {"choices": [{"delta": {"content": text[start : start + (1 << 16)]}}]}
                self.wfile.write(b"data: " + json.dumps(piece).encode() + b"\n\n")
            prompt = sum(len(m.get("content", "")) for m in body.get("messages", [])) // 4
            usage = {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": 7}}
            if cached_tokens is not None:
                usage["usage"]["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
            self.wfile.write(b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n")

        def _whole(self, body: dict[str, Any], text: str | ToolCall) -> None:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            finish = "stop"
            if isinstance(text, ToolCall):
                function = {"name": text.name, "arguments": text.arguments}
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_0", "type": "function", "function": function}],
                }
                finish = "tool_calls"
            prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
            details = {}
            if cached_tokens is not None:
                details = {"prompt_tokens_details": {"cached_tokens": cached_tokens}}
            data = json.dumps(
                {
                    "id": "chatcmpl-0",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", ""),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": 7,
                        "total_tokens": prompt + 7,
                    }
                    | details,
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def malt_cell(data: Any, url: str, *overrides: str) -> Any:
    """The config of a two-query MALT level-1 cell whose zero-shot SmolLM2 agent is served
    by the endpoint at `url` (`overrides` first, so a test adds e.g. model.cache=true)."""
    from pipeline.config import compose

    return compose([
        *overrides, "app=malt", "level=1", "queries=2", "agent=zero_shot", "model=smollm2",
        "model.endpoint=external", f"model.base_url={url}", f"data_dir={data}",
    ])  # fmt: skip
