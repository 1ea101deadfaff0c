"""The reference player's driver (`python -m pipeline.gym.drive`): one toynet localize
episode played from the shell as a player would, hostile replies included, and nothing of
the truth shown before `end --reveal`. Its server is a real process on a unix socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.config import ROOT
from tests.test_tasks_grid import PLUGINS

pytestmark = pytest.mark.integration  # a server process and its socket


def _drive(folder: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NETGAUGE_APP_PATH": str(PLUGINS)}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.gym.drive", args[0], "--dir", str(folder), *args[1:]],
        cwd=ROOT, env=env, input=stdin, capture_output=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def folder(tmp_path: Path):
    """The episode's folder; its server is ended whatever the test did."""
    yield tmp_path / "ep"
    if (tmp_path / "ep" / "sock").exists():
        _drive(tmp_path / "ep", "end")


def test_a_player_plays_one_episode_through_the_driver(tmp_path: Path, folder: Path) -> None:
    sys.path.insert(0, str(PLUGINS))
    try:
        from toynet.app import ToynetApp, ToynetConfig
    finally:
        sys.path.remove(str(PLUGINS))
    query = list(ToynetApp(ToynetConfig(task="localize"), None, None).generate(1, 5, 2))[1]
    truth = query.ground_truth["causes"]
    start = ["start", "--app", "toynet", "--level", "1", "--task", "localize"]
    started = _drive(folder, *start, "--seed", "5", "--index", "1", "--data-dir", str(tmp_path))
    assert started.returncode == 0, started.stderr.decode()[-2000:]
    first = started.stdout.decode()
    assert first.startswith("Toynet: routers") and "route.missing: a router lacking" in first
    assert first.rstrip().endswith("[turn 0 of 6 | 6 turns left | read 0 KiB, 0.4 KiB left]")

    device = truth[0]["device"]
    shown = _drive(folder, "step", json.dumps({"device": device, "command": "show"}))
    assert shown.stdout.decode().startswith("eth0 ") and "| status ok]" in shown.stdout.decode()
    write = _drive(folder, "step", json.dumps({"device": device, "command": "set eth0 down"}))
    assert (
        write.stdout.decode().splitlines()
        == [
            "read-only episode: set would change the network",
            "[turn 2 of 6 | 4 turns left | read 0.1 KiB, 0.3 KiB left | status blocked]",
        ]
        or "status blocked" in write.stdout.decode()
    )
    huge = _drive(folder, "step", "-", stdin=os.urandom(3 << 20))  # not UTF-8, past 1 MiB
    assert "| status parse_error]" in huge.stdout.decode() and huge.returncode == 0
    answer = {"answer": {"healthy": False, "causes": truth}}
    done = _drive(folder, "step", json.dumps(answer))
    assert "[episode over: the environment ended it (answer recorded); run end]" in (
        done.stdout.decode()
    )
    late = _drive(folder, "step", "show")
    assert late.returncode == 2 and "the episode is over" in late.stderr.decode()
    status = _drive(folder, "status")
    assert status.stdout.decode().startswith("[turn 4 of 6 | 2 turns left")

    played = first + shown.stdout.decode() + write.stdout.decode() + done.stdout.decode()
    for secret in ('"faults"', "ground truth", "correct=", "score=", query.key):
        assert secret not in played  # nothing of the truth or the verdict before end
    ended = _drive(folder, "end", "--reveal")
    lines = ended.stdout.decode().splitlines()
    assert lines[0] == (
        "verdict: outcome=correct correct=true safe=true score=1.000 turns=4 commands=1 "
        f"blocked=1 bytes_read={len(shown.stdout.decode().split('[turn')[0].rstrip(chr(10)))}"
    )
    assert lines[1].startswith(f"query: {query.query_id} key {query.key} task localize")
    assert json.loads(lines[2].removeprefix("ground truth: "))["causes"] == truth
    assert not (folder / "sock").exists()
    turns = [json.loads(line) for line in (folder / "transcript.jsonl").read_text().splitlines()]
    assert [t.get("status") for t in turns] == [None, "ok", "blocked", "parse_error", "ok"]


def test_the_help_says_everything_a_player_needs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.gym.drive", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    needed = ("start", "step", "status", "end", "--reveal", "transcript.jsonl", "exit codes")
    needed += ("read-only", '"-" reads it from standard input', "verdict: outcome=")
    for words in needed:
        assert words in done.stdout, words
