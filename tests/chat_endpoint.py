"""An OpenAI-compatible chat endpoint of our own, for tests of the LLM-agent path: a
ThreadingHTTPServer on loopback that streams whatever `answer(request_body)` returns as
chat-completion chunks, with token usage, and records every request it was sent. A str
is the reply's text; a ToolCall (pipeline.serving.client) a native tool call."""

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

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
