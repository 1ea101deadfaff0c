"""Levels 6-8 of the k8s app: what each tier draws, shows and allows.

    tier  sizes          faults (mitigate, localize)        benign  observation  turns  read
    6     medium, large  1-2 of any kind                    0       mismatches   20     256 KiB
    7     medium, large  3: one masks another               1       counts       30     384 KiB
    8     xlarge         4 in >= 3 namespaces: a masking    1-2     one count    30     320 KiB
                         pair, one that only opens; 2-3 decoy policies (strays.py) and
                         k8s.policy_extra among the kinds

Detect draws half of its queries healthy (benign anomalies only) and half with 1 (level
6) or 1-2 faults (levels 7, 8), half of those from kinds that only open what must stay
closed; every detect query has 1-3 benign anomalies, so their presence says nothing
(and healthy queries, which differ only by them and the estate, are numerous enough).
Budgets: the episode's turns and the bytes it may read (`read_budget`); the oracle fits
in half of both. Every tier's agent may run the exec probe (emulators/k8s/execprobe.py).
"""

from __future__ import annotations

from dataclasses import dataclass

LEVELS = (6, 7, 8)
DETECT_BENIGN = (1, 2, 3)
DECOYS = (2, 3)  # decoy policies of a query of a tier with strays, every task


@dataclass(frozen=True)
class Tier:
    level: int
    sizes: tuple[str, ...]
    faults: tuple[int, ...]  # fault counts a mitigate or localize query may have
    masking: bool  # one fault masks another (proven per query)
    min_namespaces: int  # namespaces the faults' components span at least
    benign: tuple[int, ...]  # benign anomaly counts (mitigate, localize)
    report: str  # "list" | "counts" | "count"
    turns: int
    read_kib: int
    detect_faults: tuple[int, ...]  # fault counts of a detect query that is not healthy
    strays: bool = False  # k8s.policy_extra offered, 2-3 decoy policies in every query

    @property
    def read_budget(self) -> int:
        return self.read_kib << 10

    def benign_for(self, task: str) -> tuple[int, ...]:
        """Detect draws 1-3 anomalies at every tier: healthy queries differ only by them
        (and by the estate), so a tier holds enough distinct healthy ones."""
        return DETECT_BENIGN if task == "detect" else self.benign


TIERS = {
    6: Tier(6, ("medium", "large"), (1, 2), False, 1, (0,), "list", 20, 256, (1,)),
    7: Tier(7, ("medium", "large"), (3,), True, 1, (1,), "counts", 30, 384, (1, 2)),
    8: Tier(8, ("xlarge",), (4,), True, 3, (1, 2), "count", 30, 320, (1, 2), True),
}
