"""A long job is never silent (pipeline/heartbeat.py): a job quiet for the heartbeat's
interval says which job it is, its progress and what it waits on, at most once per
interval, on its log and on the console; a job whose progress moves says nothing.

The interval is a parameter (NETGAUGE_HEARTBEAT_S, 60 s by default): these tests use a
fraction of a second and a slow boundary of our own (tests/fakes.py: a step that waits).
"""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest
from tqdm import tqdm

from pipeline import heartbeat, stages
from pipeline.dag import STAGE_CMD
from pipeline.heartbeat import Heartbeat, waiting
from tests import fakes
from tests.conftest import echo_config


def _slow_boundary(seconds: float) -> None:
    """What a lab build stuck in a node shell looks like from the job: a thread blocked
    in the project's code."""
    with waiting("the lab build of ngr0fake (routing L3)"):
        threading.Event().wait(seconds)


def test_a_quiet_job_says_what_it_waits_on_once_per_interval():
    lines: list[str] = []
    with Heartbeat("generate app=routing/level=3/seed=0", interval_s=0.2, out=lines.append):
        _slow_boundary(1.1)
    assert 3 <= len(lines) <= 6, lines  # about one per 0.2 s of the 1.1 s, never more
    assert all(
        line.startswith("[netgauge] generate app=routing/level=3/seed=0: quiet for")
        for line in lines
    )
    assert all("waiting on: the lab build of ngr0fake (routing L3) (" in line for line in lines)
    assert all(
        "[in tests/test_heartbeat.py:" in line and "_slow_boundary]" in line for line in lines
    )


def test_a_job_whose_progress_moves_says_nothing():
    lines: list[str] = []
    with Heartbeat("run app=malt", interval_s=0.3, out=lines.append):
        for _ in tqdm(range(20), desc="run app=malt", file=sys.stderr):
            time.sleep(0.05)
    assert lines == []


@pytest.mark.usefixtures("echo_app")
def test_a_stage_job_beats_on_its_console_while_an_episode_hangs(tmp_path, monkeypatch):
    """`python -m pipeline.stages run` (what a Snakemake job runs) with its console on file
    descriptor 3, as the DAG's rules give it (`3>&2` before `> log 2>&1`)."""
    assert STAGE_CMD.startswith("NETGAUGE_CONSOLE_FD=3 ") and STAGE_CMD.endswith(" 3>&2")
    cfg = echo_config(tmp_path, queries=2, slow_on=[1])
    from pipeline.generate import generate

    generate(cfg)
    monkeypatch.setattr(stages, "_config", lambda args: cfg)
    read, write = os.pipe()
    monkeypatch.setenv(heartbeat.CONSOLE_ENV, str(write))
    monkeypatch.setenv(heartbeat.INTERVAL_ENV, "0.3")
    fakes.SLOW_STEP.clear()
    done: list[int] = []
    argv = ["run", "--app", "echo", "--agent", "oracle", "--level", "1", "--seed", "0",
            "--queries", "2", "--data-dir", str(tmp_path)]  # fmt: skip
    job = threading.Thread(target=lambda: done.append(stages.main(argv)))
    job.start()
    try:
        console = os.fdopen(read, "r")
        line = console.readline()
    finally:
        fakes.SLOW_STEP.set()
        job.join(timeout=30)
        os.close(write)
    assert done == [0]
    part = "app=echo/model=none/agent=oracle/level=1/seed=0/queries=2/variant=base"
    assert line.startswith(f"[netgauge] run {part}: quiet for "), line
    assert f"progress: run {part} 1/2 ep" in line, line
    assert "waiting on: episode echo-L1-s0-00001 (" in line, line
    assert "[in tests/fakes.py:" in line and " step]" in line, line
