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


@pytest.fixture
def scripted_agent():
    registry.AGENTS.register("scripted", "tests.test_hostile_replies:ScriptedAgent")
    yield
    registry.AGENTS.unregister("scripted")


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
