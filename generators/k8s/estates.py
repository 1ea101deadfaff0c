"""What drawing the queries of levels 6-8 needs of each estate, computed once per estate
(compose.py draws with it): its evaluator, its faults by kind, what each fault alone
mismatches, its benign anomalies, and at level 8 its stray faults and decoys (strays.py).
"""

from __future__ import annotations

from generators.k8s import benign as benign_module
from generators.k8s import strays
from generators.k8s.benign import Benign
from generators.k8s.catalogue import Fault
from generators.k8s.catalogue_objects import singles
from generators.k8s.clusters import ClusterSpec
from generators.k8s.overlay import StateEvaluator
from generators.k8s.variety import place


class Estates:
    """What drawing on each estate needs, computed once per estate: its evaluator, its
    faults by kind, what each fault alone mismatches, its benign anomalies."""

    def __init__(self, shared: Estates | None = None, strays: bool = False) -> None:
        self.strays = strays  # k8s.policy_extra among the faults, decoys offered (level 8)
        # what does not depend on `strays` is shared with the estates it was made from
        self._ev: dict[str, StateEvaluator] = shared._ev if shared else {}
        self._benign: dict[str, list[Benign]] = shared._benign if shared else {}
        self._wrong: dict[tuple[str, str], frozenset[str]] = shared._wrong if shared else {}
        self._singles: dict[str, list[Fault]] = {}
        self._kinds: dict[str, dict[str, list[Fault]]] = {}
        self._by_probe: dict[str, dict[str, list[Fault]]] = {}
        self._closing: dict[str, frozenset[str]] = {}
        self._decoys: dict[str, list[Benign]] = {}
        self._with_strays: Estates | None = None

    def with_strays(self) -> Estates:
        """These estates with the strays of level 8 (strays.py), made once."""
        if self.strays:
            return self
        if self._with_strays is None:
            self._with_strays = Estates(self, strays=True)
        return self._with_strays

    def evaluator(self, spec: ClusterSpec) -> StateEvaluator:
        if spec.env_key not in self._ev:
            self._ev[spec.env_key] = StateEvaluator(spec)
        return self._ev[spec.env_key]

    def faults(self, spec: ClusterSpec) -> list[Fault]:
        if spec.env_key not in self._singles:
            found = singles(spec)
            if self.strays:
                found += strays.stray_faults(spec.estate)
            self._singles[spec.env_key] = found
        return self._singles[spec.env_key]

    def decoys(self, spec: ClusterSpec) -> list[Benign]:
        """The decoy policies of an estate no probe sees (none without strays)."""
        if not self.strays:
            return []
        if spec.env_key not in self._decoys:
            ev = self.evaluator(spec)
            self._decoys[spec.env_key] = [
                d for d in strays.decoys(spec.estate) if not ev.mismatches({}, d.overlay)
            ]
        return self._decoys[spec.env_key]

    def by_kind(self, spec: ClusterSpec) -> dict[str, list[Fault]]:
        if spec.env_key not in self._kinds:
            found: dict[str, list[Fault]] = {}
            for fault in self.faults(spec):
                found.setdefault(fault.kind, []).append(fault)
            self._kinds[spec.env_key] = found
        return self._kinds[spec.env_key]

    def benign(self, spec: ClusterSpec) -> list[Benign]:
        if spec.env_key not in self._benign:
            ev = self.evaluator(spec)
            self._benign[spec.env_key] = benign_module.observable(ev, benign_module.anomalies(spec))
        return self._benign[spec.env_key]

    def wrong(self, spec: ClusterSpec, fault: Fault) -> frozenset[str]:
        """What `fault` alone mismatches on the intended estate (no anomalies)."""
        key = (spec.env_key, fault.id)
        if key not in self._wrong:
            self._wrong[key] = frozenset(self.evaluator(spec).mismatches({}, fault.overlay))
        return self._wrong[key]

    def by_probe(self, spec: ClusterSpec) -> dict[str, list[Fault]]:
        """Probe key -> the faults that alone make it mismatch (evaluates every fault of
        the estate once: about 1 ms each, 1-3 s an estate)."""
        if spec.env_key not in self._by_probe:
            index: dict[str, list[Fault]] = {}
            for fault in self.faults(spec):
                for probe in self.wrong(spec, fault):
                    index.setdefault(probe, []).append(fault)
            self._by_probe[spec.env_key] = index
        return self._by_probe[spec.env_key]

    def closing(self, spec: ClusterSpec) -> frozenset[str]:
        """The variety keys of the faults that only open what must stay closed."""
        if spec.env_key not in self._closing:
            self._closing[spec.env_key] = frozenset(
                place(spec.size, f) for f in self.faults(spec) if self.closed_only(spec, f)
            )
        return self._closing[spec.env_key]

    def closed_only(self, spec: ClusterSpec, fault: Fault) -> bool:
        """Whether `fault` alone only opens what must stay closed."""
        wrong = self.wrong(spec, fault)
        expected = self.evaluator(spec).expected
        return bool(wrong) and not any(expected[k] for k in wrong)
