"""One episode's conversation with an A2A agent: one message per turn, one reply each.

All messages of an episode share a context id (a new one per episode). Each is sent with
`message/send` (not streamed) and must be answered within the turn's and the episode's
time limits. The reply is the text of the agent's answer: a Message's text parts, or for
a Task its last artifact's text (else its status message's). A task left waiting for
input is continued by the next message; a failed, rejected or canceled one, an
unreachable agent, an HTTP or protocol error, or a response body past `MAX_BODY` bytes
end the episode as `agent_error`; silence past a limit as `agent_timeout`. Tokens are
taken from the answer's `metadata.usage` ({"prompt_tokens", "completion_tokens"}) when
the agent reports them.

The a2a-sdk client is asynchronous; the episode's worker thread runs it on an event loop
of its own (`asyncio.Runner`), closed with the conversation.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState
from a2a.utils.errors import A2AError
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from pipeline.agents import Reply
from pipeline.errors import AgentFailure, AgentTimeout
from pipeline.heartbeat import waiting

MAX_BODY = 8 << 20  # bytes of one HTTP response read from the agent
MAX_STORED = 16_384  # characters of a message and its reply kept in `calls`
_OPEN = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_WORKING}
_FAILED = {
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}
# What the SDK raises on an answer it cannot read (each seen by pipeline/fuzz): a body or
# card nested past the JSON parser's depth (RecursionError), a result of the wrong JSON
# type (TypeError), an enum given as 1e309 (OverflowError), a field name protobuf's C
# parser chokes on (SystemError).
ERRORS = (
    A2AError,
    httpx.HTTPError,
    json_format.ParseError,
    ValueError,
    RecursionError,
    TypeError,
    OverflowError,
    SystemError,
)


class Conversation:
    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        turn_timeout_s: float,
        episode_timeout_s: float,
    ) -> None:
        self.url = url
        self._headers = headers
        self._turn_s = turn_timeout_s
        self._episode_s = episode_timeout_s
        self._deadline = time.monotonic() + episode_timeout_s
        self._runner = asyncio.Runner()
        self._http: httpx.AsyncClient | None = None
        self._client: Any = None
        self._agent = "a2a"
        self._context = str(uuid.uuid4())
        self._task: str | None = None  # a task that waits for our next message

    def send(self, text: str) -> Reply:
        """Send `text`; the agent's answer as the turn's reply (see the module docstring)."""
        timeout = self._turn_s
        why = f"no answer within agent.turn_timeout_s={self._turn_s} s"
        left = self._deadline - time.monotonic()
        if left < timeout:
            timeout = max(0.0, left)
            why = f"the episode's limit agent.episode_timeout_s={self._episode_s} s passed"
        started = time.monotonic()
        try:
            with waiting(f"the A2A agent at {self.url}"):
                answer = self._runner.run(asyncio.wait_for(self._exchange(text), timeout))
            reply, state, usage = self._read(answer)
        except TimeoutError:
            raise AgentTimeout(why, calls=[self._call(text, "", started)]) from None
        except ERRORS as err:
            reason = f"the A2A agent at {self.url} failed: {type(err).__name__}: {err}"[:1000]
            raise AgentFailure(reason, calls=[self._call(text, "", started)]) from err
        call = self._call(text, reply, started, state, usage)
        if state in _FAILED:
            name = _state_name(state)
            raise AgentFailure(f"the A2A agent's task ended {name}: {reply[:500]!r}", calls=[call])
        return Reply(
            reply,
            prompt_tokens=call["prompt_tokens"],
            completion_tokens=call["completion_tokens"],
            calls=[call],
        )

    async def _exchange(self, text: str) -> StreamResponse:
        if self._client is None:
            await self._connect()
        message = Message(
            message_id=str(uuid.uuid4()),
            context_id=self._context,
            task_id=self._task or "",
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
        )
        answer = None
        async for event in self._client.send_message(SendMessageRequest(message=message)):
            answer = event
        if answer is None:
            raise ValueError("the agent sent no answer")
        return answer

    async def _connect(self) -> None:
        self._http = httpx.AsyncClient(
            headers=self._headers,
            timeout=httpx.Timeout(self._turn_s),
            transport=_Capped(httpx.AsyncHTTPTransport()),
        )
        card = await A2ACardResolver(self._http, self.url).get_agent_card()
        self._agent = f"{card.name}/{card.version}"[:100]
        factory = ClientFactory(ClientConfig(streaming=False, httpx_client=self._http))
        self._client = factory.create(card)

    def _read(self, answer: StreamResponse) -> tuple[str, Any, dict[str, Any]]:
        """(the reply text, the task's state or None, the reported usage)."""
        kind = answer.WhichOneof("payload")
        if kind == "message":
            self._task = None
            return get_message_text(answer.message), None, _usage(answer.message)
        if kind != "task":
            raise ValueError(f"the answer is a {kind or 'empty'} event, not a message or task")
        task = answer.task
        state = task.status.state
        self._task = task.id if state in _OPEN else None
        if task.artifacts:
            text = get_artifact_text(task.artifacts[-1])
        else:
            text = get_message_text(task.status.message)
        return text, state, _usage(task) or _usage(task.status.message)

    def _call(
        self,
        request: str,
        response: str,
        started: float,
        state: Any = None,
        usage: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        usage = usage or {}
        return {
            "purpose": "act",
            "model": self._agent,
            "prompt_tokens": _count(usage.get("prompt_tokens")),
            "completion_tokens": _count(usage.get("completion_tokens")),
            "latency_s": time.monotonic() - started,
            "ttft_s": None,
            "tokens_per_s": None,
            "finish_reason": _state_name(state) if state is not None else None,
            "request": request[:MAX_STORED],
            "response": response[:MAX_STORED],
            "dropped_turns": 0,
        }

    def close(self) -> None:
        try:
            if self._http is not None:
                self._runner.run(self._http.aclose())
        finally:
            self._runner.close()


class _Capped(httpx.AsyncBaseTransport):
    """A transport that stops reading a response past MAX_BODY bytes."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def __aiter__(self):  # type: ignore[override]
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > MAX_BODY:
                raise httpx.ReadError(f"the agent's response is over {MAX_BODY} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _usage(message: ProtoMessage) -> dict[str, Any]:
    meta = json_format.MessageToDict(message.metadata) if message.HasField("metadata") else {}
    usage = meta.get("usage")
    return usage if isinstance(usage, dict) else {}


def _state_name(state: int) -> str:
    """A task state's name; an agent may send a number no state has (protobuf keeps it)."""
    try:
        return TaskState.Name(state)
    except ValueError:
        return f"TASK_STATE_UNKNOWN_{state}"


def _count(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1 << 40:
        return int(value)
    return None
