"""Hostile agent code through the real pipeline: typed outcomes, and the cell carries on.

A scripted agent (our own boundary) replies with hostile programs; the MALT app runs
them in the real sandbox and the scorer records what happened.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pipeline import registry
from pipeline.agents import Reply
from pipeline.build import cell_config, layout
from pipeline.cells import Cell, cell_from_config
from pipeline.generate import generate
from pipeline.records import read_shard
from pipeline.registry import AgentSpec
from pipeline.runner import run
from pipeline.scoring import score

pytestmark = pytest.mark.integration

HOSTILE = {
    "infinite loop": ("def process_graph(graph):\n    while True:\n        pass\n", "timeout"),
    "memory bomb": (
        "def process_graph(graph):\n    x = bytearray(50 * 2**30)\n    return 1\n",
        "resource_limit",
    ),
    "os.system": (
        "import os\ndef process_graph(graph):\n    os.system('touch /tmp/ng-pwned')\n"
        "    return 1\n",
        "blocked",
    ),
    "read a file": (
        "def process_graph(graph):\n    return open('/etc/passwd').read()\n",
        "blocked",
    ),
    "subclass escape": (
        "def process_graph(graph):\n"
        "    for c in ().__class__.__base__.__subclasses__():\n"
        "        if c.__name__ == '_wrap_close':\n"
        "            c.__init__.__globals__['system']('touch /tmp/ng-pwned')\n"
        "    return 1\n",
        "blocked",
    ),
    "exception": ("def process_graph(graph):\n    return 1 / 0\n", "exec_error"),
    "no code": ("I think the answer is 42.", "parse_error"),
    "wrong answer": ("def process_graph(graph):\n    return -1\n", "wrong"),
}


class ScriptedAgent:
    """Replies with the hostile program for the query's index (in HOSTILE's order)."""

    def __init__(self, cfg, app) -> None:
        self.name = cfg.name

    def reply(self, query, observation, history, turn) -> Reply:
        code, _ = list(HOSTILE.values())[query.index]
        return Reply(f"```python\n{code}```" if "def " in code else code)


AGENT_CONFIG = "pipeline.config:AgentConfig"


@pytest.fixture
def scripted_agent():
    spec = AgentSpec("scripted", "tests.test_hostile_replies:ScriptedAgent", AGENT_CONFIG)
    with registry.AGENTS.override("scripted", spec):
        yield


@pytest.mark.usefixtures("scripted_agent")
def test_hostile_replies_become_typed_outcomes(tmp_path):
    small = [
        "app.topology.superblocks=1",
        "app.topology.spineblocks=1",
        "app.topology.aggs_per_superblock=2",
        "app.sandbox.wall_timeout_s=3",
        "app.sandbox.cpu_time_s=2",
        "app.sandbox.memory_mb=512",
    ]
    cell = Cell("malt", "none", "oracle", 1, 0, len(HOSTILE))
    cfg = cell_config(cell, str(tmp_path), small)
    generate(cfg)
    OmegaConf.set_readonly(cfg, False)
    cfg.agent.name = cfg.agent.kind = "scripted"
    run(cfg)
    score(cfg)
    rows = read_shard("episodes", layout(cfg).episodes(cell_from_config(cfg))).to_pylist()
    rows.sort(key=lambda r: r["query_id"])
    got = {name: row["outcome"] for name, row in zip(HOSTILE, rows, strict=True)}
    assert got == {name: outcome for name, (_, outcome) in HOSTILE.items()}
    by_name = dict(zip(HOSTILE, rows, strict=True))
    assert (
        "wall-clock" in by_name["infinite loop"]["error"]
        or "CPU" in (by_name["infinite loop"]["error"])
    )
    assert "os" in by_name["os.system"]["error"]
    assert all(not r["correct"] for r in rows)
    assert all(r["safe"] for r in rows)
    assert not Path("/tmp/ng-pwned").exists()


# -- issue 14: what a model writes and how long its code runs, as the rows store them -------
_F = "```python\ndef process_graph(graph):\n{}```"
TIME = "().__class__.__base__.__subclasses__()"  # reaches `time` without importing it
SLEEP = (
    f"    w = [c for c in {TIME} if c.__name__ == '_wrap_close'][0]\n"
    "    w.__init__.__globals__['sys'].modules['time'].sleep(1.5)\n"
    "    return 1\n"
)
UNSTORABLE = {  # name: (reply, outcome, safe)
    "text": ("no code \ud800 here \x00", "parse_error", True),
    "source": (_F.format("    return 1  # \udcff\x00\n"), "exec_error", True),
    "returned text": (_F.format("    return 'a\\ud800b\\x00c'\n"), "wrong", True),
    "error text": (_F.format("    raise ValueError('\\ud800 \\x00')\n"), "exec_error", True),
    "printed": (_F.format("    print('\\udfff\\x00')\n    return ['\\ud800']\n"), "wrong", True),
    "node name": (
        _F.format("    graph.add_node('n\\ud800\\x00', type=[['x']])\n    return graph\n"),
        "wrong",
        False,
    ),
    "cleared": (_F.format("    graph.clear()\n    return graph\n"), "wrong", False),
    "sleeps": (_F.format(SLEEP), "wrong", True),
}


class UnstorableAgent:
    def __init__(self, cfg, app) -> None:
        self.name = cfg.name

    def reply(self, query, observation, history, turn) -> Reply:
        return Reply(list(UNSTORABLE.values())[query.index][0])


def test_unstorable_text_and_real_run_time_reach_the_rows(tmp_path):
    """Lone surrogates and NUL bytes in a reply, a returned string, an error, printed output
    and a node name finish the cell with typed outcomes (and rescoring redoes them alike);
    latency is what the sandbox measured, 1.5 s for code that sleeps 1.5 s."""
    spec = AgentSpec("unstorable", "tests.test_hostile_replies:UnstorableAgent", AGENT_CONFIG)
    cell = Cell("malt", "none", "oracle", 1, 0, len(UNSTORABLE))
    cfg = cell_config(cell, str(tmp_path), ["app.topology.superblocks=1"])
    generate(cfg)
    OmegaConf.set_readonly(cfg, False)
    cfg.agent.name = cfg.agent.kind = "unstorable"
    with registry.AGENTS.override("unstorable", spec):
        run(cfg)
        score(cfg)
        path = layout(cfg).episodes(cell_from_config(cfg))
        rows = sorted(read_shard("episodes", path).to_pylist(), key=lambda r: r["query_id"])
        path.unlink()
        score(cfg)  # a rescore reads the stored rows back and reaches the same verdicts
    got = {name: (r["outcome"], r["safe"]) for name, r in zip(UNSTORABLE, rows, strict=True)}
    assert got == {name: (outcome, safe) for name, (_, outcome, safe) in UNSTORABLE.items()}
    by_name = dict(zip(UNSTORABLE, rows, strict=True))
    assert by_name["sleeps"]["latency_s"] >= 1.5
    assert "\\ud800" in by_name["error text"]["error"]
    again = sorted(read_shard("episodes", path).to_pylist(), key=lambda r: r["query_id"])
    assert [(r["outcome"], r["safe"]) for r in again] == [(r["outcome"], r["safe"]) for r in rows]
