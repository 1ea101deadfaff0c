"""The catalogue's live proof, data-plane, L2 and services families (needs root).

    python -m pipeline.bench --only incidents_catalogue_dp  # data/bench/incidents_catalogue_dp.json

Every kind of these families is drawn (its own seeded stream, `catalogue:<kind>:<family>`)
on each bench lab of the topology families it declares that offers it a place, and
proved there one after another on one IncidentLab per bench lab (generators/incidents/
proof.py: inject, observable, evidence through the read-only sandbox, fix through the
sandbox, verified return to the healthy lab). LABS are small variants carrying what the
kinds need: an internet edge (OSPF labs), single-area paths (static routes), VRRP and
VLANs (campus), BGP-only edges-less labs (leaf-spine, ISP: no NAT kinds there).

Recorded as `<kind>@<family>_<figure>`: ok, seconds to observe and to restore, the first
symptom seen; per lab its convergence seconds; totals (kinds proven, failures by reason)
and the load average. NETGAUGE_BENCH_DP_FAMILIES and NETGAUGE_BENCH_DP_KINDS (id
prefixes) choose a subset. (The OSPF and BGP kinds' proof is faults_rp's
`incidents_catalogue`, generators/incidents/faults/bench.py, on plain NetLabs.)
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from generators.incidents.faults.kinds import FaultKind, Taken, kinds
from generators.incidents.lab import IncidentLab
from generators.incidents.proof import Prover
from generators.netlab import build

FAMILIES_DP = ("dataplane", "l2", "services")
LABS = {"chain": 0, "ring": 2, "mesh": 1, "leafspine": 0, "campus": 0, "isp": 0}


def _chosen() -> list[FaultKind]:
    """The kinds proven here: not the security policy's (large labs only, seen by the
    closed probes a Session reads, which probes.observe lacks: their live proof is
    tests/test_incidents_policy_live.py)."""
    prefixes = [p for p in os.environ.get("NETGAUGE_BENCH_DP_KINDS", "").split(",") if p]
    return [
        k
        for k in kinds(benign=None)
        if k.family in FAMILIES_DP
        and k.sizes is None
        and (not prefixes or any(k.id.startswith(p) for p in prefixes))
    ]


def prove_lab(family: str, chosen: list[FaultKind], figures: dict[str, Any]) -> None:
    spec = build(family, "small", LABS[family])
    planned = []
    for kind in chosen:
        if family in kind.topologies:
            fault = kind.draw(random.Random(f"catalogue:{kind.id}:{family}"), spec, Taken())
            if fault is None:
                figures[f"{kind.id}@{family}_ok"] = "no place"
            else:
                planned.append(fault)
    if not planned:
        return
    started = time.perf_counter()
    with IncidentLab(spec) as lab:
        lab.converge()
        figures[f"lab@{family}_converged_s"] = round(time.perf_counter() - started, 2)
        prover = Prover(lab)
        for fault in planned:
            key = f"{fault.kind}@{family}"
            begun = time.perf_counter()
            proof = prover.prove_benign(fault) if fault.benign else prover.prove(fault)
            figures[f"{key}_ok"] = proof.ok
            figures[f"{key}_s"] = round(time.perf_counter() - begun, 2)
            figures[f"{key}_observed_s"] = round(proof.timings.get("observed_s", -1), 2)
            figures[f"{key}_restored_s"] = round(proof.timings.get("restored_s", -1), 2)
            figures[f"{key}_symptom"] = proof.observed[0] if proof.observed else ""
            if not proof.ok:
                figures[f"{key}_error"] = proof.error
                if not prover.recover():
                    figures[f"lab@{family}_abandoned_after"] = fault.kind
                    break
            print(f"  {key}: {'ok' if proof.ok else proof.error}", flush=True)


def run_catalogue_dp() -> dict[str, Any]:
    families = os.environ.get("NETGAUGE_BENCH_DP_FAMILIES", ",".join(LABS)).split(",")
    chosen = _chosen()
    figures: dict[str, Any] = {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}
    started = time.perf_counter()
    for family in families:
        prove_lab(family, chosen, figures)
    oks = [k for k, v in figures.items() if k.endswith("_ok") and v is True]
    bad = [k for k, v in figures.items() if k.endswith("_ok") and v is False]
    figures.update(
        proofs_ok=len(oks),
        proofs_failed=len(bad),
        kinds_proven=len({k.split("@")[0] for k in oks}),
        kinds=len(chosen),
        total_s=round(time.perf_counter() - started, 1),
        load_after=os.getloadavg()[0],
    )
    return figures
