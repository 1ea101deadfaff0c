"""Seeded faults injected into the intended policies, and the oracle's repair of them.

Five kinds, abbreviated as in NetArena's level table, each a family of NetworkPolicy
mistakes people make (the `variant` of a fault):

  RI remove_ingress: a caller loses access. The peer or the whole rule is gone; the
     peer's label is misspelt or uses another key (`name:` for `app:`); the peer gained
     a namespaceSelector that does not select `default` (`name: default` is a label
     namespaces do not carry); the peer is the caller's Service IP or the Service CIDR
     (policies see pod IPs); the allow-all rule of frontend admits one workload only.
  AI add_ingress: an unintended source gains access: one more peer (by label, by pod IP,
     or in a matchExpressions `In` list), or a peer that admits everyone (`podSelector:
     {}`, `namespaceSelector: {}`, the pod CIDR, `app Exists`, the whole namespace).
  CP change_port: the allowed port is wrong: another number (another service's, off by
     one, the Service port instead of the container port, a typo: two digits swapped or
     one dropped), a port name the pod does not have, or an endPort range that misses it.
  CPR change_protocol: TCP becomes UDP or SCTP: on the port, on the named port, as a
     UDP+SCTP pair, as a UDP/SCTP range, for one caller of a rule split per caller, on
     frontend's allow-all rule, on a workload's egress, or on one callee's rule of an
     egress locked down to DNS and the callees.
  AE add_egress: a workload's egress is restricted: to one peer (which also cuts DNS),
     to its callees without DNS, to DNS and its callees but one, with a broken DNS rule
     (no namespaceSelector, TCP only, a `name:` label), or to a callee's Service port.

`candidates(kind, policies)` lists every fault of a kind the current policies admit, in
a fixed order (the families are in mistakes.py); a draw picks one uniformly (`inject`),
and the capacity enumeration (capacity.py) walks the same lists. Each fault acts on the
policies as earlier faults of the same query left them. That is Online Boutique (levels
1-3); on a generated application the same five kinds are the families of hardened.py
(namespaceSelectors, ipBlocks with `except`, named ports, egress locked down), each fault
on its own policy (singles.py).

Levels: NetArena's table for 1-3; level 4 is three faults of different kinds, level 5
four, in two namespaces at least. `combos(level, faults)` is what `app.faults` leaves.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from generators.k8s.boutique import BY_NAME
from generators.k8s.mistakes import (
    Candidate,
    Fault,
    Policies,
    add_egress,
    add_ingress,
    change_port,
    change_protocol,
    remove_ingress,
)

ABBREVIATIONS = {
    "RI": "remove_ingress",
    "AI": "add_ingress",
    "CP": "change_port",
    "CPR": "change_protocol",
    "AE": "add_egress",
}
KINDS = tuple(ABBREVIATIONS)  # canonical order of the abbreviations
FAULT_TYPES = tuple(ABBREVIATIONS.values())  # what `app.faults` lists
LEVELS: dict[int, list[tuple[str, ...]]] = {
    1: [("RI",), ("AI",), ("CP",), ("CPR",), ("AE",)],
    2: [("RI", "AI"), ("RI", "CP"), ("RI", "CPR"), ("AI", "CP"), ("AI", "CPR"), ("CP", "CPR")],
    3: [("CP", "AE"), ("CPR", "AE"), ("RI", "AE"), ("AI", "AE")],
    # Three and four faults of different kinds, each on its own workload's policy, in a
    # generated multi-namespace application (level 5: in two namespaces at least).
    4: list(itertools.combinations(KINDS, 3)),
    5: list(itertools.combinations(KINDS, 4)),
}
MIN_NAMESPACES = {5: 2}  # namespaces the faulted policies of a level's queries span


def combos(level: int, faults: Sequence[str] | None = None) -> list[tuple[str, ...]]:
    """The fault combinations of `level`, in order; with `faults` (long names), those made
    only of these types, or, when the level has none, every combination of its fault
    count drawn from them (repeats allowed, e.g. RI+RI+RI for remove_ingress at level 4)."""
    table = LEVELS[level]
    if faults is None:
        return list(table)
    chosen = [k for k in KINDS if ABBREVIATIONS[k] in set(faults)]
    kept = [c for c in table if set(c) <= set(chosen)]
    if kept:
        return kept
    return list(itertools.combinations_with_replacement(chosen, len(table[0])))


class NoCandidate(Exception):
    """No operand fits this fault in the current policies (the generator redraws)."""


CANDIDATES: dict[str, Callable[[Policies], list[Candidate]]] = {
    "remove_ingress": remove_ingress,
    "add_ingress": add_ingress,
    "change_port": change_port,
    "change_protocol": change_protocol,
    "add_egress": add_egress,
}


def candidates(kind: str, policies: Policies) -> list[Candidate]:
    """Every fault of `kind` ("RI", ... or its long name) the policies admit, in order."""
    return CANDIDATES[ABBREVIATIONS.get(kind, kind)](policies)


def workload_policies(intended: list[dict[str, Any]]) -> Policies:
    """Copies of the workload policies by name (the default deny is never the fault)."""
    return {
        p["metadata"]["name"]: copy.deepcopy(p)
        for p in intended
        if p["metadata"]["name"] in BY_NAME
    }


def apply(policies: Policies, candidate: Candidate) -> Fault:
    fault, change = candidate
    change(policies[fault["policy"]]["spec"])
    return fault


def inject(intended: list[dict[str, Any]], combo: tuple[str, ...], rng: random.Random):
    """(faults, faulted policies by name, names touched) for one combination of faults,
    each drawn uniformly from the candidates the policies admit at that point."""
    policies = workload_policies(intended)
    faults = []
    for abbr in combo:
        options = candidates(abbr, policies)
        if not options:
            raise NoCandidate(f"no {ABBREVIATIONS[abbr]} fault fits the policies")
        faults.append(apply(policies, options[rng.randrange(len(options))]))
    touched = sorted({f["policy"] for f in faults})
    return faults, policies, touched


def repair_command(intended: dict[str, Any]) -> str:
    """The oracle's one command restoring a policy: a JSON patch replacing its spec."""
    patch = [{"op": "replace", "path": "/spec", "value": intended["spec"]}]
    text = json.dumps(patch, separators=(",", ":"), sort_keys=True)
    name, namespace = intended["metadata"]["name"], intended["metadata"]["namespace"]
    return f"kubectl patch networkpolicy {name} -n {namespace} --type=json -p {shlex.quote(text)}"
