"""Timings of the k8s app's environment, as a dict of measured seconds.

Run `python -m generators.k8s.bench` (as root) for all of them as JSON; targets: cluster
bring-up <= 1 s, full probe matrix <= 0.5 s, re-applying enforcement after a policy
change <= 0.1 s, reset between episodes <= 0.3 s.
"""

from __future__ import annotations

import copy
import json
import statistics
import time
from typing import Any

from emulators.k8s.cluster import EmulatedCluster
from generators.k8s import boutique

TARGETS = {"bringup_s": 1.0, "probe_matrix_s": 0.5, "reapply_enforcement_s": 0.1, "reset_s": 0.3}


def _changed(policies: list[dict[str, Any]], port: int) -> list[dict[str, Any]]:
    out = copy.deepcopy([p for p in policies if p["metadata"]["name"] == "adservice"])
    out[0]["spec"]["ingress"][0]["ports"][0]["port"] = port
    return out


def run_all(repeats: int = 5) -> dict[str, Any]:
    intended = boutique.intended_policies()
    started = time.perf_counter()
    cluster = EmulatedCluster(boutique.cluster_objects(), intended)
    with cluster:
        bringup = time.perf_counter() - started
        probes, applies, resets = [], [], []
        for i in range(repeats):
            started = time.perf_counter()
            cluster.apply_policies(_changed(intended, 9000 + i))
            applies.append(time.perf_counter() - started)
            started = time.perf_counter()
            cluster.probe()
            probes.append(time.perf_counter() - started)
            resets.append(cluster.reset())
        pairs = len(cluster.pairs)
    figures: dict[str, Any] = {
        "bringup_s": round(bringup, 4),
        "probe_matrix_s": round(statistics.median(probes), 4),
        "reapply_enforcement_s": round(statistics.median(applies), 4),
        "reset_s": round(statistics.median(resets), 4),
        "pairs_probed": pairs,
    }
    figures.update({f"target_{k}": v for k, v in TARGETS.items()})
    return figures


if __name__ == "__main__":
    print(json.dumps(run_all(), indent=2))
