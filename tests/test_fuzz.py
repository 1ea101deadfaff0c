"""The reply fuzzer in CI: a fixed, seeded budget of hostile replies through every app's
live step and every agent door (pipeline/fuzz/), and the property holds: no exception
leaves a step, a diagnostic, a reset, the scorer or a door; every step is typed with a
reason; the environment is as usable after the run as before it.

One live environment per app serves all of its replies (labs built once). The long run is
`python -m pipeline.bench --only fuzz` (data/bench/fuzz.json). A failure lists each
finding with the reply that caused it: make it a named test in tests/test_fuzz_regressions.py.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from generators.benches import fuzz as targets
from pipeline.fuzz.run import AppRun, fuzz_app
from tests.conftest import require, require_emulator, require_root

pytestmark = pytest.mark.integration

SEED = "ci"
# target: (replies in the live episodes, turns per agent door, keyword arguments of the
# target); CI's share of the budget (the seconds are in the report). k8s runs the levels of
# Online Boutique (one cluster); routing levels 4-5 are fuzzed on the live FRR labs of
# tests/test_routing_frr_live.py; `make bench` runs every level of every app at length.
BUDGETS = {
    "malt": (150, 6, {}),
    "k8s": (40, 6, {"levels": (1, 2, 3)}),  # Online Boutique: one cluster
    "routing": (30, 6, {}),
    "netllmbench": (30, 0, {}),  # its doors' replies are routing's: one reply format
}
DOOR_REPLIES = 2  # of each door's replies, played in the live episodes too


def _requirements(name: str) -> None:
    if name == "malt":
        return
    if name == "k8s":
        require_root("the k8s app needs root (network namespaces)")
        require(shutil.which("iptables-nft-restore") is not None, "iptables is not installed")
        kubectl = Path(sys.executable).with_name("kubectl").exists() or shutil.which("kubectl")
        require(bool(kubectl), "kubectl is not installed (scripts/setup.sh)")
        return
    require_emulator("mininet")


def report(run: AppRun) -> str:
    """Each finding with its reproducer, for the failure message."""
    lines = [f"{len(run.findings)} finding(s) fuzzing {run.target}:"]
    for f in run.findings:
        lines += [
            f"- {f.target} {f.where}: {f.kind}: {f.message[:300]}",
            f"  reply ({f.length} chars): {f.reply[:400]!r}",
            *(f"  {line}" for line in f.trace.splitlines()[-6:]),
        ]
    return "\n".join(lines)


@pytest.mark.parametrize("name", list(BUDGETS))
def test_no_hostile_reply_or_door_answer_breaks_an_episode(name):
    _requirements(name)
    replies, turns, kwargs = BUDGETS[name]
    target = targets.TARGETS[name](**kwargs)
    run = fuzz_app(target, replies, turns, SEED, door_replies=DOOR_REPLIES)
    assert run.findings == [], report(run)
    assert run.tally.tried >= replies  # every reply was played (and the doors' on top)
    assert all(d.tried >= turns for d in run.doors) and len(run.doors) == (5 if turns else 0)
    ran = sum(n for status, n in run.tally.statuses.items() if status in ("ok", "exec_error"))
    assert ran > 0  # some replies reached the environment, not only its parser
