"""The network apps' smoke grid on real Kathará, through the whole Snakemake DAG.

Routing troubleshooting and NetLLMBench's configuration tasks run with every lab deployed
by Kathará on the project's own dockerd: oracle 100 % correct and safe, null 0 %;
NetLLMBench's own nine-task chain takes one attempt per task; afterwards no container,
network, instance or daemon of ours is left and the root firewall is unchanged.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from emulators.kathara import daemon
from emulators.kathara.emulator import STATE_DIR
from pipeline.views import connect
from tests.conftest import require_emulator
from tests.test_dag import snakemake
from tests.test_netllmbench import PAPER_TASKS

pytestmark = pytest.mark.integration
APPS = ["netllmbench_kathara", "routing_kathara"]


def root_firewall() -> str:
    """The root namespace's rules, counters and comments dropped."""
    out = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    return "\n".join(
        re.sub(r"\[\d+:\d+\]", "", line) for line in out.splitlines() if not line.startswith("#")
    )


def test_network_apps_sweep_on_kathara(tmp_path: Path):
    require_emulator("kathara")
    firewall = root_firewall()
    # One query per cell (the grid has three): every level, app and agent still runs, and
    # query 0 of level 2 is NetLLMBench's own lab.
    done = snakemake(tmp_path, "sweep", grid="smoke_kathara", config=("queries=1",))
    assert done.returncode == 0, done.stderr[-4000:]
    con = connect(tmp_path)
    rows = con.execute(
        "SELECT app, agent, level, avg(correct::INT), avg(safe::INT) FROM episodes "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rows == [
        (app, agent, level, correct, 1.0)
        for app in APPS
        for agent, correct in (("null", 0.0), ("oracle", 1.0))
        for level in (1, 2, 3)
    ]
    chain = con.execute(
        "SELECT task, attempt, task_solved FROM steps WHERE agent = 'oracle' "
        "AND query_id = 'netllmbench_kathara-L2-s0-00000' ORDER BY turn"
    ).fetchall()
    assert chain == [(task, 1, True) for task in PAPER_TASKS]
    tasks = con.execute(
        "SELECT sum(tasks), sum(tasks_solved) FROM episodes "
        "WHERE app = 'netllmbench_kathara' AND agent = 'oracle'"
    ).fetchone()
    assert tasks[0] > 9 and tasks[0] == tasks[1]

    assert not daemon.answering(), "our dockerd still runs after the sweep"
    left = sorted(p.name for p in STATE_DIR.glob("*")) if STATE_DIR.exists() else []
    assert left == [], f"instances left behind: {left}"
    assert root_firewall() == firewall
