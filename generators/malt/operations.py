"""The names MALT queries are labelled and selected by (`Query.operation`, `app.operations`).

Levels 1-3 label a query by the operations it composes: a category per operation
(`count`, `list`, `rank`, `table`, `find`, `remove`, `add`, `update`) joined by `>` (a
sequence), `if(a|b)`, `for(a)` or `for_if(a|b)`. Levels 4 to 8 are capacity-planning
templates, one label each; a label of level 5 and up joins the level-4 operation it
extends with what it adds (`drain_balance`: drain two switches, balanced;
`upgrade_knapsack`: upgrade at least cost).

`app.operations` selects queries by these names: a query is drawn when its label equals
one of the names or holds one as a token (the label split at `>`, `(`, `)`, `|`, `_`), so
`[add]` draws `add`, `add>count`, `for_if(update|add)`, ...; `[drain]` draws `drain` (L4)
and `drain_balance` (L5), and with them `drain_power_binpack` (L6) and `drain_blast_radius`
(L8); `[for_if]` the level-3 loops with a branch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

CATEGORIES = ("count", "list", "rank", "table", "find", "remove", "add", "update")
SHAPES = ("if", "for", "for_if")  # level-3 control flow
TEMPLATES: dict[int, tuple[str, ...]] = {
    4: ("drain", "expand", "place", "upgrade"),
    5: ("drain_balance", "expand_fill", "place_balance", "upgrade_superblock"),
    # Coupled constraints no greedy rule solves (coupledspec.py): one, two, three + goals.
    6: ("drain_power_binpack", "upgrade_knapsack"),
    7: ("place_two_stage", "shared_budget_two_blocks"),
    8: ("drain_blast_radius", "expand_lexicographic", "drain_min_cost"),
}
_SPLIT = re.compile(r"[>()|_]+")


def tokens(label: str) -> frozenset[str]:
    """The names a label holds: `for_if(update|add)` -> {for, if, update, add}."""
    return frozenset(t for t in _SPLIT.split(label) if t)


# Every name app.operations may hold: the categories, the templates and their tokens.
KNOWN = frozenset(CATEGORIES + SHAPES) | frozenset(
    name for names in TEMPLATES.values() for label in names for name in (label, *tokens(label))
)


def selects(operations: Sequence[str] | None, label: str) -> bool:
    """Whether `operations` (None: every operation) selects a query labelled `label`."""
    if operations is None:
        return True
    held = tokens(label)
    return any(name == label or name in held or label.startswith(f"{name}(") for name in operations)


def unknown(operations: Iterable[str]) -> list[str]:
    """The names of `operations` no MALT label holds."""
    return [name for name in operations if name not in KNOWN]
