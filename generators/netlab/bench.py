"""`netlab_sizes`: what a generated lab costs cold, per family and size (needs root).

    python -m pipeline.bench --only netlab_sizes     # -> data/bench/netlab_sizes.json

For each family and size, variant 0 (xlarge: 24 routers, so at least 48 hosts) is built on
Mininet, FRR is started in its jails and the lab converged (intended state, then every host
pair over ICMP, TCP and UDP: generators/netlab/live.py). Recorded per lab, as
`<family>_<size>_<figure>`: routers, switches, hosts, namespaces, flows; seconds to build,
snapshot, start the daemons, reach the intended state, converge (state and the first full
probe); one more all-pairs probe and one state poll of the converged lab; the teardown;
memory (PSS, shared pages split fairly) of the FRR daemons, in all and per router, and of
the node shells; the 1-minute load average before and after (the machine is shared: every
figure is as loaded as that). `NETGAUGE_BENCH_NETLAB_SIZES` (e.g. `small,xlarge`) and
`NETGAUGE_BENCH_NETLAB_FAMILIES` choose a subset.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from generators.netlab import FAMILIES, SIZES, build
from generators.netlab.live import NetLab, host_flows

XLARGE_ROUTERS = 24


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                out.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return out


def _descendants(pids: list[int]) -> list[int]:
    children, out, todo = _children(), [], list(pids)
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def pss_mb(pids: list[int]) -> float:
    """Proportional set size of `pids` in MB (shared pages split among their users)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return round(total / 1024, 1)


def measure(family: str, size: str) -> dict[str, Any]:
    """One lab's figures (see the module docstring)."""
    routers = XLARGE_ROUTERS if size == "xlarge" else None
    spec = build(family, size, 0, routers)
    lab_model = spec.to_lab()
    flows = host_flows(spec)
    row: dict[str, Any] = {
        "lab": spec.name,
        "routers": len(spec.routers),
        "switches": len(spec.switches),
        "hosts": len(spec.hosts),
        "namespaces": len(lab_model.devices) + len(set(lab_model.domains) - set(lab_model.direct)),
        "flows": len(flows),
        "load_before": round(os.getloadavg()[0], 2),
    }
    started = time.perf_counter()
    lab = NetLab(spec)
    with lab:
        lab.converge()
        row.update({k: round(v, 3) for k, v in lab.timings.items()})
        row["cold_total_s"] = round(time.perf_counter() - started, 3)
        t = time.perf_counter()
        results = lab.emu.probe(flows)
        row["probe_again_s"] = round(time.perf_counter() - t, 3)
        row["probe_again_ok"] = sum(results.values())
        t = time.perf_counter()
        lab.state()
        row["state_poll_s"] = round(time.perf_counter() - t, 3)
        groups = {id(g): g for g in lab.daemons.values()}.values()
        daemons = _descendants([p.pid for g in groups for p in g._procs.values()])
        row["frr_pss_mb"] = pss_mb(daemons)
        row["frr_pss_mb_per_router"] = round(row["frr_pss_mb"] / len(spec.routers), 1)
        row["shells_pss_mb"] = pss_mb(
            [int(n.pid) for n in lab.emu._net.hosts + lab.emu._net.switches]
        )
        t = time.perf_counter()
    row["teardown_s"] = round(time.perf_counter() - t, 3)
    row["load_after"] = round(os.getloadavg()[0], 2)
    return row


def run_sizes() -> dict[str, Any]:
    sizes = [s for s in os.environ.get("NETGAUGE_BENCH_NETLAB_SIZES", ",".join(SIZES)).split(",")]
    families = os.environ.get("NETGAUGE_BENCH_NETLAB_FAMILIES", ",".join(FAMILIES)).split(",")
    figures: dict[str, Any] = {"cpus": os.cpu_count()}
    for size in sizes:
        for family in families:
            row = measure(family, size)
            figures.update({f"{family}_{size}_{k}": v for k, v in row.items()})
            print(f"  {row['lab']}: cold {row['cold_total_s']} s at load {row['load_before']}",
                  flush=True)  # fmt: skip
    figures["target_xlarge_cold_total_s"] = 30
    return figures
