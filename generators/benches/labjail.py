"""What a lab's life costs its persistent jails: zygote restarts and seconds per command.

A scripted incidents episode on the small campus lab (FRR, dnsmasq on srv1, keepalived on
the distribution pairs): the lab reset (ColdLab.restore: daemons stopped, kernel reset,
router folders rewritten, daemons started, services back to healthy), then reads (ip,
vtysh, dig, `svcctl ... show`), the three services reconfigured (`svcctl dns|dhcp|vrrp
set`: each daemon restarted) and reads again. Two arms, episode by episode interleaved so
load hits both alike:
  - anew: every restore makes the routers' folders anew (removed, then rewritten), as it
    did before the folders were kept: the lab's vtysh jail holds the old folders and
    restarts (emulators/zygote/client.py) at the first vtysh after each reset;
  - kept: as the lab runs now (generators/lab/frr/daemons.py: write_configs empties the
    folders the jail holds).
Figures per arm: zygote restarts per episode, mean seconds per agent command (svcctl
included, the reset not), median seconds of the first vtysh after a reset, median reset
seconds; `*_ratio` is kept / anew.

    python -m pipeline.bench --only labjail     # ~2 minutes, root, FRR, dnsmasq, keepalived
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections.abc import Callable
from typing import Any

from emulators.netcmd.sandbox import Status
from generators.incidents.labs import ColdLab
from generators.netlab import build

EPISODES = 4  # per arm
READS = [
    ("srv1", "svcctl dns show"),
    ("core1", "ip -br addr"),
    ("core1", "vtysh -c 'show ip route'"),
    ("dist1a", "vtysh -c 'show ip ospf neighbor'"),
    ("h10_1", "dig @10.0.250.53 +short h21-1.lab"),
]
SETS = [
    ("srv1", "svcctl dns set host-record web.lab,10.0.1.11"),
    ("srv1", "svcctl dhcp set dhcp-option tag:l10,option:router,10.1.10.253"),
    ("dist1a", "svcctl vrrp set priority 10 120"),
]
AFTER = [
    ("dist1a", "ip -br addr"),
    ("dist1b", "vtysh -c 'show running-config'"),
    ("core2", "vtysh -c 'show ip route'"),
    ("srv1", "svcctl dhcp show"),
]
EPISODE = [*READS, *SETS, *AFTER]


def _made_anew(write_configs: Callable[[dict], None], group: Any) -> Callable[[dict], None]:
    """`write_configs` of `group` preceded by what it did before: the folders removed."""

    def write(configs: dict) -> None:
        for router in group.routers:
            shutil.rmtree(group.root(router), ignore_errors=True)
        write_configs(configs)

    return write


def _episode(lab: ColdLab, anew: bool) -> dict[str, float]:
    if anew:
        for group in lab.groups:
            group.write_configs = _made_anew(group.write_configs, group)
    try:
        started = time.perf_counter()
        lab.restore()
        restore_s = time.perf_counter() - started
    finally:
        for group in lab.groups:
            vars(group).pop("write_configs", None)
    gate = lab.sandbox_for(False)
    starts = sum(z.starts for z in lab.emu._zygotes.values())
    times, first_vtysh = [], None
    for machine, command in EPISODE:
        started = time.perf_counter()
        result = gate.run(machine, command)
        took = time.perf_counter() - started
        if result.status is not Status.OK:
            raise RuntimeError(f"{machine}: `{command}` was {result.status}: {result.output}")
        times.append(took)
        if first_vtysh is None and command.startswith("vtysh"):
            first_vtysh = took
    restarts = sum(z.starts for z in lab.emu._zygotes.values()) - starts
    assert first_vtysh is not None
    return {"restarts": restarts, "command_s": statistics.mean(times),
            "first_vtysh_s": first_vtysh, "restore_s": restore_s}  # fmt: skip


def run_all() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {"skipped": "the lab and its jails need root"}
    load = os.getloadavg()[0]
    arms: dict[str, list[dict[str, float]]] = {"anew": [], "kept": []}
    with ColdLab(build("campus", "small", 0), timeout_s=8.0, output_bytes=16384) as lab:
        _episode(lab, anew=False)  # the lab's jails started, the services' first restarts
        for _ in range(EPISODES):
            for arm, runs in arms.items():
                runs.append(_episode(lab, anew=arm == "anew"))
    out: dict[str, Any] = {"episodes": EPISODES, "commands_per_episode": len(EPISODE)}
    for arm, runs in arms.items():
        out[f"{arm}_zygote_restarts_per_episode"] = sum(r["restarts"] for r in runs) / len(runs)
        out[f"{arm}_command_s"] = round(statistics.mean(r["command_s"] for r in runs), 4)
        for key in ("first_vtysh_s", "restore_s"):
            out[f"{arm}_{key}"] = round(statistics.median(r[key] for r in runs), 4)
    for key in ("command_s", "first_vtysh_s", "restore_s"):
        out[f"{key}_ratio"] = round(out[f"kept_{key}"] / out[f"anew_{key}"], 2)
    out["load_before"] = round(load, 2)
    out["load_after"] = round(os.getloadavg()[0], 2)
    return out


if __name__ == "__main__":
    import json
    import sys

    json.dump(run_all(), sys.stdout, indent=2)
    print()
