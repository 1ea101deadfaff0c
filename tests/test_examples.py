"""The example agents the README tells users to start from play malt cells to a verdict.

- examples/mcp_agent.py, started by NetGauge as the agent command over streamable HTTP:
  one read-only look (run_code, no turn), one submission, a scored episode.
- examples/a2a_agent.py, started as its own process on a free loopback port, as the README
  says: it answers with the app's example reply, which parses, and the episode is scored;
  and (fast) that reply parses for every app's reply format, not only malt's.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from generators.k8s.reply import K8sReplyFormat
from generators.lab.reply import Command, CommandReplyFormat
from generators.malt.replies import MaltReplyFormat
from pipeline.a2a.agent import first_message
from pipeline.build import layout
from pipeline.cells import cell_from_config
from pipeline.config import compose
from pipeline.generate import generate
from pipeline.records import read_shard
from pipeline.runner import run
from pipeline.scoring import score

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


def _played(cfg) -> tuple[list[dict], list[dict]]:
    generate(cfg)
    run(cfg)
    score(cfg)
    paths, cell = layout(cfg), cell_from_config(cfg)
    episodes = read_shard("episodes", paths.episodes(cell)).to_pylist()
    return episodes, read_shard("calls", paths.calls(cell)).to_pylist()


def _scored_without_agent_error(episodes: list[dict]) -> None:
    assert len(episodes) == 2
    for e in episodes:
        # a verdict of the app's scorer on a real answer (a fixed one: mostly wrong, with
        # the scorer's reason), not agent_error, parse_error or exec_error
        assert e["outcome"] in {"correct", "wrong"}, e
        assert e["iterations"] == 1 and e["safe"], e


@pytest.mark.integration
def test_the_mcp_example_agent_looks_submits_and_gets_a_verdict(tmp_path):
    cfg = compose(
        [
            "app=malt",
            "level=1",
            "queries=2",
            f"data_dir={tmp_path}",
            "agent=mcp_example",
            f"agent.command=['{PYTHON}','examples/mcp_agent.py']",  # relative to the root
            "agent.transport=http",
            "agent.turn_timeout_s=120",
        ]
    )
    episodes, calls = _played(cfg)
    _scored_without_agent_error(episodes)
    purposes = sorted(c["purpose"] for c in calls if c["query_id"] == episodes[0]["query_id"])
    assert purposes == ["act", "diagnostic", "tool"]  # read_task, run_code, submit_code
    looks = [c for c in calls if c["purpose"] == "diagnostic"]
    assert all(c["request"].startswith("run_code ") for c in looks)
    assert all("returned:" in c["response"] for c in looks), looks


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.integration
def test_the_a2a_example_agent_answers_with_a_reply_that_parses(tmp_path):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [PYTHON, "examples/a2a_agent.py", "--port", str(port)]
    with subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL) as agent:
        try:
            card = f"{url}/.well-known/agent-card.json"
            for _ in range(300):  # its imports take seconds on a busy machine
                try:
                    with urllib.request.urlopen(card, timeout=2) as answer:
                        assert b"netgauge-example" in answer.read()
                    break
                except OSError:
                    assert agent.poll() is None, "the example agent exited"
                    time.sleep(0.1)
            cell = ["app=malt", "level=1", "queries=2", f"data_dir={tmp_path}"]
            episodes, calls = _played(compose([*cell, "agent=a2a_example", f"agent.url={url}"]))
        finally:
            agent.terminate()
            agent.wait(timeout=30)
    _scored_without_agent_error(episodes)
    assert {c["served_model"] for c in calls} == {"netgauge-example/1.0"}
    # the reply is the example of malt's first message, verbatim
    assert all("def process_graph(graph):" in c["response"] for c in calls)


def _example_agent():
    spec = importlib.util.spec_from_file_location("a2a_agent", ROOT / "examples" / "a2a_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "reply_format",
    [
        MaltReplyFormat(),
        K8sReplyFormat(),
        CommandReplyFormat(Command("r0", "ip route show")),  # routing's
        CommandReplyFormat(Command("h1", "ip addr add 192.168.1.10/24 dev eth0")),  # netllmbench's
    ],
    ids=["malt", "k8s", "routing", "netllmbench"],
)
def test_the_a2a_example_reply_parses_for_every_reply_format(reply_format):
    example = _example_agent()
    agent = example.ExampleAgent()
    first = agent.answer("ctx-1", first_message("Fix it.", reply_format, instructions=True))
    assert first == reply_format.example and reply_format.check(first) is None
    assert agent.answer("ctx-1", "the observation of turn 1") == first  # later turns
    # without instructions there is no example to echo: the MALT-shaped fallback
    assert agent.answer("ctx-2", "Fix it.") == example.FALLBACK
    assert MaltReplyFormat().check(example.FALLBACK) is None
