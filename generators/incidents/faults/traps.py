"""Order traps (make-before-break): a fault that keeps traffic off a broken element.

A kind's `shields` names kinds whose fault it keeps traffic away from when both sit on the
same element: a steerer T (`ospf.max_metric`: a transit router made a stub, so a path
intent goes round it) and a data-plane fault A on the element T steers off, which no
routing protocol sees (`dataplane.ip_forward_disabled` on that router: OSPF stays Full,
the router drops what it should forward). With both in, T's symptom shows (the path
intent fails); fixing T first moves live traffic onto the broken element and breaks checks
that held (an unsafe step), while fixing A first (its evidence is in state an agent reads:
`sysctl net.ipv4.ip_forward`) and T then breaks nothing. The oracle fixes A before T
(validate.py: `_order`); whether the pair is a trap on its lab (T's fix alone breaks a
check that held) is proven live per query (validate.py: `_traps`), never assumed.

`draw_trap` draws the shielded fault on the element of a drawn steerer; any device (the
steerer's own router is the usual place: it is the element the traffic avoids).
"""

from __future__ import annotations

import random

from generators.incidents.faults.kinds import Fault, FaultKind, Taken, kind
from generators.incidents.faults.masking import onto
from generators.netlab.spec import NetSpec

TRIES = 64  # a router-wide kind picks its router through one of the lab's LANs


def shelters(steerer: Fault, shielded: Fault) -> bool:
    """Whether `steerer` keeps traffic off `shielded`'s element (an order trap)."""
    return shielded.kind in kind(steerer.kind).shields and bool(
        steerer.elements & shielded.elements
    )


def draw_trap(
    rng: random.Random,
    spec: NetSpec,
    steerer: Fault,
    shielded: FaultKind,
    taken: Taken | None = None,
) -> Fault | None:
    """A fault of `shielded` on `steerer`'s element, free of what `taken` holds besides;
    None when the lab offers none within TRIES draws (pure: same rng, same fault)."""
    if shielded.id not in kind(steerer.kind).shields:
        return None
    # a kind that honours `blocked` lands on the steerer's element; the others are retried
    blocked = onto(spec, steerer, taken)
    others = set(taken.elements if taken else ()) - steerer.elements
    for _ in range(TRIES):
        fault = shielded.draw(rng, spec, blocked)
        if fault is None:
            continue
        if fault.elements & steerer.elements and not (fault.elements - steerer.elements) & others:
            return fault
    return None
