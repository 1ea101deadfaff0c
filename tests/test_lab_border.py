"""The border between an agent's text and the lab processes (issue 26), live on Mininet: a
cell of an LLM agent (an endpoint of our own) sending what once failed the cell finishes with
typed steps; a byte stored in the kernel breaks no later read and the lab is reset, reused
and stopped with nothing left; a node shell killed during a step or during a build is an
env_error within a deadline, never a hang, and the lab is built again.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from emulators.mininet import instances, nodes
from generators.routing.config import RoutingConfig
from generators.routing.environment import RoutingEnvironment
from generators.routing.topology import RoutingTopology
from pipeline.cells import Cell
from pipeline.config import compose
from pipeline.errors import EnvironmentFailure
from pipeline.gym.env import NetGaugeEnv
from pipeline.reference.agents import NullAgent
from pipeline.run import run_cell
from pipeline.runner import play
from pipeline.views import connect
from tests.chat_endpoint import chat_endpoint
from tests.conftest import require_emulator
from tests.test_routing_netcmd import _query

pytestmark = pytest.mark.integration

DEADLINE_S = 15.0  # a dead node shell is noticed in LIVENESS_S; the rest is the step's own


def _reply(command: str, **extra: object) -> str:
    return json.dumps({"machine": "r0", "command": command, **extra})


HUGE = "7" * 4301
REPLIES = [  # per query; the second turn of each repeats it
    _reply("ip -br addr")[:-1] + f', "n": {HUGE}}}',  # raised ValueError out of reply.py
    _reply("iptables -A FORWARD -m comment --comment X\ud800 -j ACCEPT"),  # UnicodeEncodeError
    _reply("iptables -A FORWARD -m string --algo bm --string \ud800 -j DROP"),
]


def test_an_llm_cell_of_replies_that_once_failed_it_writes_its_episodes(tmp_path):
    require_emulator("mininet")
    tasks: dict[str, int] = {}

    def answer(body: dict) -> str:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return REPLIES[tasks.setdefault(task, len(tasks)) % len(REPLIES)]

    with chat_endpoint(answer) as (url, _):
        run_cell(
            compose(
                [
                    "app=routing",
                    "agent=zero_shot",
                    "model=smollm2",
                    "model.endpoint=external",
                    f"model.base_url={url}",
                    "model.max_in_flight=1",
                    "app.max_turns=2",
                    "queries=3",
                    f"data_dir={tmp_path}",
                ]
            )
        )
    con = connect(tmp_path)
    steps = con.execute(
        "SELECT query_id[-1:]::INT, list(status ORDER BY turn), any_value(error) "
        "FROM steps GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert [(i, statuses) for i, statuses, _ in steps] == [
        (0, ["ok", "ok"]),
        (1, ["blocked", "blocked"]),
        (2, ["blocked", "blocked"]),
    ]
    assert all("lone surrogate" in why for _, _, why in steps[1:])
    outcomes = con.execute("SELECT outcome FROM episodes ORDER BY query_id").fetchall()
    assert [o for (o,) in outcomes] == ["wrong", "blocked", "blocked"]


STORED = (  # trusted writes that put 0xFF (surrogateescape) into the kernel
    ["iptables", "-A", "FORWARD", "-m", "comment", "--comment", "X\udcff", "-j", "ACCEPT"],
    ["ip", "link", "set", "dev", "r0-eth1", "alias", "Y\udcff"],
)


def _shells(prefix: str) -> list[int]:
    return instances.shell_pids(prefix)


def test_a_byte_stored_in_the_kernel_breaks_no_read_and_the_lab_is_reused_then_gone():
    """`--comment X\\udcff` stored 0xFF in the kernel (surrogateescape) and the next reset's
    state dump raised UnicodeDecodeError; the lab was then left running past close(). An
    agent's surrogate is refused now (above); the byte here comes in by a trusted write, as
    any byte a tool stores might."""
    require_emulator("mininet")
    query = _query(RoutingTopology(2, 1))
    with RoutingEnvironment(RoutingConfig()) as env:
        with env.episode(query) as episode:
            ((emu, _),) = env.pool._live.values()
            prefix = emu.prefix
            for argv in STORED:
                assert emu.run("r0", argv, timeout_s=5, output_bytes=4096).exit_code == 0
            shown = episode.step(_reply("iptables -S FORWARD"))
            assert shown.status.value == "ok" and "X\ufffd" in shown.output
        for _ in range(2):  # reset (the dump holds 0xFF), verified, reused
            with env.episode(query) as episode:
                assert episode.step(_reply("sysctl -w net.ipv4.ip_forward=1")).done
        assert env.pool.builds == 1 and len(env.pool.resets) == 2
        assert _shells(prefix)
    assert instances.leftovers(prefix) == []


def test_a_node_shell_killed_during_a_step_is_an_env_error_within_a_deadline(tmp_path):
    require_emulator("mininet")
    env = NetGaugeEnv(app="routing", levels=1, queries=1, data_dir=str(tmp_path))
    env._generated[1] = [_query(RoutingTopology(2, 1))]  # no draw to validate: the test's own
    prefixes = []
    try:
        env.reset(seed=0)
        ((emu, _),) = env._env.pool._live.values()
        prefixes.append(emu.prefix)
        router = emu._nodes["r0"]
        threading.Timer(0.4, os.kill, (router.pid, signal.SIGKILL)).start()
        started = time.monotonic()
        with pytest.raises(EnvironmentFailure, match="r0 died \\(killed by SIGKILL\\)"):
            env.step(_reply("ping -c 3 -i 0.4 10.0.1.2"))  # runs ~1 s on r0
        assert time.monotonic() - started < DEADLINE_S
        assert _shells(prefixes[0]) == []  # the broken lab is stopped at once, not reused
        env.reset(seed=0)  # a new lab
        ((emu, _),) = env._env.pool._live.values()
        prefixes.append(emu.prefix)
        _, _, _, _, info = env.step(_reply("ip -br addr"))
        assert info["status"] == "ok" and prefixes[1] != prefixes[0]
    finally:
        env.close()
    assert [instances.leftovers(p) for p in prefixes] == [[], []]


def _killing_at_first_read(found: list[str], original):
    """Mininet's read wait, which SIGKILLs the first node shell it is asked to read from and
    records its prefix: the kill lands inside the build, at the read that once hung, however
    fast or slow the machine is (a watcher thread polling /proc raced the build and lost
    on a loaded machine)."""

    def wait(node, *args, **kwargs):
        if not found:
            found.append(node.name[:8])
            os.kill(node.shell.pid, signal.SIGKILL)
            node.shell.wait()
        return original(node, *args, **kwargs)

    return wait


def test_a_node_shell_killed_during_the_build_is_an_env_error_within_a_deadline():
    """The hang of `make smoke` (issue 26): Mininet's own Node.cmd read a dead shell's pty
    forever while the lab was built."""
    require_emulator("mininet")
    query = _query(RoutingTopology(3, 1))
    cell = Cell("routing", "none", "null", 1, 0, 1)
    found: list[str] = []
    with RoutingEnvironment(RoutingConfig()) as env, pytest.MonkeyPatch.context() as patch:
        patch.setattr(nodes, "wait_readable", _killing_at_first_read(found, nodes.wait_readable))
        started = time.monotonic()
        rows = play(env, NullAgent(compose(["agent=null"]).agent, None), query, cell)
        assert time.monotonic() - started < DEADLINE_S
        assert [r["status"] for r in rows] == ["env_error"]
        assert "killed by SIGKILL" in rows[0]["error"], rows[0]["error"]
        assert not env.pool._live
    assert found and instances.leftovers(found[0]) == []
