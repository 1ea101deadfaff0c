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
from tests.conftest import require_root

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
        nodes = [n for emu in labs for n in emu._nodes.values()]
        print(json.dumps({
            "prefixes": [emu.prefix for emu in labs],
            "netns": sorted({instances.netns_inode(n.pid) for n in nodes}),
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
    try:
        started = json.loads(child.stdout.readline())
        time.sleep(1.0)  # in the middle of episodes
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    prefixes, inodes = started["prefixes"], set(started["netns"])
    assert len(prefixes) == 2 and len(inodes) >= 7  # 2 labs: nodes and switches
    with RoutingEnvironment(RoutingConfig()):
        pass  # entering cleans up after dead runs
    deadline = time.monotonic() + 10
    while instances.pids_in_netns(inodes) and time.monotonic() < deadline:
        time.sleep(0.2)  # a command the killed run had started ends on its own
    assert instances.pids_in_netns(inodes) == []
    for prefix in prefixes:
        assert instances.leftovers(prefix) == []
    new = _root_names() - before
    assert not [n for n in new if any(p in n for p in prefixes) or "-eth" in n or n[:1] == "p"]
