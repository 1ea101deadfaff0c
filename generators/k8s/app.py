"""`K8sApp`: NetworkPolicy troubleshooting behind pipeline.core.App.

One environment = one emulated cluster (emulators/k8s) brought up once; each episode
resets it to the intended objects with the query's faulted policies, checks that the
real packets show exactly the query's mismatches, then runs one kubectl command per turn.
Each step's evidence records the command, how it ended and the mismatching pairs after
it, which is all `score` needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from emulators.k8s.kubectl import Refused, check, parse
from emulators.k8s.policy import mismatches
from generators.k8s import APP_VERSION, boutique, scoring
from generators.k8s.config import K8sConfig, validate_config
from generators.k8s.generator import K8sQueryGenerator
from generators.k8s.prompt import report
from generators.k8s.reply import FEW_SHOT, K8sReplyFormat, ReplyError, parse_reply
from pipeline.core import Query, StepResult, StepStatus, Verdict
from pipeline.errors import DataError, EnvironmentFailure

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

    def _evidence(self, after: list[str], **facts: Any) -> dict[str, Any]:
        return {
            **facts,
            "mismatches_before": self._before,
            "mismatches_after": after,
            "probed": len(self._expected),
        }

    def step(self, reply: str) -> StepResult:
        self._turn += 1
        last_turn = self._turn >= self.max_turns
        try:
            sent = parse_reply(reply)
        except ReplyError as err:
            return StepResult(
                "",
                StepStatus.PARSE_ERROR,
                str(err),
                self._evidence(self._before),
                done=last_turn,
                error=str(err),
            )
        try:
            cmd = parse(sent.command, sent.stdin, sent.files)
            check(cmd)
        except Refused as err:
            reason = f"refused: {err}"
            return StepResult(
                sent.command,
                StepStatus.BLOCKED,
                reason,
                self._evidence(self._before, refused=str(err)),
                done=last_turn,
                error=reason,
            )
        result = self._cluster.kubectl(cmd)
        actual = {k: ok for k, (ok, _) in self._cluster.probe().items()}
        after = mismatches(self._expected, actual)
        evidence = self._evidence(after, command=cmd.text, exit_code=result.exit_code)
        self._before = after
        status = STATUS[result.status]
        output = (result.output or "(no output)") + "\n\n" + report(self._expected, after)
        error = None
        if status is not StepStatus.OK:
            error = (result.output.strip().splitlines() or [result.status])[-1][:300]
        return StepResult(
            cmd.text,
            status,
            output,
            evidence,
            done=not after or last_turn,
            error=error,
            exec_s=result.seconds,
        )


class K8sEnvironment:
    """The emulated cluster, from enter to exit."""

    def __init__(self, app: K8sApp) -> None:
        self._app = app
        self._cluster: Any = None

    def __enter__(self) -> K8sEnvironment:
        from emulators.k8s.cluster import EmulatedCluster  # only when episodes are played

        cfg = self._app.cfg
        self._cluster = EmulatedCluster(
            boutique.cluster_objects(),
            boutique.intended_policies(),
            timeout_s=cfg.kubectl_timeout_s,
            output_bytes=cfg.output_bytes,
        ).__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.close()

    @contextmanager
    def episode(self, query: Query) -> Iterator[K8sEpisode]:
        if self._cluster is None:
            raise EnvironmentFailure("K8sEnvironment.episode() called outside its `with` block")
        if query.env_key != self._app.generator().env_key:
            raise DataError(
                f"query {query.query_id} was generated for cluster {query.env_key!r}, but this "
                f"app version builds {self._app.generator().env_key!r}; regenerate the queries"
            )
        faulted = {p["metadata"]["name"]: p for p in query.ground_truth["policies"]}
        policies = [faulted.get(p["metadata"]["name"], p) for p in boutique.intended_policies()]
        self._cluster.reset(policies)
        actual = {k: ok for k, (ok, _) in self._cluster.probe().items()}
        found = mismatches(query.ground_truth["expected"], actual)
        if found != query.ground_truth["mismatches"]:
            raise EnvironmentFailure(
                f"{query.query_id}: the data plane shows mismatches {found}, the oracle "
                f"expects {query.ground_truth['mismatches']}"
            )
        yield K8sEpisode(query, self._cluster, self._app.cfg.max_turns)

    @property
    def cluster(self) -> Any:
        return self._cluster


class K8sApp:
    """Generator, environment, oracle and scorer of the k8s app, versioned together."""

    version = APP_VERSION
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

    def generator(self) -> K8sQueryGenerator:
        if self._generator is None:
            self._generator = K8sQueryGenerator(self.name, self.cfg.max_turns)
        return self._generator

    def generate(self, level: int, seed: int, count: int) -> Iterator[Query]:
        return self.generator().generate(level, seed, count)

    def environment(self) -> K8sEnvironment:
        return K8sEnvironment(self)

    def oracle_reply(self, query: Query, turn: int, observation: str) -> str:
        commands = query.ground_truth["oracle_commands"]
        command = commands[turn - 1] if turn <= len(commands) else "kubectl get networkpolicies"
        return json.dumps({"command": command})

    def score(self, query: Query, steps: Sequence[StepResult]) -> Verdict:
        return scoring.score(query, steps)
