"""Hostile answers through the protocol doors: the A2A agent and the MCP agent's server.

    a2a   the A2A agent against an agent whose card and JSON-RPC answers are mutated
          (nesting, numbers, task states, parts, metadata, results of any JSON type)
    mcp   the MCP agent's episode server, called over streamable HTTP by a client of our
          own with mutated tools/call requests (arguments, names, _meta usage, nesting)

The property and the tally are pipeline/fuzz/doors.py's.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time

from pipeline.fuzz.doors import DoorTally, Turns, arguments_of, probe
from pipeline.fuzz.grammar import Mutator, json_string, obj
from pipeline.fuzz.harness import Target, mutate, seeds
from pipeline.fuzz.peers import serve

# -- the A2A agent -----------------------------------------------------------------------


def a2a_answer(mutator: Mutator, target: Target, seed: dict[str, str], request: bytes) -> bytes:
    """One hostile JSON-RPC answer to a SendMessage request."""
    rng = mutator.rng
    try:
        ident = json.dumps(json.loads(request).get("id"))
    except (ValueError, AttributeError):
        ident = "null"
    text = json_string(mutate(mutator, target.shape, seed), escape=rng.random() < 0.7)
    metadata = '{"usage": {"prompt_tokens": 5, "completion_tokens": 2}}'
    if rng.random() < 0.3:
        metadata = obj(usage=mutator.json_value())
    parts = f"[{obj(text=text)}]"
    message = obj(messageId='"m"', role='"ROLE_AGENT"', parts=parts, metadata=metadata)
    roll = rng.random()
    if roll < 0.4:
        result = f'{{"message": {message}}}'
    elif roll < 0.65:
        state = rng.choice(
            ['"TASK_STATE_COMPLETED"', '"TASK_STATE_INPUT_REQUIRED"', '"TASK_STATE_FAILED"',
             '"TASK_STATE_WORKING"', '"NOPE"', "7", mutator.json_value()]
        )  # fmt: skip
        artifact = obj(artifactId='"a"', parts=parts)
        artifacts = f"[{artifact}]" if rng.random() < 0.7 else "[]"
        status = obj(state=state, message=message)
        task = obj(id='"t"', contextId='"c"', status=status, artifacts=artifacts)
        result = obj(task=task)
    elif roll < 0.8:
        result = mutator.json_value()
    else:
        result = mutator.json_reply({"message": "x", "task": "y"})
    if rng.random() < 0.08:
        error = obj(code=mutator.json_value(), message=mutator.json_value())
        return obj(jsonrpc='"2.0"', id=ident, error=error).encode("utf-8", "surrogatepass")
    return obj(jsonrpc='"2.0"', id=ident, result=result).encode("utf-8", "surrogatepass")


def a2a_card(mutator: Mutator, url: str) -> bytes:
    card = {
        "name": "fuzz", "description": "a hostile agent", "version": "1",
        "supportedInterfaces": [
            {"url": f"{url}/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": False}, "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"], "skills": [],
    }  # fmt: skip
    text = json.dumps(card)
    if mutator.rng.random() < 0.2:
        key = mutator.rng.choice(["name", "version", "capabilities", "skills", "x"])
        text = text[:-1] + f', "{key}": {mutator.json_value()}}}'
    return text.encode("utf-8", "surrogatepass")


def a2a_door(target: Target, turns: int, seed: str) -> DoorTally:
    from pipeline.a2a.agent import A2AAgent
    from pipeline.a2a.config import A2AAgentConfig

    tally = DoorTally("a2a")
    mutator = Mutator(f"{seed}:a2a:{target.name}")
    query = target.queries[0]
    pool = seeds(target, query)
    lock = threading.Lock()
    player = Turns(tally, target)
    base: list[str] = []

    def answer(method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        with lock:
            if method == "GET":
                out = a2a_card(mutator, base[0])
            else:
                out = a2a_answer(mutator, target, mutator.rng.choice(pool), body)
            player.sent = out.decode("utf-8", "replace")
            return 200, "application/json", out

    with serve(answer) as url:
        base.append(url)
        agent = A2AAgent(
            A2AAgentConfig(url=url, turn_timeout_s=10, episode_timeout_s=60), target.app
        )
        started = time.monotonic()
        while tally.tried < turns:
            with agent.episode(query, 3):
                for turn in range(1, 4):
                    if not player.play(lambda t=turn: agent.reply(query, "ok", [], t)):
                        break
        tally.seconds = time.monotonic() - started
    return tally


# -- the MCP agent -----------------------------------------------------------------------

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def mcp_request(mutator: Mutator, target: Target, seed: dict[str, str], ident: int) -> str:
    """One hostile tools/call request (JSON text)."""
    rng = mutator.rng
    action = target.app.reply_format.action.name
    roll = rng.random()
    if roll < 0.75:
        name, arguments = action, mutator.json_reply(arguments_of(seed))
        if rng.random() < 0.4:
            name, arguments = action, json.dumps(arguments_of(seed), ensure_ascii=False)
    elif roll < 0.85:
        name, arguments = (
            rng.choice(["read_task", "stop", "show", "run_code", "kubectl_read"]),
            mutator.json_reply(
                {
                    "reason": "x",
                    "machine": "r0",
                    "what": "routes",
                    "code": "x",
                    "command": "kubectl get pods",
                }
            ),
        )
    else:
        name, arguments = mutator.text(), mutator.json_value()
    usage = (
        f'{{"netgauge/usage": {{"prompt_tokens": {mutator.json_value()}, "completion_tokens": 1}}}}'
    )
    meta = f', "_meta": {usage}' if rng.random() < 0.3 else ""
    return (
        f'{{"jsonrpc": "2.0", "id": {ident}, "method": "tools/call", "params": '
        f'{{"name": {json_string(name, escape=True)}, "arguments": {arguments}{meta}}}}}'
    )


def mcp_door(target: Target, turns: int, seed: str) -> DoorTally:
    """The MCP agent's episode server, called by a hostile client of our own."""
    from pipeline.mcp.agent import MCPAgent
    from pipeline.mcp.config import MCPAgentConfig

    tally = DoorTally("mcp")
    mutator = Mutator(f"{seed}:mcp:{target.name}")
    query = target.queries[0]
    pool = seeds(target, query)
    player = Turns(tally, target)
    cfg = MCPAgentConfig(turn_timeout_s=3, episode_timeout_s=30, max_bad_calls=3)
    started = time.monotonic()
    while tally.tried < turns:
        urls: list[str] = []
        over = threading.Event()
        agent = MCPAgent(cfg, target.app, announce=urls.append)
        # The server starts with the episode's first reply; the client waits for its URL.
        client = threading.Thread(
            target=_mcp_client, args=(urls, over, mutator, target, pool, player), daemon=True
        )
        client.start()
        with agent.episode(query, 3, probe(target)) as end:
            for turn in range(1, 4):
                if not player.play(functools.partial(agent.reply, query, "ok", [], turn)):
                    break
            end.observation, end.reason = "over", "the fuzz episode ended"
        over.set()
        client.join(timeout=10)
    tally.seconds = time.monotonic() - started
    return tally


def _mcp_client(
    urls: list[str],
    over: threading.Event,
    mutator: Mutator,
    target: Target,
    pool: list[dict[str, str]],
    player: Turns,
) -> None:
    """Initialize, then send hostile tools/call requests until the episode is over."""
    import httpx

    deadline = time.monotonic() + 10
    while not urls and time.monotonic() < deadline:
        time.sleep(0.01)
    if not urls:
        return
    init = (
        '{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": '
        '"2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}'
    )
    with httpx.Client(timeout=5) as http, contextlib.suppress(httpx.HTTPError):
        got = http.post(urls[0], headers=HEADERS, content=init)
        headers = dict(HEADERS)
        if got.headers.get("mcp-session-id"):
            headers["mcp-session-id"] = got.headers["mcp-session-id"]
        done = '{"jsonrpc": "2.0", "method": "notifications/initialized"}'
        http.post(urls[0], headers=headers, content=done)
        for ident in range(1, 40):
            if over.is_set():
                return
            with mutator_lock:
                body = mcp_request(mutator, target, mutator.rng.choice(pool), ident)
            player.sent = body
            with contextlib.suppress(httpx.HTTPError):
                http.post(urls[0], headers=headers, content=body.encode("utf-8", "surrogatepass"))


mutator_lock = threading.Lock()  # the client threads of successive episodes may overlap
