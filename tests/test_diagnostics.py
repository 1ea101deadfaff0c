"""Read-only diagnostics, fast: the lab apps' `show`, k8s's `kubectl_read`, and the MCP
channel serving an app's diagnostics (run on the runner's thread, budgeted, recorded, no
turn used). On real labs: tests/test_diagnostics_labs.py."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from mcp import Client

from emulators.k8s.kubectl import Result
from emulators.netcmd.policy import check
from emulators.netcmd.sandbox import SandboxResult, Status
from generators.k8s.app import K8sEpisode
from generators.lab.diagnostics import SHOW, SHOWN, diagnose
from pipeline.core import Query
from pipeline.errors import AgentFailure
from pipeline.mcp.channel import Channel
from pipeline.mcp.server import HttpServer, tool_server
from tests.fakes import EchoReplyFormat
from tests.test_mcp_agent import loop  # noqa: F401  (the fixture)

ACTION = EchoReplyFormat.action


@pytest.mark.parametrize("what", list(SHOWN))
def test_every_show_command_passes_the_policy_and_writes_nothing(what):
    checked = check(SHOWN[what])
    assert checked.allowed and checked.writes == ()
    assert SHOW.parameters["properties"]["what"]["enum"] == list(SHOWN)


@dataclass
class _Sandbox:
    """Stands in for emulators.netcmd.sandbox.CommandSandbox: records what it would run."""

    ran: list[tuple[str, str]]

    def run(self, machine: str, command: str) -> SandboxResult:
        self.ran.append((machine, command))
        return SandboxResult(Status.OK, machine, command, output="1: lo: <LOOPBACK,UP>\n")


def test_show_runs_its_fixed_command_through_the_sandbox():
    sandbox = _Sandbox([])
    shown = diagnose(sandbox, "show", {"machine": " r0 ", "what": "links"})
    assert shown == "r0$ ip link show\n1: lo: <LOOPBACK,UP>"
    assert sandbox.ran == [("r0", "ip link show")]
    assert "one of: addresses, links" in diagnose(sandbox, "show", {"machine": "r0", "what": "x"})
    assert 'needs a "machine"' in diagnose(sandbox, "show", {"what": "routes"})
    assert "no diagnostic 'rm'" in diagnose(sandbox, "rm", {})
    assert len(sandbox.ran) == 1  # nothing else ran


class _Cluster:
    def __init__(self) -> None:
        self.ran: list[list[str]] = []

    def kubectl(self, cmd) -> Result:
        self.ran.append(cmd.argv)
        return Result(0, "NAME      POD-SELECTOR\nadservice app=adservice\n", "ok", 0.1)


def _k8s_episode(cluster: _Cluster) -> K8sEpisode:
    truth = {"expected": {}, "mismatches": []}
    query = Query("k8s-L1-s0-00000", "k8s", 1, 0, 0, "Fix it.", "state", "fix", truth)
    return K8sEpisode(query, cluster, max_turns=3)


def test_kubectl_read_runs_reads_and_refuses_writes_before_the_cluster():
    cluster = _Cluster()
    episode = _k8s_episode(cluster)
    shown = episode.diagnose("kubectl_read", {"command": "kubectl get netpol -o wide"})
    assert shown.startswith("$ kubectl get netpol -o wide\nNAME")
    for command, why in (
        ("kubectl delete networkpolicy adservice", "kubectl delete is not read-only"),
        ("kubectl apply -f -", "kubectl apply is not read-only"),
        ("kubectl get pods | sh", "shell operators are not available"),
        ("ls /", "only kubectl commands run here"),
    ):
        assert why in episode.diagnose("kubectl_read", {"command": command}), command
    assert 'needs a "command"' in episode.diagnose("kubectl_read", {})
    assert cluster.ran == [["get", "netpol", "-o", "wide"]]
    assert episode._turn == 0  # no turn used


def _call(loop, channel, name, arguments=None) -> Future:  # noqa: F811
    return asyncio.run_coroutine_threadsafe(channel.call(name, arguments, None), loop)


def test_diagnostics_run_on_the_runners_thread_use_no_turn_and_are_recorded(loop):  # noqa: F811
    threads: list[str] = []

    def probe(name, arguments):
        threads.append(threading.current_thread().name)
        return f"looked at {arguments['machine']}"

    channel = Channel(ACTION, "Say 7.", 3, 1, diagnostics=[SHOW], probe=probe, max_diagnostics=2)
    with ThreadPoolExecutor(1, thread_name_prefix="runner") as runner:
        turn = runner.submit(channel.exchange, "Say 7.", 5, "late")  # waits for the action
        result = _call(loop, channel, "show", {"machine": "r0", "what": "routes"}).result(5)
        assert result.text == "looked at r0" and result.data["turns_left"] == 3
        assert not result.error and not turn.done()  # still the first turn
        action = _call(loop, channel, "say", {"number": 7})
        arguments, calls = turn.result(5)
    assert arguments == {"number": 7}
    assert threads == ["runner_0"]  # the runner's thread, not the server's
    assert [(c["purpose"], c["request"], c["response"]) for c in calls] == [
        ("diagnostic", 'show {"machine": "r0", "what": "routes"}', "looked at r0"),
        ("act", 'say {"number": 7}', ""),
    ]
    task = _call(loop, channel, "read_task").result(5)
    assert task.data["diagnostics"] == ["show"] and task.data["turns_left"] == 2
    # Past the budget between two actions, a diagnostic is a bad call.
    early = [_call(loop, channel, "show", {"machine": "r0", "what": "links"}) for _ in range(4)]
    assert all(f.result(5).error for f in early[2:])  # answered at once
    with pytest.raises(AgentFailure, match="2 bad tool calls, the last: at most 2 diagnostics"):
        channel.exchange("you said 7", 5, "late")
    assert [f.result(5).error for f in early] == [False, False, True, True]
    assert action.result(5).text == "you said 7"
    channel.finish("", "the agent failed")
    late = _call(loop, channel, "show", {"machine": "r0", "what": "links"}).result(5)
    assert late.error and "over" in late.text


def test_without_an_episode_to_look_at_no_diagnostic_is_offered(loop):  # noqa: F811
    channel = Channel(ACTION, "Say 7.", 3, 0, diagnostics=[SHOW], probe=None)
    assert channel.diagnostics == ()
    answer = _call(loop, channel, "show", {"machine": "r0", "what": "links"}).result(5)
    assert answer.error and answer.text == "unknown tool 'show'; the tools are say, read_task, stop"


def test_an_sdk_client_lists_and_calls_the_diagnostics():
    channel = Channel(
        ACTION, "Say 7.", 2, 1, diagnostics=[SHOW], probe=lambda n, a: "r0$ ip route show\n-",
        max_diagnostics=4,
    )  # fmt: skip
    seen: dict[str, object] = {}

    async def client(url: str) -> None:
        async with Client(url) as lab:
            tools = {t.name: t for t in (await lab.list_tools()).tools}
            seen["tools"] = sorted(tools)
            seen["described"] = tools["show"].description
            seen["shown"] = await lab.call_tool("show", {"machine": "r0", "what": "routes"})
            await lab.call_tool("say", {"number": 7})

    with HttpServer(tool_server(channel)) as server:
        thread = threading.Thread(target=lambda: asyncio.run(client(server.url)))
        thread.start()
        arguments, calls = channel.exchange("Say 7.", 20, "late")
        channel.finish("you said 7", "the task is done")
        thread.join(20)
    assert seen["tools"] == ["read_task", "say", "show", "stop"]
    assert "At most 4 between two calls of say" in seen["described"]
    assert seen["shown"].structured_content["output"] == "r0$ ip route show\n-"
    assert arguments == {"number": 7} and [c["purpose"] for c in calls] == ["diagnostic", "act"]
