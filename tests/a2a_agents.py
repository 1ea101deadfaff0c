"""A2A agents for the tests, built with a2a-sdk: served on loopback by `serving(executor)`.

`OracleAgent` answers each task with the reply the test gives for it (found by the task's
text in the first message), as a completed Task with an artifact and a usage report in
its metadata; later messages of a context get the same reply. `GarbageAgent` answers
every message with a Message of prose no app can parse.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette


class OracleAgent(AgentExecutor):
    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies  # task text -> the reply
        self.by_context: dict[str, str] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        found = [task for task in self.replies if task in text]
        if found:
            self.by_context[context.context_id] = self.replies[max(found, key=len)]
        reply = self.by_context.get(context.context_id, "no idea")
        task = new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        usage = {"usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(reply) // 4}}
        await updater.add_artifact([Part(text=reply)], name="reply")
        done = new_text_message("done", context_id=task.context_id, task_id=task.id)
        done.metadata.update(usage)
        await updater.complete(done)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class GarbageAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = new_text_message(
            "I would rather talk about the weather.", context_id=context.context_id
        )
        await event_queue.enqueue_event(message)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


@contextlib.contextmanager
def serving(executor: AgentExecutor, name: str = "test-agent") -> Iterator[str]:
    """Serve `executor` as an A2A agent (JSON-RPC) on a free loopback port; yield its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name=name,
        description="a NetGauge test agent",
        version="1.0",
        supported_interfaces=[
            AgentInterface(url=f"{url}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="play", name="play", description="plays", tags=["test"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.01)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
