"""Seeded faults injected into the intended policies, and the oracle's repair of them.

Five kinds, abbreviated as in NetArena's level table: RI remove_ingress (a caller loses
access), AI add_ingress (an unintended source gains it), CP change_port (the allowed
port is wrong), CPR change_protocol (TCP becomes UDP or SCTP), AE add_egress (a
workload's egress is restricted to one peer, which also cuts its DNS lookups). Operands
(service, peer, port, protocol) are drawn from a `random.Random`; each fault acts on the
policies as earlier faults of the same query left them.
"""

from __future__ import annotations

import copy
import json
import random
import shlex
from collections.abc import Callable
from typing import Any

from generators.k8s.boutique import BY_NAME, NAMESPACE, SERVICES

ABBREVIATIONS = {
    "RI": "remove_ingress",
    "AI": "add_ingress",
    "CP": "change_port",
    "CPR": "change_protocol",
    "AE": "add_egress",
}
LEVELS: dict[int, list[tuple[str, ...]]] = {
    1: [("RI",), ("AI",), ("CP",), ("CPR",), ("AE",)],
    2: [("RI", "AI"), ("RI", "CP"), ("RI", "CPR"), ("AI", "CP"), ("AI", "CPR"), ("CP", "CPR")],
    3: [("CP", "AE"), ("CPR", "AE"), ("RI", "AE"), ("AI", "AE")],
}
Policies = dict[str, dict[str, Any]]  # policy name -> object
Fault = dict[str, Any]


class NoCandidate(Exception):
    """No operand fits this fault in the current policies (the generator redraws)."""


def _app(peer: dict[str, Any]) -> str | None:
    return ((peer.get("podSelector") or {}).get("matchLabels") or {}).get("app")


def _port_rules(policies: Policies) -> list[tuple[str, dict[str, Any]]]:
    """(policy, port entry) of every numeric port in an ingress rule."""
    return [
        (name, port)
        for name in sorted(policies)
        for rule in policies[name]["spec"].get("ingress") or []
        for port in rule.get("ports") or []
        if isinstance(port.get("port"), int)
    ]


def remove_ingress(policies: Policies, rng: random.Random) -> Fault:
    options = []
    for name in sorted(policies):
        for i, rule in enumerate(policies[name]["spec"].get("ingress") or []):
            peers = rule.get("from") or []
            options += [(name, i, _app(p)) for p in peers if _app(p)] or [(name, i, "*")]
    if not options:
        raise NoCandidate("no ingress rule left to remove a peer from")
    name, index, peer = rng.choice(options)
    rules = policies[name]["spec"]["ingress"]
    if peer == "*":
        del rules[index]
    else:
        rule = rules[index]
        rule["from"] = [p for p in rule["from"] if _app(p) != peer]
        if not rule["from"]:
            del rules[index]
    return {"fault": "remove_ingress", "policy": name, "peer": peer}


def add_ingress(policies: Policies, rng: random.Random) -> Fault:
    options = []
    for w in SERVICES:
        if w.name not in policies or w.target is None or w.callers == ("*",):
            continue
        allowed = {
            _app(p)
            for r in policies[w.name]["spec"].get("ingress") or []
            for p in r.get("from") or []
        }
        options += [
            (w.name, o.name) for o in SERVICES if o.name not in allowed and o.name != w.name
        ]
    if not options:
        raise NoCandidate("every workload already admits every peer")
    name, peer = rng.choice(options)
    spec = policies[name]["spec"]
    selector = {"podSelector": {"matchLabels": {"app": peer}}}
    rules = [r for r in spec.get("ingress") or [] if r.get("from")]
    if rules:
        rules[0]["from"].append(selector)
    else:
        target = BY_NAME[name].target
        spec.setdefault("ingress", []).append(
            {"from": [selector], "ports": [{"port": target, "protocol": "TCP"}]}
        )
    return {"fault": "add_ingress", "policy": name, "peer": peer}


def change_port(policies: Policies, rng: random.Random) -> Fault:
    options = _port_rules(policies)
    if not options:
        raise NoCandidate("no numeric port left to change")
    name, port = rng.choice(options)
    used = sorted({w.target for w in SERVICES if w.target and w.target != port["port"]})
    new = rng.choice([*used, port["port"] + 1, port["port"] - 1])
    old, port["port"] = port["port"], new
    return {"fault": "change_port", "policy": name, "port": old, "new_port": new}


def change_protocol(policies: Policies, rng: random.Random) -> Fault:
    options = [(n, p) for n, p in _port_rules(policies) if p.get("protocol", "TCP") == "TCP"]
    if not options:
        raise NoCandidate("no TCP port left to change")
    name, port = rng.choice(options)
    port["protocol"] = rng.choice(["UDP", "SCTP"])
    return {
        "fault": "change_protocol",
        "policy": name,
        "port": port["port"],
        "protocol": port["protocol"],
    }


def add_egress(policies: Policies, rng: random.Random) -> Fault:
    options = [
        name for name in sorted(policies) if (policies[name]["spec"].get("egress") or []) == [{}]
    ]
    if not options:
        raise NoCandidate("no workload with open egress left")
    name = rng.choice(options)
    peers = [w for w in SERVICES if w.target is not None and w.name != name]
    peer = rng.choice(peers)
    spec = policies[name]["spec"]
    spec["egress"] = [
        {
            "to": [{"podSelector": {"matchLabels": {"app": peer.name}}}],
            "ports": [{"port": peer.target, "protocol": "TCP"}],
        }
    ]
    if "Egress" not in spec.get("policyTypes", []):
        spec.setdefault("policyTypes", ["Ingress"]).append("Egress")
    return {"fault": "add_egress", "policy": name, "peer": peer.name, "port": peer.target}


INJECTORS: dict[str, Callable[[Policies, random.Random], Fault]] = {
    "remove_ingress": remove_ingress,
    "add_ingress": add_ingress,
    "change_port": change_port,
    "change_protocol": change_protocol,
    "add_egress": add_egress,
}


def inject(intended: list[dict[str, Any]], combo: tuple[str, ...], rng: random.Random):
    """(faults, faulted policies by name, names touched) for one combination of faults;
    the workload policies only (the default deny is never the fault)."""
    policies = {
        p["metadata"]["name"]: copy.deepcopy(p)
        for p in intended
        if p["metadata"]["name"] in BY_NAME
    }
    faults = [INJECTORS[ABBREVIATIONS[abbr]](policies, rng) for abbr in combo]
    touched = sorted({f["policy"] for f in faults})
    return faults, policies, touched


def repair_command(intended: dict[str, Any]) -> str:
    """The oracle's one command restoring a policy: a JSON patch replacing its spec."""
    patch = [{"op": "replace", "path": "/spec", "value": intended["spec"]}]
    text = json.dumps(patch, separators=(",", ":"), sort_keys=True)
    name = intended["metadata"]["name"]
    return f"kubectl patch networkpolicy {name} -n {NAMESPACE} --type=json -p {shlex.quote(text)}"
