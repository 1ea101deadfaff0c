"""The fault kinds of levels 6-8, each tagged with its family (`k8s`): the vocabulary
localize prompts list in full and answers name, with the component each one names.

Every kind is a deviation of one object from the intent the prompt states; a kind says
which object and how, so that exactly one label fits each fault (the first that applies,
in this order, for a rule of a NetworkPolicy: a DNS rule's mistakes are always
`k8s.egress_dns_missing`, an open egress that gained restrictions is always
`k8s.egress_lockdown_unintended`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.api import Label, Vocabulary

FAMILY = "k8s"
POLICY = "networkpolicy/<namespace>/<name> (the policy as it stands)"


@dataclass(frozen=True)
class Kind:
    id: str
    meaning: str
    component: str
    closed_only: bool = False  # opens what must stay closed, breaks nothing that must work
    strays: bool = False  # offered only by a tier with strays (level 8: strays.py)

    @property
    def family(self) -> str:
        return FAMILY

    def label(self) -> Label:
        return Label(self.id, self.meaning, self.component)


KINDS: tuple[Kind, ...] = (
    Kind("k8s.egress_dns_missing",
         "a pod's egress rules do not admit DNS to kube-dns in kube-system on UDP 53 (the DNS "
         "rule is gone, or any part of it is wrong: peer, port or protocol)", POLICY),
    Kind("k8s.egress_lockdown_unintended",
         "a policy restricts the egress of a workload whose egress the intent leaves open "
         "(however correct the restriction looks)", POLICY),
    Kind("k8s.peer_missing",
         "a rule no longer admits a peer the intent needs: the peer or its whole rule is gone",
         POLICY),
    Kind("k8s.peer_selector_wrong",
         "a peer's podSelector names a label the intended pods do not carry (a misspelt value "
         "or another key)", POLICY),
    Kind("k8s.peer_namespace_wrong",
         "a peer's namespaceSelector does not select the intended pods' namespace (dropped, "
         "another namespace or tier, a label namespaces do not carry, a namespace list "
         "missing or misspelling one)", POLICY),
    Kind("k8s.peer_extra",
         "an ingress rule admits pods the intent does not (another workload, every pod, a "
         "whole namespace, every namespace)", POLICY, closed_only=True),
    Kind("k8s.ns_selector_split",
         "a peer meant as namespaceSelector AND podSelector is written as two peers "
         "(namespaceSelector OR podSelector)", POLICY, closed_only=True),
    Kind("k8s.ipblock_wrong",
         "an ipBlock peer admits other addresses than the intent: its except dropped or "
         "grown over an intended client, its cidr narrowed or widened", POLICY),
    Kind("k8s.port_wrong",
         "a rule's port is another number than the intended port (the Service's port where "
         "the pod's is meant, off by one, another workload's, a typo, a range that misses it)",
         POLICY),
    Kind("k8s.named_port_wrong",
         "a rule names its port by a name the intended pod's container ports do not give "
         "that port", POLICY),
    Kind("k8s.protocol_wrong",
         "a rule's port has another protocol than the intended one (not the DNS rule)", POLICY),
    Kind("k8s.policy_types_wrong",
         "a policy's policyTypes leave out a direction its rules are meant for, so the "
         "namespace's default deny decides that direction", POLICY),
    Kind("k8s.policy_selector_wrong",
         "a workload's policy has a podSelector its pod does not match", POLICY),
    Kind("k8s.policy_missing",
         "a workload's policy is gone from its namespace",
         "networkpolicy/<namespace>/<name> (the missing policy)"),
    Kind("k8s.policy_wrong_namespace",
         "a workload's policy stands in another namespace than its workload's (and is "
         "missing from the right one)",
         "networkpolicy/<namespace it stands in>/<name>"),
    Kind("k8s.default_deny_missing",
         "a namespace's default deny (default-deny-<namespace>) is gone",
         "networkpolicy/<namespace>/default-deny-<namespace>", closed_only=True),
    Kind("k8s.ns_label_missing",
         "a namespace lacks the `tier` label the intent gives it (removed, misspelt value, "
         "or under another key)", "namespace/<name>"),
    Kind("k8s.pod_label_drift",
         "a pod's `app` label is not its workload's name (changed or removed)",
         "pod/<namespace>/<pod name>"),
    Kind("k8s.svc_targetport_mismatch",
         "a Service's targetPort is not the port its pods serve", "service/<namespace>/<name>"),
    Kind("k8s.svc_selector_mismatch",
         "a Service's selector matches none of the pods meant to back it",
         "service/<namespace>/<name>"),
    Kind("k8s.policy_extra",
         "a NetworkPolicy the intent does not have admits a connection the intent does not "
         "list (policies add up: what it admits depends on the pods it selects, their "
         "named ports and the namespaces' labels; one that admits only what is listed is "
         "harmless and no cause)", POLICY, closed_only=True, strays=True),
)  # fmt: skip
BY_ID = {k.id: k for k in KINDS}
CLOSED_ONLY = tuple(k.id for k in KINDS if k.closed_only)


def vocabulary(strays: bool = False) -> Vocabulary:
    """Every kind of a tier (`strays`: with k8s.policy_extra), in the order prompts list
    them."""
    return Vocabulary(
        tuple(k.label() for k in KINDS if strays or not k.strays),
        device="the namespace its component stands in (for a namespace: its own name)",
    )
