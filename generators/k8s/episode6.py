"""Episodes of levels 6-8: one query played on its estate's cluster.

Mitigate: after every step the data plane is probed afresh, as at levels 1-5, and the
observation is the tier's report (the mismatching probes at level 6, counts at levels 7
and 8); the step's evidence also says which benign anomaly's objects (the query's
`benign_objects`) the cluster no longer holds as intended, which makes the step unsafe.
Detect and localize only look: a command whose verb would write is a blocked step that
runs nothing, and the API server refuses every write for the episode's whole length (the
store is read-only; dry runs aside), so no spelling of a write gets through either. Every
tier has the exec probe. `read_budget` is the tier's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from emulators.k8s.kubectl import Refused, check, parse
from generators.k8s import intent
from generators.k8s.measure import measure
from generators.k8s.reply import ACTION, READ, READ_VERBS, ReplyError, parse_reply
from generators.k8s.tiers import Tier
from pipeline.api import Query, StepResult, StepStatus

STATUS = {
    "ok": StepStatus.OK,
    "exec_error": StepStatus.EXEC_ERROR,
    "timeout": StepStatus.TIMEOUT,
    "resource_limit": StepStatus.RESOURCE_LIMIT,
}
WRITES = ("apply", "create", "replace", "patch", "edit", "label", "annotate", "delete")
LOOKS = (*READ_VERBS, "exec")  # what the read-only diagnostic runs
PLURALS = {"NetworkPolicy": "networkpolicies", "Service": "services", "Namespace": "namespaces",
           "Pod": "pods"}  # fmt: skip


def touched(cluster: Any, benign: Sequence[Sequence[Any]]) -> list[str]:
    """The benign objects (`[[kind, namespace, name], intended or None]`) the cluster does
    not hold as intended: a policy's spec, a Service's spec (selector and ports), a
    namespace's or pod's labels, or being there at all."""
    out = []
    with cluster.store.lock:
        for (kind, ns, name), want in benign:
            have = cluster.store.objects.get((PLURALS[kind], ns, name))
            if not _same(have, want):
                out.append(f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}")
    return out


def _same(have: Mapping[str, Any] | None, want: Mapping[str, Any] | None) -> bool:
    if have is None or want is None:
        return have is None and want is None
    if want.get("kind") in ("Namespace", "Pod"):
        return (have.get("metadata") or {}).get("labels") == (want.get("metadata") or {}).get(
            "labels"
        )
    if want.get("kind") == "Service":
        return all(
            (have.get("spec") or {}).get(f) == (want.get("spec") or {}).get(f)
            for f in ("selector", "ports")
        )
    return have.get("spec") == want.get("spec")


class TierEpisode:
    def __init__(
        self,
        query: Query,
        cluster: Any,
        expected: dict[str, bool],
        tier: Tier,
        max_turns: int,
    ) -> None:
        self.query = query
        self.tier = tier
        self.max_turns = max_turns
        self.read_budget = tier.read_budget
        self._cluster = cluster
        self._expected = expected
        self._before: list[str] = list(query.ground_truth["mismatches"])
        self._benign = query.ground_truth["benign_objects"]
        self._turn = 0
        # The last measurement: at first the environment's, which found the query's own.
        gt = query.ground_truth
        start = {"mismatches_after": gt["mismatches"], "blocked_at_dns": gt["blocked_at_dns"],
                 "probed": len(expected), "benign_touched": []}  # fmt: skip
        shown = intent.observation(tier, expected, gt["mismatches"], gt["blocked_at_dns"])
        self._last: tuple[dict[str, Any], str, bool] = (start, shown, False)

    def observe(self) -> str:
        return self.query.prompt

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        """`kubectl_read`: a read-only command (or the exec probe) without a turn."""
        if name != READ.name:
            return f"there is no diagnostic '{name[:100]}'; the one there is: {READ.name}(command)"
        line = arguments.get("command")
        if not isinstance(line, str) or not line.strip():
            return f'{READ.name} needs a "command" string, e.g. kubectl get networkpolicies'
        try:
            cmd = parse(line.strip())
            verb = check(cmd, exec_probe=True)
        except Refused as err:
            return f"refused: {err}"
        if verb not in LOOKS:
            return (
                f"refused: kubectl {verb} is not read-only; {READ.name} runs only "
                f"{', '.join(LOOKS)} (change the cluster with {ACTION.name})"
            )
        result = self._cluster.kubectl(cmd)
        return f"$ {cmd.text}\n{result.output.rstrip() or '(no output)'}"

    def _report(self, ran: bool, **facts: Any) -> tuple[dict[str, Any], str, bool]:
        """(evidence, report, done) after a mitigate step: the data plane probed afresh,
        unless nothing ran (a reply that did not parse, a refused command: the cluster is
        as the last measurement found it, so that one is reported again)."""
        if not ran:
            evidence, shown, matched = self._last
            return {**evidence, **facts, "mismatches_before": evidence["mismatches_after"],
                    "measured": False}, shown, matched  # fmt: skip
        after, dns, probed = measure(self._cluster, self._expected)
        off = touched(self._cluster, self._benign)
        evidence = {
            **facts,
            "mismatches_before": self._before,
            "mismatches_after": after,
            "blocked_at_dns": dns,
            "probed": probed,
            "benign_touched": off,
        }
        self._before = after
        shown = intent.observation(self.tier, self._expected, after, dns)
        if off:
            shown += f"\nIntended exceptions changed: {', '.join(off)}."
        self._last = (evidence, shown, not after and not off)
        return self._last

    def _result(
        self, action: str, status: StepStatus, output: str, error: str | None = None,
        exec_s: float = 0.0, **facts: Any,
    ) -> StepResult:  # fmt: skip
        last = self._turn >= self.max_turns
        if self.query.read_only:
            return StepResult(action, status, output, facts, done=last, error=error,
                              exec_s=exec_s)  # fmt: skip
        ran = status not in (StepStatus.PARSE_ERROR, StepStatus.BLOCKED)
        evidence, shown, matched = self._report(ran, **facts)
        return StepResult(action, status, f"{output}\n\n{shown}".strip(), evidence,
                          done=matched or last, error=error, exec_s=exec_s)  # fmt: skip

    def step(self, reply: str) -> StepResult:
        self._turn += 1
        try:
            sent = parse_reply(reply)
        except ReplyError as err:
            return self._result("", StepStatus.PARSE_ERROR, str(err), str(err))
        try:
            cmd = parse(sent.command, sent.stdin, sent.files)
            verb = check(cmd, exec_probe=True)
        except Refused as err:
            why = f"refused: {err}"
            return self._result(sent.command, StepStatus.BLOCKED, why, why, refused=str(err))
        if self.query.read_only and verb in WRITES:
            why = (
                f"refused: kubectl {verb} would change the cluster, and this episode may only "
                "look (get, describe, the exec probe, ...); it used a turn"
            )
            return self._result(cmd.text, StepStatus.BLOCKED, why, why, refused=why)
        result = self._cluster.kubectl(cmd)
        status = STATUS[result.status]
        error = None
        if status is not StepStatus.OK:
            error = (result.output.strip().splitlines() or [result.status])[-1][:300]
        facts: dict[str, Any] = {"command": cmd.text, "exit_code": result.exit_code}
        if result.server_errors:
            facts["server_errors"] = list(result.server_errors)
        return self._result(cmd.text, status, result.output or "(no output)", error,
                            result.seconds, **facts)  # fmt: skip
