"""What the agent is told: the task, the reply format, and connectivity reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from generators.k8s.boutique import NAMESPACE

TASK = f"""\
You operate a Kubernetes cluster running Google's Online Boutique demo in namespace \
`{NAMESPACE}` (one Deployment and one Pod per microservice, a Service in front of each). \
Its NetworkPolicies are meant to allow exactly the intended connections between the \
workloads, but some policies were changed and connectivity is now wrong.

{{report}}

Fix the NetworkPolicies with kubectl until every pair matches the intended connectivity, \
without breaking pairs that match now. Send exactly one kubectl command per turn, as JSON:
  {{{{"command": "kubectl get networkpolicies"}}}}
To send a manifest or an edited object, put its text in "stdin" and read it with `-f -` \
({{{{"command": "kubectl apply -f -", "stdin": "<yaml>"}}}}); `kubectl edit` takes the \
edited object from "stdin". A fenced ```bash block with one kubectl command (a \
here-document `<<EOF` works as stdin) is understood too. There is no shell (no pipes, \
redirections or `;`), and exec, logs, port-forward, proxy and deleting pods are not \
available. After each command you see its output and a fresh connectivity report. You \
have up to {{max_turns}} turns; the episode ends as soon as every pair matches."""


def pair_text(key: str) -> str:
    source, _, target = key.partition(">")
    return f"{source} → {target}"


def report(expected: Mapping[str, bool], mismatches: Sequence[str]) -> str:
    """The connectivity report: every mismatching pair with expected and actual state."""
    total = len(expected)
    if not mismatches:
        return f"Connectivity check: all {total} probed pairs match the intended connectivity."
    lines = [
        f"Connectivity check (each source pod connects to each Service port by DNS name): "
        f"{len(mismatches)} of {total} pairs do not match the intended connectivity:"
    ]
    for key in mismatches:
        want = "allowed" if expected[key] else "blocked"
        got = "blocked" if expected[key] else "allowed"
        lines.append(f"  {pair_text(key)} (expected: {want}, actual: {got})")
    lines.append(f"The other {total - len(mismatches)} pairs match.")
    return "\n".join(lines)


def task_prompt(expected: Mapping[str, bool], mismatches: Sequence[str], max_turns: int) -> str:
    return TASK.format(report=report(expected, mismatches), max_turns=max_turns)
