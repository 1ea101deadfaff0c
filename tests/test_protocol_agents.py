"""External agents over protocols with real components, through the run and score stages.

- An MCP client written with the official SDK (tests/mcp_oracle_client.py, started as the
  agent command) plays the oracle's actions through NetGauge's MCP server, over stdio on
  routing (Mininet) and over streamable HTTP on k8s, looking with the app's read-only
  diagnostic before each, and gets the built-in oracle's verdicts query by query (a look
  changes nothing and uses no turn).
- An A2A agent built with a2a-sdk (tests/a2a_agents.py) answering with the oracle's code
  scores 100 % on malt; one answering prose scores 0 % as parse_error; an unreachable URL
  finishes its cell as agent_error.
- `python -m pipeline.mcp` serves one malt episode to a client and prints its verdict.
- Dead MCP agents (exits at once, exits cleanly without acting, hangs, calls unknown tools
  forever, leaves a daemon behind) finish their cells with typed outcomes, and nothing of
  theirs outlives the episode.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client
from omegaconf import OmegaConf

from pipeline.build import layout, make_app
from pipeline.cells import cell_from_config
from pipeline.config import compose
from pipeline.generate import generate, read_queries
from pipeline.mcp.config import MCPAgentConfig
from pipeline.records import read_shard
from pipeline.runner import run
from pipeline.scoring import score
from tests.a2a_agents import GarbageAgent, OracleAgent, serving
from tests.conftest import echo_config, require, require_root

pytestmark = pytest.mark.integration

CLIENT = Path(__file__).with_name("mcp_oracle_client.py")
PYTHON = sys.executable


def _played(cfg) -> tuple[dict[str, dict], list[dict]]:
    """Generate, run and score the cell: its episodes by query id, and its calls."""
    generate(cfg)
    run(cfg)
    score(cfg)
    paths, cell = layout(cfg), cell_from_config(cfg)
    episodes = read_shard("episodes", paths.episodes(cell)).to_pylist()
    return {e["query_id"]: e for e in episodes}, read_shard("calls", paths.calls(cell)).to_pylist()


def _verdicts(episodes: dict[str, dict]) -> dict[str, tuple]:
    return {
        q: (e["correct"], e["safe"], e["outcome"], e["iterations"]) for q, e in episodes.items()
    }


def _requirements(app: str) -> None:
    if app == "routing":
        require_root("the routing app needs root (Mininet)")
        try:
            import mininet.net  # noqa: F401
        except ImportError:
            require(False, "Mininet is not installed (scripts/setup.d/20-mininet.sh)")
    else:
        require_root("the k8s app needs root (network namespaces)")
        require(shutil.which("iptables-nft-restore") is not None, "iptables is not installed")


LOOKS = {
    "routing": ("show", {"machine": "r0", "what": "addresses"}, "r0$ ip addr show\n"),
    "k8s": ("kubectl_read", {"command": "kubectl get networkpolicies"}, "$ kubectl get "),
}


@pytest.mark.parametrize(
    ("app", "transport", "queries"), [("routing", "stdio", 2), ("k8s", "http", 3)]
)
def test_an_sdk_client_playing_the_oracle_gets_the_oracles_verdicts(
    tmp_path, app, transport, queries
):
    _requirements(app)
    cell = [f"app={app}", "level=1", f"queries={queries}", f"data_dir={tmp_path}"]
    oracle = compose([*cell, "agent=oracle"])
    expected, _ = _played(oracle)
    assert all(e["correct"] and e["safe"] for e in expected.values())
    built = make_app(oracle)
    # each query's own turn budget (k8s's max_turns is null: the level's budget)
    actions = {
        q.query_id: [
            json.loads(built.oracle_reply(q, t, ""))
            for t in range(1, expected[q.query_id]["turn_budget"] + 1)
        ]
        for q in read_queries(layout(oracle).queries(cell_from_config(oracle)), limit=queries)
    }
    (tmp_path / "oracle.json").write_text(json.dumps(actions))
    tool, arguments, shown = LOOKS[app]
    (tmp_path / "look.json").write_text(json.dumps({"tool": tool, "arguments": arguments}))
    mcp = compose(
        [
            *cell,
            "agent=mcp_example",
            f"agent.command=['{PYTHON}','{CLIENT}']",
            f"agent.transport={transport}",
            f"+agent.env.ORACLE_FILE='{tmp_path / 'oracle.json'}'",
            f"+agent.env.ORACLE_LOOK='{(tmp_path / 'look.json').read_text()}'",
            "agent.turn_timeout_s=120",
        ]
    )
    got, calls = _played(mcp)
    assert _verdicts(got) == _verdicts(expected)
    acts = [c for c in calls if c["purpose"] == "act"]
    assert len(acts) == sum(e["iterations"] for e in got.values())
    assert {c["served_model"] for c in calls} == {"mcp/0.1.0"}  # the SDK client's name
    assert all(c["prompt_tokens"] == 11 and c["completion_tokens"] == 3 for c in acts)
    assert all(e["prompt_tokens"] == 11 * e["iterations"] for e in got.values())
    assert {c["request"] for c in calls if c["purpose"] == "tool"} == {"read_task {}"}
    looks = [c for c in calls if c["purpose"] == "diagnostic"]
    assert len(looks) == len(acts)  # one before each action, none a step
    assert all(c["request"].startswith(f"{tool} ") for c in looks)
    assert all(c["response"].startswith(shown) and len(c["response"]) > len(shown) for c in looks)
    assert all(e["model_calls"] == 1 + e["iterations"] for e in got.values())  # not looks


def test_an_a2a_agent_with_the_oracles_code_scores_100_and_garbage_0_on_malt(tmp_path):
    cell = ["app=malt", "level=1", "queries=4", f"data_dir={tmp_path}"]
    oracle = compose([*cell, "agent=oracle"])
    generate(oracle)
    app = make_app(oracle)
    queries = read_queries(layout(oracle).queries(cell_from_config(oracle)), limit=4)
    replies = {q.prompt: app.oracle_reply(q, 1, "") for q in queries}
    with serving(OracleAgent(replies), name="oracle-purple") as url:
        good, calls = _played(compose([*cell, "agent=a2a_example", f"agent.url={url}"]))
    assert {e["outcome"] for e in good.values()} == {"correct"}
    assert all(e["correct"] and e["safe"] for e in good.values())
    assert {c["served_model"] for c in calls} == {"oracle-purple/1.0"}
    assert all(
        c["prompt_tokens"] > 0 and c["finish_reason"] == "TASK_STATE_COMPLETED" for c in calls
    )
    assert all(e["prompt_tokens"] > 0 for e in good.values())
    with serving(GarbageAgent()) as url:
        bad, _ = _played(compose([*cell, "agent=a2a_example", f"agent.url={url}"]))
    assert {e["outcome"] for e in bad.values()} == {"parse_error"}
    assert not any(e["correct"] for e in bad.values())
    gone = compose([*cell, "agent=a2a_example", "agent.url=http://127.0.0.1:9"])
    dead, _ = _played(gone)
    assert {e["outcome"] for e in dead.values()} == {"agent_error"}
    assert all("All connection attempts failed" in e["error"] for e in dead.values())


def _echo_mcp(tmp_path: Path, name: str, command: list[str], **settings: object):
    cfg = echo_config(tmp_path, queries=2)
    agent = MCPAgentConfig(name=name, command=command, grace_s=0.5, **settings)
    cfg.agent = OmegaConf.structured(agent)
    return cfg


def _py(code: str) -> list[str]:
    return [PYTHON, "-c", code]


DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()  # leaves the agent's process group
    open(os.environ["PIDS"], "a").write(f"{os.getpid()}\\n")
    time.sleep(600)
open(os.environ["PIDS"], "a").write(f"{os.getpid()}\\n")
time.sleep(600)
"""


@pytest.mark.usefixtures("echo_app")
def test_dead_agents_finish_their_cells_typed_and_leave_nothing(tmp_path):
    require_root("the agent's cgroup needs root")
    pids = tmp_path / "pids.txt"
    oracle_file = tmp_path / "oracle.json"
    oracle_file.write_text(json.dumps({f"echo-L1-s0-{i:05d}": [{"number": 0}] for i in range(2)}))
    cases = [
        ("crash", _py("import sys; print('boom'); sys.exit(3)"), {}, "agent_error", "code 3"),
        ("quiet", _py("pass"), {}, "agent_error", "stopped before any action"),
        ("hang", _py(DAEMON), {"env": {"PIDS": str(pids)}}, "agent_timeout", "turn_timeout_s"),
        (
            "garbage",
            [PYTHON, str(CLIENT)],
            # Time to start (the SDK's import takes seconds on a busy machine); then the
            # bad calls end it.
            {
                "env": {"ORACLE_FILE": str(oracle_file), "ORACLE_MODE": "unknown"},
                "turn_timeout_s": 60,
            },
            "agent_error",
            "6 bad tool calls, the last: unknown tool 'format_disk'",
        ),
    ]
    for name, command, settings, outcome, reason in cases:
        started = time.monotonic()
        cfg = _echo_mcp(tmp_path, name, command, **{"turn_timeout_s": 2, **settings})
        episodes, _ = _played(cfg)
        assert {e["outcome"] for e in episodes.values()} == {outcome}, name
        assert all(reason in e["error"] for e in episodes.values()), (name, episodes)
        assert time.monotonic() - started < 30, name
    left = [int(p) for p in pids.read_text().split()]
    assert len(left) == 4  # two episodes, each a program and its daemon
    assert not [pid for pid in left if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_person_plays_one_episode_served_by_the_command_line(tmp_path):
    """`python -m pipeline.mcp app=malt …` prints the URL, a client submits the oracle's
    code through `submit_code`, and the command prints the verdict and exits."""
    cell = ["app=malt", "level=1", "seed=0", f"data_dir={tmp_path}"]
    cfg = compose([*cell, "queries=2"])
    generate(cfg)
    query = read_queries(layout(cfg).queries(cell_from_config(cfg)), limit=2)[1]
    code = make_app(cfg).oracle_reply(query, 1, "").split("```python\n", 1)[1].rsplit("```", 1)[0]
    command = [PYTHON, "-m", "pipeline.mcp", *cell, "index=1", "turn_timeout_s=60"]
    root = Path(__file__).resolve().parents[1]
    with subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as person:
        assert person.stdout is not None
        url = next(line.strip() for line in person.stdout if "http://127.0.0.1:" in line)

        async def play() -> dict:
            async with Client(url) as client:
                task = await client.call_tool("read_task", {})
                assert task.structured_content["task"] == query.prompt
                assert task.structured_content["diagnostics"] == ["run_code"]
                tried = await client.call_tool("run_code", {"code": code})  # no turn used
                assert "returned:" in tried.structured_content["output"], tried
                result = await client.call_tool("submit_code", {"code": code})
                return result.structured_content

        result = asyncio.run(play())
        out, _ = person.communicate(timeout=60)
    assert result["over"] and result["turn"] == 1
    verdict = json.loads(out.strip().splitlines()[-1])
    assert verdict == {
        "query_id": query.query_id,
        "outcome": "correct",
        "correct": True,
        "safe": True,
        "turns": 1,
        "error": None,
    }
    assert person.returncode == 0
