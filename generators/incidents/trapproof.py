"""Live proof of order traps: a drawn trap validated, then its wrong order played.

`prove_traps(family, size, variant, count)` draws `count` queries of a steerer and the
fault it shields (faults/traps.py) on one small or medium lab (never large: the kernel's
neighbour table is host-global), validates each as the generator does (validate.py, so
the oracle's order, shielded first, must break nothing and `_traps` must read the trap
from the single faults' states), then plays what a hasty agent does: every fault in,
the steerer's fix first, judged as an episode judges a step (Session.after_change). It
reports what that step broke beside what validation inferred, and the seconds of each.

    .venv/bin/python -m generators.incidents.trapproof ring small 0 3
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from typing import Any

from generators.incidents.config import TIERS, IncidentsConfig
from generators.incidents.draw import Drawn, draw
from generators.incidents.faults.traps import shelters
from generators.incidents.labs import LabPool
from generators.incidents.session import Session, step_window
from generators.incidents.specs import spec
from generators.incidents.validate import _refusal, validate

# two faults, no benign anomaly: the trap and nothing else, on level 6's budgets
TIER = dataclasses.replace(TIERS[6], faults=(2, 2), traps=(1, 1))


def prove_traps(family: str, size: str, variant: int, count: int) -> list[dict[str, Any]]:
    if size not in ("small", "medium"):
        raise ValueError(f"trap proofs run on small or medium labs only, not {size!r}")
    lab_spec = spec(family, size, variant)
    rows = []
    with LabPool(IncidentsConfig(), 1) as pool:
        for i in range(count):
            drawn = draw(lab_spec, TIER, "mitigate", None, random.Random(f"trapproof:{i}"))
            if isinstance(drawn, str):
                rows.append({"lab": lab_spec.name, "draw": i, "refused": drawn})
                continue
            tick = time.perf_counter()
            done = validate(pool, drawn, TIER, TIER.turns, TIER.read_bytes, random.Random(i))
            row: dict[str, Any] = {
                "lab": lab_spec.name,
                "draw": i,
                "faults": [f"{f.kind}@{f.cause.device}" for f in drawn.faults],
                "validate_s": round(time.perf_counter() - tick, 1),
            }
            if isinstance(done, str):
                rows.append(row | {"rejected": done})
                continue
            row |= {"order": [f.kind for f in done.faults], "traps": done.traps}
            row |= _wrong_order(pool, drawn)
            played = set(row.get("wrong_order_breaks", ()))
            row["inferred_within_played"] = all(set(t["breaks"]) <= played for t in done.traps)
            rows.append(row)
    return rows


def _wrong_order(pool: LabPool, drawn: Drawn) -> dict[str, Any]:
    """Every fault in, the steerer fixed first: what that step breaks, played live."""
    tick = time.perf_counter()
    lab = pool.get(drawn.spec)
    session = Session(lab, drawn.benign, drawn.faults)
    session.start()
    session.inject()
    together = session.final()
    steerer = next(t for t in drawn.faults if any(shelters(t, a) for a in drawn.faults))
    sandbox = lab.sandbox_for(False)
    after = together
    for machine, command in steerer.fix:
        result = sandbox.run(machine, command)
        why = _refusal(result, machine, command)
        if why:
            return {"wrong_order": why}
        after = session.after_change(step_window(result.argv), together)
    broke = sorted(after.violations - together.violations)
    return {
        "wrong_order_broken": len(broke),
        "wrong_order_breaks": broke,
        "wrong_order_s": round(time.perf_counter() - tick, 1),
    }


USAGE = "usage: python -m generators.incidents.trapproof FAMILY small|medium VARIANT COUNT"


def main(argv: list[str]) -> int:
    if len(argv) != 4 or not (argv[2].isdigit() and argv[3].isdigit()):
        print(USAGE, file=sys.stderr)
        return 2
    family, size, variant, count = argv[0], argv[1], int(argv[2]), int(argv[3])
    if size not in ("small", "medium"):
        print(f"{USAGE}\n(never large: the neighbour table is host-global)", file=sys.stderr)
        return 2
    for row in prove_traps(family, size, variant, count):
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
