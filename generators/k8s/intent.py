"""What the agent is told at levels 6-8: the estate and its intent, the intended exceptions
(benign anomalies), the task, and the connectivity reports of each tier.

The intent says everything the checks judge, so each fault is a deviation an agent can
find with kubectl get/describe and the exec probe: the labels pods and namespaces carry,
the policies each namespace and workload has, every workload's ports and Service, who may
connect to it on which port (everything else must stay closed), whose egress is locked
down, and the documented exceptions.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from generators.k8s import estate as E
from generators.k8s.callgraph import (
    EXCLUDED_CIDR,
    EXTERNAL_CIDR,
    MONITORING,
    PARTNER_PORT,
    MicroApp,
    Workload,
)
from generators.k8s.prompt import report
from generators.k8s.tiers import Tier
from pipeline.api import Vocabulary, task_text


def _ports(w: Workload) -> str:
    if not w.ports:
        return "no ports"
    return ", ".join(
        f"{p.name} {p.number}" + ("/UDP" if p.protocol == "UDP" else "") for p in w.ports
    )


def _service(w: Workload, name: str | None = None) -> str:
    if w.service_port is None:
        return "no Service"
    return f"Service {name or w.name} {w.service_port}->{w.ports[0].number}"


def _callers(app: MicroApp, w: Workload) -> str:
    callers = sorted(c.name for c in app.callers(w.name))
    port = w.ports[0].name if w.ports else ""
    if w.role == "gateway":
        outside = f"hosts outside ({EXTERNAL_CIDR} except the admin range {EXCLUDED_CIDR})"
        callers.insert(0, outside)
    if not callers:
        return "nothing may connect" if w.role != "worker" else "nothing may connect to it"
    return f"{', '.join(callers)} may connect on {port}"


def _calls(w: Workload) -> str:
    return f"; calls {', '.join(c.target for c in w.calls)}" if w.role == "worker" else ""


def describe(es: E.Estate) -> str:
    """The estate and its intent, as the prompt states them."""
    app = es.app
    spaces = ", ".join(f"`{ns}`" for ns in app.namespaces)
    statsd = "statsd" in app.by_name
    locked = sorted(ns for ns in app.locked if ns in app.namespaces[1:-1])
    lines = [
        f"You operate a Kubernetes cluster running a microservice application in namespaces "
        f"{spaces} (one Deployment and one Pod per workload), with Prometheus"
        f"{' and a StatsD collector' if statsd else ''} in `monitoring`, DNS in "
        f"`kube-system`, pods in `external` standing in for hosts outside the cluster "
        f"({EXTERNAL_CIDR}), an audit trail in `audit` and a developers' `sandbox`.",
        "",
        "Intent (what the cluster must do; every connection not listed must stay closed):",
        "- Labels: each workload's pod carries app=<workload> (what NetworkPolicies select) "
        f"and {E.SELECTOR}=<workload> (what its Deployment and Service select). Namespaces "
        "carry `tier`: "
        + ", ".join(f"{ns}={es.tier_of(ns)}" for ns in (*app.namespaces, MONITORING))
        + ", external=external, audit=audit, sandbox=sandbox.",
        "- NetworkPolicies: each namespace of the application, monitoring, audit and sandbox "
        "has a default deny (default-deny-<namespace>); each workload of the application "
        "and of monitoring has its own policy, named after it, admitting exactly what is "
        "listed below. Egress is restricted to DNS (kube-dns in kube-system, UDP and TCP "
        "53) and what a workload calls in `data`, `monitoring`"
        + "".join(f", `{ns}`" for ns in locked)
        + "; in the other namespaces egress is open. Data stores start no connection (not "
        "even a DNS lookup).",
        "- Workloads (namespace; container ports; Service port->targetPort; who may "
        "connect, on which port):",
    ]
    for w in app.app_workloads:
        lines.append(
            f"  {w.name} ({w.namespace}; {_ports(w)}; {_service(w)}): {_callers(app, w)}{_calls(w)}"
        )
    partners = sorted(w.name for w in app.app_workloads if w.partner)
    lines.append(
        f"- {', '.join(partners)} call the partner API {app.by_name['partner-api'].ip} on TCP "
        f"{PARTNER_PORT} (outside the cluster: the block {EXTERNAL_CIDR} except {EXCLUDED_CIDR})."
    )
    scraped = sorted(w.name for w in app.app_workloads if any(p.name == "metrics" for p in w.ports))
    lines.append(
        "- Prometheus (monitoring; web 9090; Service prometheus 9090->9090) scrapes the "
        f"metrics port (9090) of {', '.join(scraped)}; the admin range {EXCLUDED_CIDR} may "
        "connect to it on web."
    )
    if statsd:
        emitters = sorted(w.name for w in app.app_workloads if w.statsd)
        lines.append(
            "- StatsD (monitoring; statsd 8125/UDP; Service statsd 8125->8125) takes datagrams "
            f"from every pod of {', '.join(app.namespaces)}; {', '.join(emitters)} send them."
        )
    lines.append(
        f"- audit-sink (audit; ingest {E.AUDIT_PORT}; Service audit-sink "
        f"{E.AUDIT_PORT}->{E.AUDIT_PORT}): pods of the namespaces of tier edge or app may "
        "connect on ingest; it starts no connection."
    )
    lines.append(
        "- playground (sandbox; http 8080; Service playground 80->8080): closed both ways "
        "by its namespace's default deny."
    )
    for name in es.legacy:
        w = app.by_name[name]
        lines.append(
            f"- Service legacy-{name} ({w.namespace}; {w.service_port}->{w.ports[0].number}): "
            f"the old name of {name}, selecting its pod."
        )
    return "\n".join(lines)


STRAYS = (
    "\n- Other policies: other teams add NetworkPolicies of their own beside these, named "
    "otherwise. Policies add up, so such a policy can only admit more: where everything it "
    "admits is listed above it is harmless (it may stay, and it is no cause); where it "
    "admits a connection not listed, it is a fault (k8s.policy_extra). What it admits "
    "depends on the pods it selects, their named container ports and the namespaces' labels."
)


def exceptions(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    listed = "\n".join(f"- {n}" for n in notes)
    return (
        "\nIntended exceptions (they look like faults but are meant; leave them exactly as "
        f"they are, and never name them as causes):\n{listed}"
    )


PROBE = (
    "Besides kubectl get and describe, you can test one connection from inside a pod: "
    "`kubectl exec -n <namespace> <pod> -- probe <host>:<port>[/tcp|/udp]` (host: a "
    "Service name such as cart.shop, or an IP address); pods run no other program."
)
FORMAT = (
    "Send exactly one kubectl command per turn, as JSON: "
    '{"command": "kubectl get networkpolicies -n web"}. A manifest or an edited object goes '
    'in "stdin" and is read with `-f -`. There is no shell (no pipes, redirections or `;`); '
    "logs, port-forward, proxy and deleting pods are not available."
)


def counts(expected: Mapping[str, bool], mismatches: Collection[str], style: str) -> str:
    """A report of levels 7 (`counts`: how many should connect and do not, and the other
    way) and 8 (`count`: how many)."""
    total = len(expected)
    if not mismatches:
        return f"Connectivity check: all {total} probes match the intended connectivity."
    text = (
        f"Connectivity check: {len(mismatches)} of {total} probes do not match the intended "
        "connectivity"
    )
    if style == "count":
        return text + "."
    closed = sum(1 for k in mismatches if expected[k])
    return (
        f"{text}: {closed} should connect and do not, {len(mismatches) - closed} should be "
        "refused and connect."
    )


def observation(
    tier: Tier, expected: Mapping[str, bool], mismatches: Sequence[str], dns: Collection[str]
) -> str:
    if tier.report == "list":  # every mismatching probe, as levels 1-5 report them
        return report(expected, mismatches, dns)
    return counts(expected, mismatches, tier.report)


def task(
    task_kind: str,
    tier: Tier,
    report: str,
    vocabulary: Vocabulary,
    output_bytes: int,
) -> str:
    """What the prompt asks, after the intent."""
    budget = (
        f"You have {tier.turns} turns and may read {tier.read_kib} KiB of command output in "
        "all (past that, commands still run but their output is withheld); one command's "
        f"output shows its first {output_bytes} bytes."
    )
    if task_kind == "mitigate":
        return (
            "Some objects (NetworkPolicies, namespace or pod labels, Services) were changed, "
            "and the cluster no longer meets this intent.\n\n"
            f"{report}\n\n"
            "Fix them with kubectl until every probe matches the intended connectivity, "
            "without breaking what matches now and without touching the intended exceptions. "
            f"{FORMAT} {PROBE} After each command you see its output and a fresh connectivity "
            f"report; the episode ends as soon as everything matches. {budget}"
        )
    head = task_text(task_kind, vocabulary if task_kind == "localize" else None)
    shown = f"\n\n{report}" if report else ""
    return f"{head}{shown}\n\n{FORMAT} {PROBE} {budget}"
