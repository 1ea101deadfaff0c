"""Routing observations as changes: the reachability matrix replaced by what changed.

Every routing observation ends with the whole reachability matrix (Mininet's pingall
layout, emulators.base.Reachability.render). For an LLM agent whose context policy is
`changes` (agent.context.observations), `changes(previous, current)` rewrites `current`
with its matrix replaced by the pairs that became reachable and those that stopped being
reachable since `previous`, one line per source, and the pingall results line:

    *** Changes since the last observation: 2 pairs now reply, 0 stopped
    now reachable: h1_1 -> h2_1 h2_2
    *** Results: 33% dropped (8/12 received)

Everything else of the observation (the command and its output, the turn count) stays.
The matrix read is the last one in each text (a command's output comes before it). None
when either text holds no matrix, the devices differ, or the change would not be shorter.
"""

from __future__ import annotations

from emulators.base import PINGALL, Reachability


def _matrix(text: str) -> tuple[int, int, Reachability] | None:
    """(start, end, matrix) of the last rendered matrix in `text`, or None."""
    start = text.rfind(PINGALL)
    if start == -1:
        return None
    results = text.find("*** Results:", start)
    if results == -1:
        return None
    end = text.find("\n", results)
    end = len(text) if end == -1 else end
    try:
        return start, end, Reachability.parse(text[start:end])
    except ValueError:
        return None


def _by_source(pairs: list[tuple[str, str]]) -> list[str]:
    targets: dict[str, list[str]] = {}
    for source, target in pairs:
        targets.setdefault(source, []).append(target)
    return [f"{source} -> {' '.join(found)}" for source, found in targets.items()]


def changes(previous: str, current: str) -> str | None:
    """`current` with its matrix shown as the changes since `previous`'s (see above)."""
    before, now = _matrix(previous), _matrix(current)
    if before is None or now is None or before[2].devices != now[2].devices:
        return None
    start, end, matrix = now
    gained = sorted(matrix.ok - before[2].ok)
    lost = sorted(before[2].ok - matrix.ok)
    lines = [
        f"*** Changes since the last observation: {len(gained)} pairs now reply, "
        f"{len(lost)} stopped"
    ]
    lines += [f"now reachable: {line}" for line in _by_source(gained)]
    lines += [f"no longer reachable: {line}" for line in _by_source(lost)]
    lines.append(matrix.results_line())
    shown = "\n".join(lines)
    if len(shown) >= end - start:
        return None
    return current[:start] + shown + current[end:]
