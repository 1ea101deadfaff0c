"""`SandboxResult` and how the parent reads one run's header and untrusted child report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from emulators.pysandbox.limits import SandboxLimits
from emulators.pysandbox.records import split_state, validate_record
from pipeline.core import StepStatus

# A child can only claim outcomes of the agent's own making; infrastructure failures and
# timeouts are ruled by the zygote, which never runs agent code.
_CHILD_STATUSES = frozenset(
    {StepStatus.OK, StepStatus.EXEC_ERROR, StepStatus.BLOCKED, StepStatus.RESOURCE_LIMIT}
)
_ERROR_CHARS = 4000
_BLOCKED_ITEMS = 20


@dataclass
class SandboxResult:
    """One run of agent code. `value` is a records.py record, set only when status is OK."""

    status: StepStatus
    value: dict[str, Any] | None
    stdout: str  # captured print() output, cut at SandboxLimits.output_bytes (with a note)
    error: str | None  # one readable line, plus a short traceback tail for exceptions
    exec_s: float  # wall time of the agent code, without process setup
    # Every action refused during the run, also those the code caught and carried on
    # after; reported by the child, so advisory only. The refused actions never ran.
    blocked: list[str] = field(default_factory=list)
    # For an OK value answer: the graphdiff of the graph the code was given, when the code
    # changed it (None: unchanged, or the answer is a graph, whose record holds its diff).
    state: dict[str, list] | None = None


def env_error(reason: str) -> SandboxResult:
    return SandboxResult(StepStatus.ENV_ERROR, None, "", reason, 0.0)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} in the result")


def _loads(data: bytes) -> Any:
    return json.loads(data, parse_constant=_reject_constant)


def interpret(header: dict[str, Any], report: bytes, limits: SandboxLimits) -> SandboxResult:
    """The typed result for one run; never raises for anything the child wrote."""
    zygote_s = header.get("exec_s")
    zygote_s = float(zygote_s) if isinstance(zygote_s, (int, float)) else 0.0
    if header.get("status") is not None:
        return SandboxResult(StepStatus(header["status"]), None, "", header.get("error"), zygote_s)
    try:
        return _read_report(report, limits, zygote_s)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        reason = f"the sandboxed code produced a malformed result: {exc}"[:_ERROR_CHARS]
        return SandboxResult(StepStatus.EXEC_ERROR, None, "", reason, zygote_s)


def _read_report(report: bytes, limits: SandboxLimits, zygote_s: float) -> SandboxResult:
    head, _, body = report.partition(b"\n")
    envelope = _loads(head)
    if not isinstance(envelope, dict):
        raise ValueError("the report envelope is not a JSON object")
    status = StepStatus(envelope["status"])
    if status not in _CHILD_STATUSES:
        raise ValueError(f"a child may not report status {status.value!r}")
    stdout = envelope.get("stdout", "")
    error = envelope.get("error")
    blocked = envelope.get("blocked", [])
    if not isinstance(stdout, str) or not (error is None or isinstance(error, str)):
        raise ValueError("'stdout' and 'error' must be strings")
    if not isinstance(blocked, list) or not all(isinstance(item, str) for item in blocked):
        raise ValueError("'blocked' must be a list of strings")
    # Timing is the zygote's measurement alone: the child's own figure is its claim.
    exec_s = zygote_s
    if len(stdout) > limits.output_bytes + 200:  # the child's own cap, enforced again here
        stdout = stdout[: limits.output_bytes] + "\n[output cut by the parent]"
    value = state = None
    if status is StepStatus.OK:
        if len(body) > limits.result_bytes:
            reason = f"the result is {len(body)} bytes, over the limit of {limits.result_bytes}"
            return SandboxResult(StepStatus.RESOURCE_LIMIT, None, stdout, reason, exec_s)
        value, state = split_state(validate_record(_loads(body)))
    elif error is None:
        raise ValueError(f"a {status.value} report must give an error")
    blocked = [item[:300] for item in blocked[:_BLOCKED_ITEMS]]
    error = error[:_ERROR_CHARS] if error is not None else None
    return SandboxResult(status, value, stdout, error, exec_s, blocked, state)
