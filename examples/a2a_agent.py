"""A minimal A2A agent for NetGauge, built with a2a-sdk: no model, no API key; a template.

Start it, then point the `a2a_example` agent at it (README "Agents"):

    python examples/a2a_agent.py --port 9009
    python -m pipeline.run app=malt agent=a2a_example agent.url=http://127.0.0.1:9009

NetGauge sends one message per turn: first the task, the app's reply format and an
example reply (`agent.instructions`, on by default), then each observation. This agent
answers every message with that example reply, so whatever the app its answer parses and
the episode runs to a verdict (usually "wrong"): the point is the plumbing. Your model
goes in `answer`: give it the conversation so far and return its reply.
"""

from __future__ import annotations

import argparse
import re

import uvicorn
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

# The first message ends with the example after this line (pipeline/a2a/agent.py); an
# "Example of an answer" may follow it, which the reply does not include.
EXAMPLE = re.compile(r"\nExample of a reply:\n(.*?)(?:\nExample of an answer|\Z)", re.S)
# Without instructions there is no example: reply as a MALT agent would (small Python).
FALLBACK = "```python\ndef process_graph(graph):\n    return graph.number_of_nodes()\n```"


class ExampleAgent(AgentExecutor):
    def __init__(self) -> None:
        self.replies: dict[str, str] = {}  # context (one per episode) -> its reply

    def answer(self, context_id: str, text: str) -> str:
        """The reply to one message. Replace this with a call to your model."""
        found = EXAMPLE.search(text)
        if found:  # the first message of an episode
            self.replies[context_id] = found.group(1)
        return self.replies.get(context_id, FALLBACK)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        reply = self.answer(context.context_id, context.get_user_input())
        # A Message is the simplest answer; NetGauge also takes a Task's last artifact.
        await event_queue.enqueue_event(new_text_message(reply, context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None  # each answer is immediate: nothing runs long enough to cancel


def app(url: str) -> Starlette:
    """The agent's card (what NetGauge reads first) and its JSON-RPC endpoint."""
    card = AgentCard(
        name="netgauge-example",
        description="Answers every NetGauge turn with the app's example reply",
        version="1.0",
        supported_interfaces=[
            AgentInterface(url=f"{url}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="play", name="play", description="plays", tags=["netgauge"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=ExampleAgent(), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="loopback unless you mean it")
    parser.add_argument("--port", type=int, default=9009)
    args = parser.parse_args()
    uvicorn.run(app(f"http://{args.host}:{args.port}"), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
