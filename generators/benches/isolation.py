"""What the operating-system isolation of agent actions costs, per action, in one run.

Each figure is the median wall time of the same action run bare (as before the jails:
straight in the device's or API server's network namespace, as root) and jailed (the way
agents' actions run now), with the ratio jailed / bare:

  - a lab command (`ip -br addr` on a Mininet router), through emulators/netcmd; and one
    that adds a route, with and without the count of the device's objects around it;
  - a kubectl command (`kubectl get networkpolicies`) against an emulated cluster.

    python -m generators.benches.isolation     # or: python -m pipeline.bench --only isolation
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from emulators.k8s.cluster import EmulatedCluster
from emulators.k8s.kubectl import parse
from emulators.mininet.emulator import MininetEmulator
from emulators.netcmd.sandbox import CommandSandbox
from generators.k8s import boutique
from generators.routing.topology import RoutingTopology


def _median_ms(action: Callable[[], object], runs: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        action()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 2)


def lab_command(runs: int = 60) -> dict[str, Any]:
    topo = RoutingTopology(2, 1)
    with MininetEmulator() as emu:
        emu.build(topo.lab())
        sandbox = CommandSandbox(emu, topo.machines, switches=topo.switches)
        bare = _median_ms(
            lambda: emu.run("r0", ["/usr/sbin/ip", "-br", "addr"], timeout_s=5, output_bytes=65536),
            runs,
        )
        jailed = _median_ms(lambda: sandbox.run("r0", "ip -br addr"), runs)
        # A command that changes state has the device's objects counted before and after it.
        add = "ip route replace 10.9.0.0/24 dev r0-eth1"
        counted = _median_ms(lambda: sandbox.run("r0", add), runs)
        sandbox._netns = None  # the same sandbox without the count
        uncounted = _median_ms(lambda: sandbox.run("r0", add), runs)
    return {"lab_command_bare_ms": bare, "lab_command_jailed_ms": jailed,
            "lab_command_ratio": round(jailed / bare, 2),
            "lab_add_uncounted_ms": uncounted, "lab_add_counted_ms": counted,
            "lab_add_count_ratio": round(counted / uncounted, 2)}  # fmt: skip


def kubectl_command(runs: int = 30) -> dict[str, Any]:
    cmd = parse("kubectl get networkpolicies")
    with EmulatedCluster(boutique.cluster_objects(), boutique.intended_policies()) as cluster:
        client = cluster.client
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(client.home),
            "KUBECONFIG": str(client.kubeconfig),
            "KUBECACHEDIR": str(client.cache),
            "KUBERC": "off",
        }
        bare_argv = ["nsenter", f"--net={client.netns}", client.binary, *cmd.argv]
        bare = _median_ms(
            lambda: subprocess.run(bare_argv, env=env, capture_output=True, check=True), runs
        )
        jailed = _median_ms(lambda: cluster.kubectl(cmd), runs)
    return {"kubectl_bare_ms": bare, "kubectl_jailed_ms": jailed,
            "kubectl_ratio": round(jailed / bare, 2)}  # fmt: skip


def run_all() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {"skipped": "the lab and kubectl jails need root"}
    return {**lab_command(), **kubectl_command()}


if __name__ == "__main__":
    json.dump(run_all(), sys.stdout, indent=2)
    print()
