"""The analytic half of a coupled-constraint query's oracle check (levels 6-8): whether a
drawn task is kept, and an optimal plan made on an index.View.

A task is kept when it has a plan, its exact search fits the budget (coupled.BUDGET) and
every greedy rule fails on it (coupledgreedy.defeated). The plan applied is the exact
search's (coupled.optimum); `order=-1` makes it try equal choices the other way round,
which gives another optimal plan where there is one (tests use it). Ports a switch takes
are added in ascending speed, numbered on from its highest port.
"""

from __future__ import annotations

from typing import Any

from generators.malt import schema as S
from generators.malt.coupled import CoverTask, FillTask, PackTask, Plan, solve
from generators.malt.coupledgreedy import defeated
from generators.malt.coupledspec import DRAINS, KINDS, drained, task_of
from generators.malt.coupledtransport import TransportTask
from generators.malt.index import Redraw, View
from generators.malt.planbase import port_number

Spec = dict[str, Any]


def is_coupled(spec: Spec) -> bool:
    return spec.get("op") in KINDS


def rejected(spec: Spec, base: Any) -> str | None:
    """Why a drawn task is not kept (None: it is); `base` is the base graph's
    planbase.Base or index.TopoIndex."""
    try:
        found = defeated(task_of(spec, base))
    except OverflowError:
        return "the exact search is larger than the budget"
    return found if isinstance(found, str) else None


class _Adder:
    """Next port numbers of switches while a plan adds ports to a View."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.next: dict[str, int] = {}

    def add(self, switch: str, speed: int) -> None:
        if switch not in self.next:
            ports = self.view.members(switch, S.EK_PORT) if self.view.exists(switch) else []
            self.next[switch] = max((port_number(p) for p in ports), default=0) + 1
        name = f"{switch}.p{self.next[switch]}"
        self.view.add(name, S.port_attrs(name, speed), switch)
        self.next[switch] += 1


def apply(spec: Spec, view: View, order: int = 1) -> None:
    """Apply an optimal plan of `spec` to `view`, a View of the unchanged base (raises
    Redraw when there is none)."""
    task = task_of(spec, view)
    try:
        found = solve(task, order)
    except OverflowError as exc:
        raise Redraw("the exact search is larger than the budget") from exc
    if found is None:
        raise Redraw("no plan meets every rule")
    realize(spec, task, found[1], view)


def realize(spec: Spec, task: Any, plan: Plan, view: View) -> None:
    """Make `plan` (any plan for `task`, e.g. a greedy rule's) on `view`."""
    _APPLY[type(task)](spec, task, plan, view)


def _add_vectors(view: View, plan: Plan, types: tuple[int, ...]) -> None:
    adder = _Adder(view)
    for switch, vector in sorted(plan.items()):
        for speed, count in zip(types, vector, strict=True):
            for _ in range(count):
                adder.add(switch, speed)


def _apply_pack(spec: Spec, task: PackTask | TransportTask, plan: Plan, view: View) -> None:
    _add_vectors(view, plan, task.types)
    if spec["op"] in DRAINS:
        for switch in drained(spec):
            view.remove(switch)


def _apply_cover(spec: Spec, task: CoverTask, plan: Plan, view: View) -> None:
    for port, speed in sorted(plan.items()):
        view.set_attr(port, S.A_CAPACITY, speed)


def _apply_fill(spec: Spec, task: FillTask, plan: Plan, view: View) -> None:
    for name in task.names:
        if name in plan:
            view.add(name, S.switch_attrs(name, task.stage), task.block)
    _add_vectors(view, plan, tuple(s for s, _, _ in task.optics))


_APPLY = {
    PackTask: _apply_pack,
    CoverTask: _apply_cover,
    FillTask: _apply_fill,
    TransportTask: _apply_pack,  # the ports each receiver takes, then the drained removed
}
