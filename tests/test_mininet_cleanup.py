"""kill -9 of a process playing routing episodes: the next run leaves nothing of it.

A child process plays episodes in a loop on two live topologies; the test kills it with
SIGKILL mid-play, then opens a RoutingEnvironment (which cleans up dead instances on
entry, as every run does) and checks that no process, namespace, bridge or lock file of
the killed run is left, and that the root namespace looks as it did before.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from emulators.mininet import instances
from generators.routing.config import RoutingConfig
from generators.routing.environment import RoutingEnvironment
from tests.conftest import require_emulator, require_root

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
CHILD = textwrap.dedent(
    """
    import json, sys
    from generators.routing.config import RoutingConfig
    from generators.routing.environment import RoutingEnvironment
    from generators.routing.topology import RoutingTopology
    from emulators.mininet import instances
    from tests.test_routing_netcmd import _query

    with RoutingEnvironment(RoutingConfig()) as env:
        queries = [_query(RoutingTopology(2, 1)), _query(RoutingTopology(3, 1))]
        for q in queries:
            with env.episode(q) as episode:
                episode.observe()
        labs = [emu for emu, _ in env.pool._live.values()]
        nodes = [n for emu in labs for n in [*emu._net.hosts, *emu._net.switches]]
        print(json.dumps({
            "prefixes": [emu.prefix for emu in labs],
            "shells": [n.pid for n in nodes],
        }), flush=True)
        while True:  # play until killed
            for q in queries:
                with env.episode(q) as episode:
                    episode.step('{"machine": "r0", "command": "ip route"}')
    """
)


def _root_names() -> set[str]:
    """Interfaces and named namespaces of the root namespace (others' tests may add theirs)."""
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return set(os.listdir("/sys/class/net")) | {
        line.split()[0] for line in netns.stdout.splitlines()
    }


def test_kill_9_mid_run_leaves_no_stray_process_namespace_or_bridge():
    require_root("the cleanup test needs root (Mininet)")
    before = _root_names()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    pins: list[int] = []
    try:
        started = json.loads(child.stdout.readline())
        # Held, the killed run's namespaces keep their numbers: nobody else's are looked at.
        pins = [fd for fd in map(instances.pin, started["shells"]) if fd is not None]
        time.sleep(1.0)  # in the middle of episodes
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    try:
        prefixes = started["prefixes"]
        assert len(prefixes) == 2 and len(instances.pinned(pins)) >= 7  # 2 labs: nodes, switches
        with RoutingEnvironment(RoutingConfig()):
            pass  # entering cleans up after dead runs
        deadline = time.monotonic() + 10
        while instances.pids_in(pins) and time.monotonic() < deadline:
            time.sleep(0.2)  # a command the killed run had started ends on its own
        assert instances.pids_in(pins) == []
        for prefix in prefixes:
            assert instances.leftovers(prefix) == []
    finally:
        for fd in pins:
            os.close(fd)
    new = _root_names() - before
    assert not [n for n in new if any(p in n for p in prefixes) or "-eth" in n or n[:1] == "p"]


# -- issue 26: a lab's stop() must never reach another run's processes -------------------
def _bystanders(recycled: set[int], budget_s: float) -> tuple[list[subprocess.Popen], bool]:
    """Processes in fresh network namespaces, made until one holds a number in `recycled`
    (the kernel hands a dead namespace's inode number to the next new namespace) or the
    budget runs out; (them, whether one got a recycled number)."""
    made: list[subprocess.Popen] = []
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        proc = subprocess.Popen(["unshare", "--net", "sleep", "60"])
        made.append(proc)
        time.sleep(0.05)
        if instances.netns_inode(proc.pid) in recycled:
            return made, True
    return made, False


def test_stop_spares_processes_that_got_the_numbers_of_its_dead_namespaces():
    """What killed other runs' node shells (issue 26): stop() swept for processes by the
    inode numbers its namespaces had at build, after its switches' namespaces were already
    gone; the kernel reuses those numbers at once for new namespaces (another run's lab being
    built, a sandbox), so the sweep SIGKILLed whoever got them. Here the bystanders are made
    between the nodes' deaths and the sweep, until one holds such a number."""
    require_emulator("mininet")
    from emulators.mininet.emulator import MininetEmulator
    from generators.routing.topology import RoutingTopology

    bystanders: list[subprocess.Popen] = []
    try:
        with MininetEmulator() as emu:
            emu.build(RoutingTopology(3, 1).lab())
            net = emu._net
            switches = {instances.netns_inode(s.pid) for s in net.switches}
            last = net.hosts[-1]
            terminate = last.terminate

            def terminate_then_make_bystanders() -> None:
                terminate()  # every node is down now; the sweep comes next
                made, _ = _bystanders(switches, budget_s=2.0)
                bystanders.extend(made)

            last.terminate = terminate_then_make_bystanders
        dead = [p.pid for p in bystanders if p.poll() is not None]
        assert bystanders and not dead, f"stop() killed processes outside its lab: {dead}"
    finally:
        for proc in bystanders:
            proc.kill()
            proc.wait()
