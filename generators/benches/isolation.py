"""What the operating-system isolation of agent actions costs, per action, in one run.

For each kind of agent action, the median wall time of the same action run three ways:
  - bare: straight in the device's (or API server's) network namespace, as root, no jail;
  - oneshot: in the one-shot bubblewrap jail, as every action ran before issue 29 (a
    cgroup joined, then mnexec or nsenter, then bwrap building a fresh root);
  - jailed: as agents' actions run now, through the command sandbox or the cluster's
    kubectl, forked by the lab's (cluster's) persistent jail (emulators/zygote);
with the ratios to bare (`<name>_ratio` is jailed / bare). Actions: ip, iptables, tc,
sysctl and ping on a Mininet router; vtysh on an FRR router; kubectl against an emulated
cluster. Each runs back to back, and spaced by GAP_S (`<name>_spaced_*`), as an agent's
commands come (it thinks between them): a process joining a cgroup waits a full RCU
grace period when none joined one lately, which back-to-back runs never show. The load
average is recorded with the figures; run it under `stress-ng --cpu 4` for a loaded
figure, or with `chrt -f 10` to keep other work on the machine out of the timings.

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

from emulators import process
from emulators.jail import Jail, joined_cgroup
from emulators.k8s.cluster import EmulatedCluster
from emulators.k8s.kubectl import parse
from emulators.mininet.emulator import MininetEmulator
from emulators.netcmd import confine, vtysh
from emulators.netcmd.policy import check
from emulators.netcmd.sandbox import CommandSandbox, Status
from generators.k8s import boutique
from generators.routing.config import RoutingConfig
from generators.routing.frr.lab import FrrLab
from generators.routing.frr.topology import FrrTopology
from generators.routing.topology import RoutingTopology

RUNS = 30
SPACED_RUNS = 10
GAP_S = 0.1
# (machine, command) on RoutingTopology(2, 1): r0 routes between h1_1 and h2_1.
LAB = {
    "ip": ("r0", "ip -br addr"),
    "iptables": ("r0", "iptables -L -n"),
    "tc": ("r0", "tc qdisc show"),
    "sysctl": ("r0", "sysctl net.ipv4.ip_forward"),
    "ping": ("r0", "ping -c 1 -W 1 10.0.1.2"),
}
VTYSH = "vtysh -c 'show ip route'"
KUBECTL = "kubectl get networkpolicies"
Action = Callable[[], object]


def _median_ms(action: Action, runs: int, gap_s: float = 0.0, warmup: int = 2) -> float:
    for _ in range(warmup):
        action()
    times = []
    for _ in range(runs):
        time.sleep(gap_s)
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 2)


def _three(name: str, bare: Action, oneshot: Action, jailed: Action, spaced: bool) -> dict:
    """The three ways of one action, interleaved run by run so load hits each alike."""
    out: dict[str, Any] = {}
    for suffix, runs, gap in [("", RUNS, 0.0)] + ([("_spaced", SPACED_RUNS, GAP_S)] * spaced):
        ways = {"bare": bare, "oneshot": oneshot, "jailed": jailed}
        times: dict[str, list[float]] = {way: [] for way in ways}
        for action in ways.values():
            action()  # warm caches and the lab's jail
        for _ in range(runs):
            for way, action in ways.items():
                time.sleep(gap)
                started = time.perf_counter()
                action()
                times[way].append(time.perf_counter() - started)
        ms = {way: round(statistics.median(t) * 1000, 2) for way, t in times.items()}
        for way, value in ms.items():
            out[f"{name}{suffix}_{way}_ms"] = value
        out[f"{name}{suffix}_ratio"] = round(ms["jailed"] / ms["bare"], 2)
        out[f"{name}{suffix}_oneshot_ratio"] = round(ms["oneshot"] / ms["bare"], 2)
    return out


def _ok(result: Any) -> Any:
    status = getattr(result, "status", None)
    ok = status is Status.OK or status == "ok" or getattr(result, "exit_code", 0) == 0
    if not ok:
        raise RuntimeError(f"a benchmarked action failed: {result}")
    return result


def _oneshot(emu: Any, machine: str, argv: list[str], jail: Jail) -> Any:
    """The jail as it was: a cgroup made for the command, joined by a shell, bwrap."""
    with joined_cgroup("labcmd", confine.MEMORY_BYTES, confine.PIDS) as prefix:
        return emu.run(
            machine, jail.argv(argv), timeout_s=5, output_bytes=65536, host_prefix=prefix
        )


def lab_commands() -> dict[str, Any]:
    topo = RoutingTopology(2, 1)
    out: dict[str, Any] = {}
    with MininetEmulator() as emu:
        emu.build(topo.lab())
        sandbox = CommandSandbox(emu, topo.machines, switches=topo.switches)
        for name, (machine, command) in LAB.items():
            argv = list(check(command).argv)
            jail = confine.jail(argv[:1])
            out |= _three(
                name,
                lambda m=machine, a=argv: _ok(emu.run(m, a, timeout_s=5, output_bytes=65536)),
                lambda m=machine, a=argv, j=jail: _ok(_oneshot(emu, m, a, j)),
                lambda m=machine, c=command: _ok(sandbox.run(m, c)),
                spaced=name == "ip",
            )
        # A command that changes state has the device's objects counted before and after it.
        add = "ip route replace 10.9.0.0/24 dev r0-eth1"
        out["lab_add_counted_ms"] = _median_ms(lambda: _ok(sandbox.run("r0", add)), RUNS)
        sandbox._netns = None  # the same sandbox without the count
        out["lab_add_uncounted_ms"] = _median_ms(lambda: _ok(sandbox.run("r0", add)), RUNS)
        out["lab_add_count_ratio"] = round(
            out["lab_add_counted_ms"] / out["lab_add_uncounted_ms"], 2
        )
    return out


def vtysh_command() -> dict[str, Any]:
    """vtysh on r1 of a converged 3-router OSPF lab; bare: the host's vtysh on its socket."""
    with FrrLab(FrrTopology(4, 3), RoutingConfig()) as lab:
        sandbox, daemons = lab.sandbox, lab.daemons
        assert sandbox is not None and daemons is not None
        argv = check(VTYSH).argv
        inner = vtysh.argv(argv[0], vtysh.check_vtysh(list(argv[1:]), vtysh.DAEMONS))
        host = [argv[0], "--vty_socket", str(daemons.vty_dir("r1")), *argv[1:]]
        jail = vtysh.jail(argv[0], str(daemons.root("r1")))
        return _three(
            "vtysh",
            lambda: _ok(lab.emu.run("r1", host, timeout_s=5, output_bytes=65536)),
            lambda: _ok(_oneshot(lab.emu, "r1", inner, jail)),
            lambda: _ok(sandbox.run("r1", VTYSH)),
            spaced=False,
        )


def kubectl_command() -> dict[str, Any]:
    cmd = parse(KUBECTL)
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
        # As it was: one cgroup per cluster, joined by every command, and bwrap.
        with joined_cgroup("kubectl", 512 << 20, 256) as joined:

            def oneshot() -> object:
                proc = process.start([*joined, *client.argv(cmd)])
                return process.collect(proc, cmd.argv, timeout_s=30, output_bytes=1 << 20)

            return _three(
                "kubectl",
                lambda: subprocess.run(bare_argv, env=env, capture_output=True, check=True),
                lambda: _ok(oneshot()),
                lambda: _ok(cluster.kubectl(cmd)),
                spaced=True,
            )


def run_all() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {"skipped": "the lab and kubectl jails need root"}
    load = os.getloadavg()[0]
    figures = {**lab_commands(), **vtysh_command(), **kubectl_command()}
    figures["load_before"] = round(load, 2)
    figures["load_after"] = round(os.getloadavg()[0], 2)
    figures["target_lab_ratio"] = 1.5
    figures["target_kubectl_ratio"] = 1.2
    return figures


if __name__ == "__main__":
    json.dump(run_all(), sys.stdout, indent=2)
    print()
