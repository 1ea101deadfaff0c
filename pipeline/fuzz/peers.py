"""The hostile peers an agent door talks to: an OpenAI-compatible chat endpoint and an A2A
agent, each a loopback HTTP server of our own that answers every request with whatever
bytes the fuzzer gives it (so it can send what no SDK would: JSON nested 200,000 deep,
numbers past every limit, broken UTF-8, a stream that never sends usage).

    with serve(answer) as url: ...

`answer(method, path, body)` returns (HTTP status, content type, body bytes).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[str, str, bytes], tuple[int, str, bytes]]


@contextlib.contextmanager
def serve(answer: Answer) -> Iterator[str]:
    """Serve `answer` on a free loopback port; yield the base URL (no trailing slash)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            status, kind, out = answer(self.command, self.path, body)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client may stop reading: its right
                self.wfile.write(out)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    httpd = _Quiet(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, name="fuzz-peer", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up mid-answer: the fuzzer's doing, not worth a traceback


def sse(events: list[str]) -> bytes:
    """A chat-completions event stream of these `data:` payloads, then [DONE]."""
    return "".join(f"data: {e}\n\n" for e in [*events, "[DONE]"]).encode("utf-8", "surrogatepass")
