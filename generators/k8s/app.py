"""`K8sApp`: NetworkPolicy troubleshooting behind pipeline.core.App.

One environment = the emulated clusters (emulators/k8s) of the applications its queries
run on (Online Boutique, generated ones, the estates of levels 6-8), each brought up when
first needed; each episode
resets its query's cluster to the intended objects with the faulted policies, checks that
the real packets show exactly the query's mismatches (and DNS failures), then runs one
kubectl command per turn. After every step, whatever became of the command (done,
failed, stopped at its time limit, refused, or a reply that did not parse), the data
plane is probed again and the step's evidence and report are what it measured: the
mismatching probes, which of them failed at DNS, and how many were probed. That is all
`score` needs. Levels 6-8 (tiers.py) play through episode6.TierEpisode, with the three
task kinds (mitigate, detect, localize).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from emulators.k8s.cluster import EmulatedCluster
from emulators.k8s.kubectl import Refused, check, parse
from generators.k8s import scoring
from generators.k8s.callgraph import SIZES
from generators.k8s.capacity import K8sCapacity, cached_capacity
from generators.k8s.clusters import ClusterSpec, boutique_cluster, cluster_of
from generators.k8s.config import MAX_TURNS, K8sConfig, validate_config
from generators.k8s.episode6 import TierEpisode
from generators.k8s.generator import K8sQueryGenerator
from generators.k8s.generator6 import TierGenerator
from generators.k8s.kinds import vocabulary
from generators.k8s.measure import measure
from generators.k8s.overlay import StateEvaluator
from generators.k8s.prompt import report
from generators.k8s.reply import (
    ACTION,
    FEW_SHOT,
    READ,
    READ_VERBS,
    K8sReplyFormat,
    ReplyError,
    parse_reply,
)
from generators.k8s.tier_app import check_tier_config, state_objects, tier_capacity, tier_oracle
from generators.k8s.tiers import TIERS
from pipeline.api import (
    Capacity,
    ConfigError,
    DataError,
    EnvironmentFailure,
    Query,
    StepResult,
    StepStatus,
    Verdict,
    Vocabulary,
    answer_verdict,
)

STATUS = {
    "ok": StepStatus.OK,
    "exec_error": StepStatus.EXEC_ERROR,
    "timeout": StepStatus.TIMEOUT,
    "resource_limit": StepStatus.RESOURCE_LIMIT,
}


class K8sEpisode:
    """One query played on the environment's cluster."""

    def __init__(self, query: Query, cluster: Any, max_turns: int) -> None:
        self.query = query
        self.max_turns = max_turns
        self._cluster = cluster
        self._expected: dict[str, bool] = query.ground_truth["expected"]
        self._before: list[str] = list(query.ground_truth["mismatches"])
        self._turn = 0

    def observe(self) -> str:
        return self.query.prompt

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        """`kubectl_read`: one read-only kubectl command, run like an action's (parsed,
        checked, jailed) but no step: no turn is used and the data plane is not probed."""
        if name != READ.name:
            return f"there is no diagnostic '{name[:100]}'; the one there is: {READ.name}(command)"
        line = arguments.get("command")
        if not isinstance(line, str) or not line.strip():
            return f'{READ.name} needs a "command" string, e.g. kubectl get networkpolicies'
        try:
            cmd = parse(line.strip())
            verb = check(cmd)
        except Refused as err:
            return f"refused: {err}"
        if verb not in READ_VERBS:
            return (
                f"refused: kubectl {verb} is not read-only; {READ.name} runs only "
                f"{', '.join(READ_VERBS)} (change the cluster with {ACTION.name})"
            )
        result = self._cluster.kubectl(cmd)
        return f"$ {cmd.text}\n{result.output.rstrip() or '(no output)'}"

    def _measured(self, **facts: Any) -> tuple[dict[str, Any], str, bool]:
        """(evidence, report, all match) of the data plane as it is now."""
        after, dns, probed = measure(self._cluster, self._expected)
        evidence = {
            **facts,
            "mismatches_before": self._before,
            "mismatches_after": after,
            "blocked_at_dns": dns,
            "probed": probed,
        }
        self._before = after
        return evidence, report(self._expected, after, dns), not after

    def step(self, reply: str) -> StepResult:
        self._turn += 1
        last_turn = self._turn >= self.max_turns
        try:
            sent = parse_reply(reply)
        except ReplyError as err:
            evidence, shown, _ = self._measured()
            return StepResult(
                "",
                StepStatus.PARSE_ERROR,
                f"{err}\n\n{shown}",
                evidence,
                done=last_turn,
                error=str(err),
            )
        try:
            cmd = parse(sent.command, sent.stdin, sent.files)
            check(cmd)
        except Refused as err:
            reason = f"refused: {err}"
            evidence, shown, _ = self._measured(refused=str(err))
            return StepResult(
                sent.command,
                StepStatus.BLOCKED,
                f"{reason}\n\n{shown}",
                evidence,
                done=last_turn,
                error=reason,
            )
        result = self._cluster.kubectl(cmd)
        evidence, shown, matched = self._measured(command=cmd.text, exit_code=result.exit_code)
        if result.server_errors:  # a bug of the server met by this command (see cluster.kubectl)
            evidence["server_errors"] = list(result.server_errors)
        status = STATUS[result.status]
        output = (result.output or "(no output)") + "\n\n" + shown
        error = None
        if status is not StepStatus.OK:
            error = (result.output.strip().splitlines() or [result.status])[-1][:300]
        return StepResult(
            cmd.text,
            status,
            output,
            evidence,
            done=matched or last_turn,
            error=error,
            exec_s=result.seconds,
        )


class K8sEnvironment:
    """The emulated clusters, from enter to exit: one per application the queries run on,
    built when first needed; the `max_live_clusters` most recently used stay up."""

    def __init__(self, app: K8sApp) -> None:
        self._app = app
        self._clusters: OrderedDict[str, Any] = OrderedDict()  # env key -> cluster
        self._evaluators: dict[str, StateEvaluator] = {}
        self._entered = False

    def __enter__(self) -> K8sEnvironment:
        self._entered = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._entered = False
        while self._clusters:
            _, cluster = self._clusters.popitem()
            cluster.close()

    def cluster_for(self, spec: ClusterSpec) -> Any:
        """The running cluster of `spec`, brought up (and the least recently used one
        stopped, past `max_live_clusters`) when it is not up."""
        if not self._entered:
            raise EnvironmentFailure("K8sEnvironment used outside its `with` block")
        if spec.env_key in self._clusters:
            self._clusters.move_to_end(spec.env_key)
            return self._clusters[spec.env_key]

        while len(self._clusters) >= self._app.cfg.max_live_clusters:
            _, old = self._clusters.popitem(last=False)
            old.close()
        cfg = self._app.cfg
        cluster = EmulatedCluster(
            spec.objects(),
            spec.intended(),
            timeout_s=cfg.kubectl_timeout_s,
            output_bytes=cfg.output_bytes,
            writable=spec.writable,
            exec_probe=spec.estate is not None,
        ).__enter__()
        self._clusters[spec.env_key] = cluster
        return cluster

    def evaluator(self, spec: ClusterSpec) -> StateEvaluator:
        """The pure evaluator of an estate (its probes' intended results), kept."""
        if spec.env_key not in self._evaluators:
            self._evaluators[spec.env_key] = StateEvaluator(spec)
        return self._evaluators[spec.env_key]

    @contextmanager
    def _tier_episode(self, query: Query) -> Iterator[TierEpisode]:
        gt = query.ground_truth
        spec = cluster_of(gt)
        if query.env_key != spec.env_key:
            raise DataError(
                f"query {query.query_id} was generated for cluster {query.env_key!r}, but this "
                f"app version builds {spec.env_key!r}; regenerate the queries"
            )
        cluster = self.cluster_for(spec)
        ev = self.evaluator(spec)
        if len(ev.pairs) != gt["probes"] or {p.key for p in cluster.pairs} != set(ev.expected):
            raise DataError(
                f"query {query.query_id} judges {gt['probes']} probes, but this app version "
                f"probes {len(cluster.pairs)}; regenerate the queries"
            )
        expected = {**ev.expected, **gt["flips"]}
        policies, objects = state_objects(spec, gt["objects"])
        cluster.reset(policies, objects)
        found, dns, _ = measure(cluster, expected)
        if (found, dns) != (gt["mismatches"], gt["blocked_at_dns"]):
            raise EnvironmentFailure(
                f"{query.query_id}: the data plane shows mismatches {found[:10]} (at DNS: "
                f"{dns[:10]}), the oracle expects {gt['mismatches'][:10]} (at DNS: "
                f"{gt['blocked_at_dns'][:10]})"
            )
        tier = TIERS[query.level]
        turns = self._app.cfg.max_turns or tier.turns
        cluster.store.read_only = query.read_only
        try:
            yield TierEpisode(query, cluster, expected, tier, turns)
        finally:
            cluster.store.read_only = False

    @contextmanager
    def episode(self, query: Query) -> Iterator[Any]:
        if query.level in TIERS:
            with self._tier_episode(query) as tier_episode:
                yield tier_episode
            return
        gt = query.ground_truth
        spec = cluster_of(gt)
        if query.env_key != spec.env_key:
            raise DataError(
                f"query {query.query_id} was generated for cluster {query.env_key!r}, but this "
                f"app version builds {spec.env_key!r}; regenerate the queries"
            )
        cluster = self.cluster_for(spec)
        probes = {p.key for p in cluster.pairs}
        if set(gt["expected"]) != probes or "blocked_at_dns" not in gt:
            raise DataError(
                f"query {query.query_id} judges {len(gt['expected'])} probes, but this app "
                f"version probes {len(probes)}; regenerate the queries"
            )
        faulted = {p["metadata"]["name"]: p for p in gt["policies"]}
        policies = [faulted.get(p["metadata"]["name"], p) for p in spec.intended()]
        cluster.reset(policies)
        found, dns, _ = measure(cluster, gt["expected"])  # levels 1-5
        if (found, dns) != (gt["mismatches"], gt["blocked_at_dns"]):
            raise EnvironmentFailure(
                f"{query.query_id}: the data plane shows mismatches {found} (at DNS: {dns}), "
                f"the oracle expects {gt['mismatches']} (at DNS: {gt['blocked_at_dns']})"
            )
        yield K8sEpisode(query, cluster, self._app.cfg.max_turns or MAX_TURNS)

    @property
    def cluster(self) -> Any:
        """The most recently used cluster (Online Boutique's, brought up, if none is)."""
        if not self._clusters:
            return self.cluster_for(boutique_cluster())
        return next(reversed(self._clusters.values()))


class K8sApp:
    """Generator, environment, oracle and scorer of the k8s app, versioned together."""

    reply_format = K8sReplyFormat()
    few_shot = FEW_SHOT

    def __init__(
        self, cfg: K8sConfig, cache_dir: Path | None = None, shared_data_dir: Path | None = None
    ) -> None:
        validate_config(cfg)
        self.cfg = cfg
        self.name = cfg.name
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._generator: K8sQueryGenerator | None = None
        self._tiers: TierGenerator | None = None
        self._counter: K8sCapacity | None = None

    def vocabulary(self, level: int) -> Vocabulary:
        """The fault kinds of levels 6-8 (kinds.py), the labels localize answers name."""
        return vocabulary(level in TIERS and TIERS[level].strays)

    def tier_generator(self) -> TierGenerator:
        if self._tiers is None:
            self._tiers = TierGenerator(
                self.name, self.cfg.task, self.cfg.size, self.cfg.estate, self.cfg.output_bytes
            )
        return self._tiers

    def generator(self) -> K8sQueryGenerator:
        if self._generator is None:
            self._generator = K8sQueryGenerator(
                self.name,
                self.cfg.max_turns or MAX_TURNS,
                self.capacity,
                faults=self.cfg.faults,
                size=self.cfg.size,
            )
        return self._generator

    def generate(
        self,
        level: int,
        seed: int,
        count: int,
        *,
        allow_repeats: bool = False,
        weights: Mapping[str, float] | None = None,
    ) -> Iterator[Query]:
        """`count` queries; `weights` (operation label -> weight) draws fault combinations
        by an earlier run's failures instead of in turn (pipeline/focus.py; levels 1-5)."""
        if level in TIERS:
            check_tier_config(self.cfg, level, weights)
            return self.tier_generator().generate(level, seed, count, allow_repeats=allow_repeats)
        if self.cfg.task != "mitigate":
            raise ConfigError(
                f"app.task={self.cfg.task} is offered at levels {', '.join(map(str, TIERS))}; "
                "levels 1-5 are mitigate only"
            )
        if self.cfg.estate is not None:
            raise ConfigError("app.estate pins the estate of levels 6-8; leave it null here")
        if self.cfg.size is not None and self.cfg.size not in SIZES:
            raise ConfigError(
                f"app.size={self.cfg.size} is a size of levels 6-8 only; levels 1-5 run on "
                f"{', '.join(SIZES)}"
            )
        return self.generator().generate(
            level, seed, count, allow_repeats=allow_repeats, weights=weights
        )

    def capacity(self, level: int) -> Capacity:
        """Distinct queries of `level` (generators/k8s/capacity.py), cached on disk."""
        if level in TIERS:
            return tier_capacity(level)
        if self._counter is None:
            self._counter = K8sCapacity(generator=self.generator())
        return cached_capacity(level, self._counter, self.cache_dir)

    def environment(self) -> K8sEnvironment:
        return K8sEnvironment(self)

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        if query.level in TIERS:
            return tier_oracle(query, turn)
        commands = query.ground_truth["oracle"]
        command = commands[turn - 1] if turn <= len(commands) else "kubectl get networkpolicies"
        return json.dumps({"command": command})

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        if query.task != "mitigate":
            safe = [not s.evidence.get("benign_touched") for s in steps]
            return answer_verdict(query, steps, safe)
        return scoring.score(query, steps)
