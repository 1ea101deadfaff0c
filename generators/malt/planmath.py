"""The optimal values behind MALT's capacity-planning queries (levels 4 and 5).

Pure functions on counts and capacities, shared by the drawer (which picks binding
constraints), the analytic solver and the plan checker (which holds every answer to the
optimum, not to one plan). Tests compare each with an exhaustive search on small cases.

- `water_level`: moving n ports onto switches holding `counts` ports, the least L such
  that no receiving switch need end above L (the drain's balance).
- `best_gains`: with at most `per_switch` upgraded ports per switch, the largest total
  gain of k upgrades is the sum of the k largest of each switch's `per_switch` best gains
  (a partition matroid: greedy is optimal), so `fewest_upgrades` is the least k reaching
  the deficit.
- `raise_level`: placing n ports of one capacity over blocks with room for `slots` each,
  the largest possible lowest block total, every block counted (raise the weakest).
- `budget_room`: how many ports of one capacity fit under a per-block budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def water_level(counts: Sequence[int], n: int) -> int | None:
    """The least L with sum(max(0, L - c)) >= n over `counts`; None without switches."""
    if n <= 0:
        return min(counts, default=0)
    if not counts:
        return None
    level = min(counts)
    while sum(max(0, level - c) for c in counts) < n:
        level += 1
    return level


def best_gains(gains: Mapping[str, Sequence[int]], per_switch: int) -> list[int]:
    """The gains of the best upgrades in order, at most `per_switch` per switch."""
    kept = [g for own in gains.values() for g in sorted(own, reverse=True)[:per_switch]]
    return sorted((g for g in kept if g > 0), reverse=True)


def fewest_upgrades(
    gains: Mapping[str, Sequence[int]], per_switch: int, deficit: int
) -> int | None:
    """The least number of upgrades whose gains reach `deficit` (None: none do)."""
    if deficit <= 0:
        return 0
    total = 0
    for k, gain in enumerate(best_gains(gains, per_switch), 1):
        total += gain
        if total >= deficit:
            return k
    return None


def budget_room(cap: int, slots: int, unit: int, budget: int) -> int:
    """Ports of `unit` bps a block of total `cap` with room for `slots` takes under
    `budget` (0 when it is at or over the budget already)."""
    if cap >= budget:
        return 0
    return min(slots, (budget - cap) // unit)


def raise_level(caps: Sequence[int], slots: Sequence[int], n: int, unit: int) -> int | None:
    """The largest possible lowest block total after placing n ports of `unit` bps, block
    b taking at most slots[b]; None when the blocks cannot take n. Ports a level needs
    below it are placed first; the rest fit anywhere there is room."""
    if sum(slots) < n or not caps:
        return None
    best = min(caps)
    for level in sorted(
        {c + j * unit for c, s in zip(caps, slots, strict=True) for j in range(s + 1)}
    ):
        need = [max(0, ceil_div(level - c, unit)) for c in caps]
        if all(k <= s for k, s in zip(need, slots, strict=True)) and sum(need) <= n:
            best = max(best, level)
    return best
