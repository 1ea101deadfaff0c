"""Validated queries of levels 6-8 (tiers.py), for the three task kinds.

Query `index` of (level, seed) draws from its own stream (compose.draw), is keyed by what
it asks and hides (the task, the estate, the benign anomalies' and the faults' objects),
and is validated with the pure evaluator (compose.validate). Two caps keep a run varied
(the prefix property holds: query i depends only on the config, its stream and the
queries before it):

  - a draw whose variety stratum (size x each fault's kind@placement, or the anomalies of
    a healthy query) already holds 1 + floor(0.08 i) of the seed's queries 0..i-1 is
    drawn again (at most about 8 % of a long run per stratum);
  - no fault is drawn on a size x kind x placement (the issue's variety key, counted once
    per query) that max(4, 1 + floor(0.095 i)) of queries 0..i-1 hold already (at most
    9.5 % of a run of 40 or more), nor, but for a fault that only opens what must stay
    closed, on one of those faults' 12 keys within two of that (variety.py). Level 8 puts
    four faults in a query, one of them such a fault; uncapped, one key was in 22-24 % of
    its queries.

Detect query i is healthy by pipeline.api.healthy_query: exactly one of each pair of
indices, decided before its draws, so redraws keep its class.

The ground truth holds what the environment rebuilds the query's cluster from (`cluster`,
`objects`: the overlay of anomalies and faults), what the checks judge (`flips`: the
probes whose intended result the anomalies change from the estate's; `probes`, how many;
`benign_objects`: what no step may touch), the `mismatches` the faults make, the oracle's
`oracle` commands and `evidence` commands, and the answer's truth (`healthy`, `causes`).
At level 8 it also lists the query's `decoys` (strays.py): policies in `objects` that
change no probe, neither causes nor protected (the prompt says so); its query key holds
their ids, so levels 6 and 7 keep the keys they had.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from generators.k8s import estate as E
from generators.k8s import intent
from generators.k8s.catalogue import Fault
from generators.k8s.clusters import cluster_of
from generators.k8s.compose import Draw, draw, validate
from generators.k8s.estates import Estates
from generators.k8s.kinds import vocabulary
from generators.k8s.tiers import TIERS, Tier
from generators.k8s.variety import Tally, places
from pipeline.api import (
    ConfigError,
    KeyTracker,
    Query,
    healthy_query,
    query_id,
    query_key,
    query_rng,
    share_cap,
    stamp,
)

MAX_DRAWS = 400
CAP_SHARE = 0.08
PLACE_SHARE = 0.095
PLACE_MIN = 4  # the first queries of a level 8 run share the 12 keys of closing faults
ANSWER_TYPES = {"mitigate": "connectivity", "detect": "verdict", "localize": "causes"}


def query_places(query: Query) -> frozenset[str]:
    """The size x kind x placement of each of a query's faults (compose.places)."""
    gt = query.ground_truth
    return places(query.size, ((f["kind"], f["placement"]) for f in gt["faults"]))


def evidence(fault: Fault) -> str:
    """A read-only command whose output shows `fault` (what the oracle runs first)."""
    kind, ns, name = next(iter(sorted(fault.keys)))
    if fault.kind == "k8s.policy_wrong_namespace":
        return f"kubectl get networkpolicies -n {fault.device}"
    if kind == "NetworkPolicy":
        if fault.kind in ("k8s.policy_missing", "k8s.default_deny_missing"):
            return f"kubectl get networkpolicies -n {ns}"
        return f"kubectl get networkpolicy {name} -n {ns} -o yaml"
    if kind == "Namespace":
        return f"kubectl get namespace {name} --show-labels"
    if kind == "Pod":
        return f"kubectl get pod {name} -n {ns} --show-labels"
    return f"kubectl describe service {name} -n {ns}"


class TierGenerator:
    """Queries of levels 6-8 for one app config (task, optional size)."""

    def __init__(
        self,
        app_name: str,
        task: str,
        size: str | None = None,
        estate: int | None = None,
        output_bytes: int = 16384,
    ) -> None:
        self.app_name = app_name
        self.output_bytes = output_bytes  # what one command's output shows (the prompt says)
        self.task = task
        self.size = size
        self.estate = estate
        self.estates = Estates()

    def tier(self, level: int) -> Tier:
        if level not in TIERS:
            raise ConfigError(f"level {level} is not one of the k8s tiers {sorted(TIERS)}")
        return TIERS[level]

    def sizes(self, tier: Tier) -> tuple[str, ...]:
        if self.size is None:
            return tier.sizes
        if self.size not in E.SIZES:
            raise ConfigError(
                f"app.size={self.size} has no estates at level {tier.level}; levels 6-8 "
                f"run on {', '.join(E.SIZES)}"
            )
        return (self.size,)

    def generate(
        self, level: int, seed: int, count: int, *, allow_repeats: bool = False
    ) -> Iterator[Query]:
        tracker = KeyTracker(self.app_name, level, seed, allow_repeats=allow_repeats)
        strata: Counter[str] = Counter()
        placed = Tally(PLACE_SHARE, PLACE_MIN)
        for index in range(count):
            query = self.query(level, seed, index, tracker, strata, placed)
            strata[query.stratum] += 1
            placed.add(query_places(query))
            yield query

    def query(
        self,
        level: int,
        seed: int,
        index: int,
        tracker: KeyTracker | None = None,
        strata: Counter[str] | None = None,
        placed: Tally | None = None,
    ) -> Query:
        tier = self.tier(level)
        sizes = self.sizes(tier)
        tracker = tracker or KeyTracker(self.app_name, level, seed)
        strata = strata if strata is not None else Counter()
        placed = placed if placed is not None else Tally(PLACE_SHARE, PLACE_MIN)
        rng = query_rng(seed, level, index)
        cap = share_cap(index, CAP_SHARE)
        room = placed.room(index)
        healthy = self.task == "detect" and healthy_query(seed, level, index)

        def drawn() -> tuple[str, Draw] | str:
            got = draw(tier, self.task, rng, self.of(tier), sizes, self.estate, healthy, room)
            if isinstance(got, str):
                return got
            if strata[got.stratum] >= cap:
                return f"stratum {got.stratum} holds {cap} queries already"
            return self.key(got), got

        def build(got: Draw) -> Query | str:
            return self._query(tier, seed, index, got)

        taken = tracker.take(index, drawn, build, max_draws=MAX_DRAWS)
        return stamp(taken.value, taken)

    def of(self, tier: Tier) -> Estates:
        """The estates `tier` draws on (with strays at level 8)."""
        return self.estates.with_strays() if tier.strays else self.estates

    def draw_of(self, query: Query) -> Draw:
        """The draw a query of this generator was made of (its ground truth's ids)."""
        gt = query.ground_truth
        spec = cluster_of(gt)
        estates = self.of(self.tier(query.level))
        faults = {f.id: f for f in estates.faults(spec)}
        benign = {b.id: b for b in estates.benign(spec)}
        decoys = {d.id: d for d in estates.decoys(spec)}
        masking = tuple(gt["masking"]) if gt["masking"] else None
        return Draw(
            spec,
            tuple(benign[b["id"]] for b in gt["benign"]),
            tuple(faults[f["id"]] for f in gt["faults"]),
            masking,  # type: ignore[arg-type]
            tuple(decoys[d["id"]] for d in gt.get("decoys", ())),
        )

    def key(self, got: Draw) -> str:
        parts: list[Any] = [sorted(b.id for b in got.benign), sorted(f.id for f in got.faults)]
        if got.decoys:  # levels without strays keep their keys
            parts.append(sorted(d.id for d in got.decoys))
        return query_key("tier", self.task, got.spec.env_key, *parts)

    def _query(self, tier: Tier, seed: int, index: int, got: Draw) -> Query | str:
        ev = self.of(tier).evaluator(got.spec)
        checked = validate(got, ev, tier.turns // 2)
        if isinstance(checked, str):
            return checked
        intent_ = got.intent
        expected = ev.expected_for(intent_)
        wrong = checked["mismatches"]
        dns = ev.at_dns(got.state, wrong)
        looks = [evidence(f) for f in got.faults] or ["kubectl get networkpolicies -A"]
        if len(looks) + 1 > tier.turns // 2:
            return "the oracle's evidence does not fit in half the turns"
        report = ""
        if self.task == "mitigate" or (self.task == "localize" and tier.report == "list"):
            report = intent.observation(tier, expected, wrong, dns)
        elif self.task == "localize":
            report = intent.counts(expected, wrong, tier.report)
        es = got.spec.estate
        prompt = (
            intent.describe(es)
            + (intent.STRAYS if tier.strays else "")
            + intent.exceptions([b.note for b in got.benign])
            + "\n\n"
            + intent.task(self.task, tier, report, vocabulary(tier.strays), self.output_bytes)
        )
        gt: dict[str, Any] = {
            "cluster": got.spec.ref,
            "tier": tier.level,
            "benign": [b.describe() for b in got.benign],
            "benign_objects": [[list(k), o] for k, o in sorted(got.intent.items())],
            "faults": [f.describe() for f in got.faults],
            "masking": list(got.masking) if got.masking else None,
            **({"decoys": [d.describe() for d in got.decoys]} if tier.strays else {}),
            "objects": [[list(k), o] for k, o in sorted(got.state.items())],
            "flips": {k: v for k, v in sorted(expected.items()) if v != ev.expected[k]},
            "probes": len(ev.pairs),
            "mismatches": wrong,
            "blocked_at_dns": dns,
            "oracle": checked["oracle"],
            "evidence": looks,
            "healthy": not got.faults,
            "causes": [f.cause() for f in got.faults],
        }
        operation = "+".join(sorted({f.kind for f in got.faults})) or "healthy"
        return Query(
            query_id=query_id(self.app_name, tier.level, seed, index),
            app=self.app_name,
            level=tier.level,
            seed=seed,
            index=index,
            prompt=prompt,
            answer_type=ANSWER_TYPES[self.task],
            operation=operation,
            ground_truth=gt,
            env_key=got.spec.env_key,
            size=got.spec.size,
            task=self.task,
            stratum=got.stratum,
        )
