"""`incidents_catalogue`: every fault kind, live, on every topology family it declares.

    python -m pipeline.bench --only incidents_catalogue   # -> data/bench/incidents_catalogue.json

For each kind and each family it declares, the kind is drawn (its own seeded stream) on
the first of the family's bench labs (`LABS`: small variants carrying the features the
kinds need: two ASes, path and ECMP intents, NSSA and stub areas, a multi-site customer
with dual-homed sites) that offers it a place; the labs are built one at a time and the
kinds drawn on each are proved one after another (prove.py: inject, observe, evidence
through the agent's sandbox, fix through it, verified return). Then every masking pair
of the OSPF and BGP kinds is played once where masking.py can draw it.

Recorded per kind and family, as `<kind>@<family>_<figure>`: ok, observable, the symptom
classes seen, seconds; per lab its build and convergence; totals and the load average.
NETGAUGE_BENCH_CATALOGUE_FAMILIES and NETGAUGE_BENCH_CATALOGUE_KINDS (id prefixes, e.g.
`ospf.,bgp.max`) choose a subset; NETGAUGE_BENCH_CATALOGUE_PAIRS=0 leaves out the pairs.
Needs root (Mininet, FRR); about 10 minutes for the OSPF and BGP kinds on a loaded machine.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterable
from typing import Any

from generators.incidents.faults.kinds import Fault, FaultKind, Taken, kinds
from generators.incidents.faults.masking import draw_masked
from generators.incidents.faults.prove import Proof, ProofLab
from generators.netlab import FAMILIES, build
from generators.netlab.spec import NetSpec

# Small variants per family, in the order tried (generators/netlab/catalogue.py: build).
LABS = {
    "chain": (1, 0),  # two ASes (OSPF inside, eBGP between); one area with path intents
    "ring": (0, 6),  # path intents; an NSSA area
    "mesh": (1, 2),  # path and ECMP intents; an NSSA area
    "leafspine": (0,),  # ECMP intents over two spines
    "campus": (5, 1),  # an NSSA and a stub block; an NSSA block
    "isp": (20, 8),  # a multi-site customer, dual-homed sites, a route reflector
}


def draw_for(kind: FaultKind, family: str) -> tuple[NetSpec, Fault] | None:
    """The kind drawn on the first bench lab of `family` that offers it a place."""
    for variant in LABS[family]:
        spec = build(family, "small", variant)
        fault = kind.draw(random.Random(f"catalogue:{kind.id}:{family}"), spec, Taken())
        if fault is not None:
            return spec, fault
    return None


def plan(
    chosen: Iterable[FaultKind], families: Iterable[str]
) -> tuple[dict[str, tuple[NetSpec, list[Fault]]], list[str]]:
    """{lab name: (spec, its faults in order)}, and the (kind, family) pairs no bench lab
    offers a place to."""
    labs: dict[str, tuple[NetSpec, list[Fault]]] = {}
    missing = []
    wanted = set(families)
    for k in chosen:
        for family in sorted(k.topologies & wanted):
            got = draw_for(k, family)
            if got is None:
                missing.append(f"{k.id}@{family}")
                continue
            spec, fault = got
            labs.setdefault(spec.name, (spec, []))[1].append(fault)
    return labs, missing


def _pairs(spec: NetSpec, faults: list[Fault]) -> list[tuple[Fault, Fault]]:
    """One masking pair per (outer, inner) kind this lab can hold."""
    out = []
    for outer in faults:
        for inner_id in sorted(kinds_by_id()[outer.kind].masks):
            inner = kinds_by_id().get(inner_id)
            if inner is None:
                continue
            rng = random.Random(f"catalogue:pair:{outer.kind}:{inner_id}:{spec.name}")
            hidden = draw_masked(rng, spec, outer, inner)
            if hidden is not None:
                out.append((outer, hidden))
    return out


def kinds_by_id() -> dict[str, FaultKind]:
    return {k.id: k for k in kinds(benign=None)}


def _row(proof: Proof, family: str) -> dict[str, Any]:
    key = f"{proof.kind}@{family}"
    return {
        f"{key}_ok": proof.ok,
        f"{key}_observable": proof.observable,
        f"{key}_symptoms": ",".join(proof.symptoms.get("classes", [])),
        f"{key}_evidence_ok": proof.evidence_ok,
        f"{key}_restored": proof.restored,
        f"{key}_s": proof.seconds.get("total_s"),
    }


def _why(proof: Proof, family: str) -> str:
    """One line on what failed (the full proof is in the run's output)."""
    parts = [f"{proof.kind}@{family}"]
    if proof.error:
        parts.append(f"error: {proof.error}")
    if proof.observable == proof.benign:
        parts.append("benign anomaly shows symptoms" if proof.benign else "not observable")
    parts += [f"evidence failed: {e['command']}" for e in proof.evidence if not e["matched"]]
    parts += [f"fix failed: {f['command']}" for f in proof.fix if not f["ok"]]
    if not proof.restored:
        parts.append(f"not restored: {proof.symptoms.get('left')}")
    return "; ".join(parts)


def run_catalogue() -> dict[str, Any]:
    families = os.environ.get("NETGAUGE_BENCH_CATALOGUE_FAMILIES", ",".join(FAMILIES))
    prefixes = tuple(os.environ.get("NETGAUGE_BENCH_CATALOGUE_KINDS", "").split(",")) or ("",)
    chosen = [k for k in kinds(benign=None) if k.id.startswith(prefixes)]
    labs, missing = plan(chosen, families.split(","))
    figures: dict[str, Any] = {"load_before": round(os.getloadavg()[0], 1), "no_place": missing}
    failures, pairs_ok, pairs = [], 0, 0
    started = time.perf_counter()
    for name, (spec, faults) in labs.items():
        with ProofLab(spec) as lab:
            figures[f"lab_{name}_up_s"] = lab.timings["up_s"]
            print(f"  {name}: up in {lab.timings['up_s']} s, {len(faults)} kinds", flush=True)
            for fault in faults:
                proof = lab.prove(fault)
                figures.update(_row(proof, spec.family))
                print(f"    {fault.kind}: ok={proof.ok} observable={proof.observable} "
                      f"{proof.symptoms.get('classes')} {proof.seconds.get('total_s')} s",
                      flush=True)  # fmt: skip
                if not proof.ok:
                    failures.append(_why(proof, spec.family))
            if os.environ.get("NETGAUGE_BENCH_CATALOGUE_PAIRS", "1") != "0":
                for outer, inner in _pairs(spec, [f for f in faults if not f.benign]):
                    row = lab.prove_pair(outer, inner)
                    pairs, pairs_ok = pairs + 1, pairs_ok + row["ok"]
                    figures[f"pair_{outer.kind}+{inner.kind}@{spec.family}_ok"] = row["ok"]
                    print(f"    pair {outer.kind} over {inner.kind}: ok={row['ok']}", flush=True)
                    if not row["ok"]:
                        failures.append(f"pair {outer.kind} over {inner.kind}@{spec.family}")
    proofs = [k for k in figures if k.endswith("_ok") and not k.startswith("pair_")]
    figures.update(
        kinds_proved=sum(bool(figures[k]) for k in proofs),
        kind_families=len(proofs),
        pairs_proved=pairs_ok,
        pairs=pairs,
        total_s=round(time.perf_counter() - started, 1),
        load_after=round(os.getloadavg()[0], 1),
        failures=failures,
    )
    return figures
