"""A model's job plays its cells on one endpoint (pipeline.runner.run_model): a cell starts
when the one before has handed out its last query, so their episodes overlap, never more
than the model's in-flight count play at once, and a failing cell stops no other.

The model is an endpoint of our own (tests/chat_endpoint.py); the app is MALT, real.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from pipeline.build import cell_config
from pipeline.cells import Layout, data_root
from pipeline.config import ROOT
from pipeline.errors import DataError
from pipeline.generate import generate, read_queries
from pipeline.plan import load_plan
from pipeline.records import read_shard
from pipeline.runner import run_model
from tests.chat_endpoint import chat_endpoint

pytestmark = pytest.mark.integration

QUERIES = 4
BUDGET = 3
WRONG = "```python\ndef process_graph(graph):\n    return 0\n```"


class Traffic:
    """What the endpoint saw: requests in flight, their peak, and which levels were in
    flight together. With `hold_last`, each level's last query is held until a request
    of the next level arrives (or 60 s pass), so an overlap is seen however slowly the
    next cell starts, and a missing one is seen as a hold that timed out."""

    def __init__(self, hold_last: bool, gate: threading.Event | None = None) -> None:
        self.hold_last = hold_last
        self.gate = gate  # when given, requests past level 1 wait until it is set
        self.level_of: dict[str, int] = {}
        self.last_of: dict[int, str] = {}
        self.lock = threading.Lock()
        self.in_flight: dict[int, int] = {}
        self.peak = 0
        self.arrived: set[int] = set()
        self.overlapped: set[tuple[int, int]] = set()
        self.held_too_long: list[int] = []

    def answer(self, body: dict) -> str:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        level = next(v for prompt, v in self.level_of.items() if prompt in task)
        with self.lock:
            self.in_flight[level] = self.in_flight.get(level, 0) + 1
            self.peak = max(self.peak, sum(self.in_flight.values()))
            self.arrived.add(level)
            self.overlapped |= {
                (min(level, other), max(level, other))
                for other, n in self.in_flight.items()
                if other != level and n
            }
        try:
            if self.gate is not None and level > 1:
                self.gate.wait(timeout=60)
            nxt = level + 1
            if self.hold_last and nxt in self.last_of and self.last_of[level] in task:
                deadline = time.monotonic() + 60
                while nxt not in self.arrived and time.monotonic() < deadline:
                    time.sleep(0.05)
                if nxt not in self.arrived:
                    self.held_too_long.append(level)
            else:
                time.sleep(0.2)
            return WRONG
        finally:
            with self.lock:
                self.in_flight[level] -= 1


def _plan(tmp_path, url: str, levels: list[int]):
    variant = ["model.endpoint=external", f"model.base_url={url}", f"model.max_in_flight={BUDGET}"]
    axes = {
        "apps": ["malt"],
        "agents": ["zero_shot"],
        "models": ["smollm2"],
        "levels": levels,
        "seeds": [0],
        "queries": QUERIES,
        "variants": [variant],
    }
    plan = load_plan("smoke", tmp_path, axes)
    plan.write()
    return plan


def _generated(traffic: Traffic, tmp_path, url: str, levels: list[int]):
    """The plan, its cells' queries generated, and `traffic` told each prompt's level."""
    plan = _plan(tmp_path, url, levels)
    for cell in plan.cells:
        queries = read_queries(generate(cell_config(cell, str(tmp_path))))
        assert len(queries) == QUERIES
        traffic.level_of |= {q.prompt: cell.level for q in queries}
        traffic.last_of[cell.level] = queries[-1].prompt
    return plan


def test_cells_overlap_and_share_the_in_flight_budget(tmp_path):
    traffic = Traffic(hold_last=True)
    with chat_endpoint(traffic.answer, serial=False) as (url, _):
        plan = _generated(traffic, tmp_path, url, [1, 2, 3])
        paths = run_model(plan.name, "smollm2", str(tmp_path))
    assert [p.exists() for p in paths] == [True] * 3
    assert traffic.held_too_long == []  # level 2 started while level 1's last query played
    assert {(1, 2), (2, 3)} <= traffic.overlapped
    assert traffic.peak == BUDGET


def test_a_failing_cell_stops_no_other_and_is_raised(tmp_path):
    traffic = Traffic(hold_last=False)
    with chat_endpoint(traffic.answer, serial=False) as (url, _):
        plan = _generated(traffic, tmp_path, url, [1, 2, 3])
        lost = next(c for c in plan.cells if c.level == 2)
        layout = Layout(data_root(tmp_path))
        layout.queries(lost).unlink()  # level 2's queries are lost: its cell cannot play
        with pytest.raises(DataError, match="missing queries shard"):
            run_model(plan.name, "smollm2", str(tmp_path))
    done = {c.level: layout.transcripts(c).exists() for c in plan.cells}
    assert done == {1: True, 2: False, 3: True}
    assert traffic.peak <= BUDGET


def test_an_interrupted_job_keeps_what_it_played_and_a_rerun_plays_the_rest(tmp_path):
    """Ctrl-C while cells overlap: the episodes in play finish on a live server, no cell
    writes a shard it has not finished, and the rerun completes every cell without
    playing an episode twice."""
    gate = threading.Event()  # level 2's requests wait until the signal is sent
    traffic = Traffic(hold_last=False, gate=gate)
    with chat_endpoint(traffic.answer, serial=False) as (url, seen):
        plan = _generated(traffic, tmp_path, url, [1, 2, 3])
        cmd = [sys.executable, "-m", "pipeline.stages", "run-model", "--grid", plan.name]
        job = subprocess.Popen(
            [*cmd, "--model", "smollm2", "--data-dir", str(tmp_path)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            # Ctrl-C's default: a shell running the suite in the background ignores SIGINT,
            # and a Python started with it ignored raises no KeyboardInterrupt.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 120
        while 2 not in traffic.arrived and time.monotonic() < deadline:  # level 2 has begun
            time.sleep(0.05)
        job.send_signal(signal.SIGINT)
        time.sleep(2.0)  # the job handles the signal before level 2 may finish
        gate.set()
        _, err = job.communicate(timeout=120)
        assert job.returncode != 0, err[-2000:]
        layout = Layout(data_root(tmp_path))
        finished = [c.level for c in plan.cells if layout.transcripts(c).exists()]
        assert 3 not in finished and len(finished) < 3, err[-2000:]
        played_before = len(seen)
        run_model(plan.name, "smollm2", str(tmp_path))
    rows = [read_shard("transcripts", layout.transcripts(c)) for c in plan.cells]
    ids = [q for table in rows for q in set(table.column("query_id").to_pylist())]
    assert len(ids) == len(set(ids)) == 3 * QUERIES
    replayed = len(seen) - played_before
    assert replayed < 3 * QUERIES  # what was played before the interrupt was kept
