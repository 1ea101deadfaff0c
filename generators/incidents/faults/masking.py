"""Masking pairs of the OSPF and BGP kinds: a second fault drawn on the first one's element.

A kind's `masks` names kinds it can hide when both sit on the same element (a hop, a
session, a prefix): fixing the first reveals the second. `draw_masked` draws the hidden one
on the element of a drawn `outer` fault and at the other end (another device), so that
each fault has its own deviating end and the two injections never touch the same
configuration: any pair it returns can be injected together. Whether the pair really masks
(the app's proof per query: each alone breaks something, with both the inner one's own
signature is not visible, after the outer fix the network is still broken and shows it)
is for the app's generator to prove live; prove.py's `prove_pair` plays one.
"""

from __future__ import annotations

import random

from generators.incidents.faults.frr import universe
from generators.incidents.faults.kinds import Fault, FaultKind, Taken, kind
from generators.netlab.spec import NetSpec

TRIES = 16


def draw_masked(
    rng: random.Random, spec: NetSpec, outer: Fault, inner: FaultKind, taken: Taken | None = None
) -> Fault | None:
    """A fault of `inner` sharing an element with `outer`, on another device, free of what
    `taken` holds besides; None when the lab offers none (pure: same rng, same fault)."""
    if inner.id not in kind(outer.kind).masks:
        return None
    blocked = onto(spec, outer, taken)
    for _ in range(TRIES):
        fault = inner.draw(rng, spec, blocked)
        if fault is None:
            return None
        if fault.elements & outer.elements and fault.cause.device != outer.cause.device:
            return fault
    return None


def onto(spec: NetSpec, first: Fault, taken: Taken | None) -> Taken:
    """What a second draw must keep out of to land on `first`'s element: every other
    element of the same sorts (other links, sessions, prefixes, ...) and what `taken`
    holds besides `first`'s elements. Masking pairs and order traps (traps.py) draw so."""
    sorts = {e.split(":")[0] for e in first.elements}
    elsewhere = {e for e in universe(spec) if e.split(":")[0] in sorts}
    return Taken(elements=(elsewhere | set(taken.elements if taken else ())) - first.elements)
