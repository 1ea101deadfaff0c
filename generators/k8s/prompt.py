"""What the agent is told: the task, the reply format, and connectivity reports.

A report lists every probe whose result differs from the intended connectivity. A Service
probe reads `source → service:port`; a pod probe, `source → pod/<workload>:<port>/<protocol>`
(a connection to the pod's IP, no DNS). When a Service probe failed at its DNS lookup the
line says so, and a closing line names the sources that cannot resolve names at all: the
connection was never tried, whatever the destination's policy says.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from generators.k8s.boutique import NAMESPACE
from generators.k8s.callgraph import EXTERNAL_CIDR
from generators.k8s.clusters import ClusterSpec

BOUTIQUE = f"""\
You operate a Kubernetes cluster running Google's Online Boutique demo in namespace \
`{NAMESPACE}` (one Deployment and one Pod per microservice, a Service in front of each). \
"""
GENERATED = """\
You operate a Kubernetes cluster running a microservice application in namespaces \
{namespaces} (one Deployment and one Pod per workload, a Service in front of each that \
serves), with {monitoring} in `monitoring`, DNS in `kube-system`, and pods in namespace \
`external` standing in for hosts outside the cluster (their addresses are in \
{external}). \
"""
TASK = """\
Its NetworkPolicies are meant to allow exactly the intended connections between the \
workloads and keep every other one closed, but some policies were changed and \
connectivity is now wrong.

{report}

Fix the NetworkPolicies with kubectl until every pair matches the intended connectivity, \
without breaking pairs that match now. Send exactly one kubectl command per turn, as JSON:
  {{"command": "kubectl get networkpolicies"}}
To send a manifest or an edited object, put its text in "stdin" and read it with `-f -` \
({{"command": "kubectl apply -f -", "stdin": "<yaml>"}}); `kubectl edit` takes the \
edited object from "stdin". A fenced ```bash block with one kubectl command (a \
here-document `<<EOF` works as stdin) is understood too. There is no shell (no pipes, \
redirections or `;`), and exec, logs, port-forward, proxy and deleting pods are not \
available. After each command you see its output and a fresh connectivity report. You \
have up to {max_turns} turns; the episode ends as soon as every pair matches."""


def pair_text(key: str) -> str:
    source, _, target = key.partition(">")
    return f"{source} → {target}"


HEADER = (
    "Connectivity check (each workload pod connects to each Service port by DNS name; "
    "`pod/<workload>:<port>/<protocol>` is a connection to that pod's IP, on ports and "
    "protocols the intended policies keep closed or open)"
)


def _actual(key: str, allowed: bool, blocked_at_dns: bool) -> str:
    if not allowed:
        return "allowed"
    if not blocked_at_dns:
        return "blocked"
    source, _, target = key.partition(">")
    service = target.rsplit(":", 1)[0]
    return f"blocked at DNS: {source}'s lookup of {service} failed, so no connection was tried"


def report(
    expected: Mapping[str, bool],
    mismatches: Sequence[str],
    dns: Collection[str] = (),
) -> str:
    """The connectivity report: every mismatching probe with expected and actual state;
    `dns` holds the mismatching Service probes that failed at their DNS lookup."""
    total = len(expected)
    if not mismatches:
        return f"Connectivity check: all {total} probed pairs match the intended connectivity."
    lines = [
        f"{HEADER}: {len(mismatches)} of {total} pairs do not match the intended connectivity:"
    ]
    for key in mismatches:
        want = "allowed" if expected[key] else "blocked"
        got = _actual(key, expected[key], key in dns)
        lines.append(f"  {pair_text(key)} (expected: {want}, actual: {got})")
    lines.append(f"The other {total - len(mismatches)} pairs match.")
    sources = sorted({key.partition(">")[0] for key in mismatches if key in dns})
    if sources:
        lines.append(
            f"DNS: {', '.join(sources)} cannot resolve Service names (lookups go to kube-dns "
            "in kube-system, UDP port 53); their pairs marked `blocked at DNS` fail there, "
            "before any policy of the destination is met."
        )
    return "\n".join(lines)


def intro(cluster: ClusterSpec | None = None) -> str:
    """What the cluster runs: Online Boutique (None), or a generated application."""
    if cluster is None or cluster.app is None:
        return BOUTIQUE
    names = ", ".join(f"`{ns}`" for ns in cluster.namespaces)
    statsd = "statsd" in cluster.app.by_name
    monitoring = "Prometheus and a StatsD collector" if statsd else "Prometheus"
    return GENERATED.format(namespaces=names, monitoring=monitoring, external=EXTERNAL_CIDR)


def task_prompt(
    expected: Mapping[str, bool],
    mismatches: Sequence[str],
    max_turns: int,
    dns: Collection[str] = (),
    cluster: ClusterSpec | None = None,
) -> str:
    body = TASK.format(report=report(expected, mismatches, dns), max_turns=max_turns)
    return intro(cluster) + body
