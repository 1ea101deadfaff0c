"""The oracle's kubectl commands that put objects back as intended (levels 6-8), and a pure
replay of exactly those command forms, so a query's oracle is checked before any cluster
runs it.

One command per object (a policy created in the wrong namespace takes two: the stray is
deleted first, which changes nothing, since it selects no pod where it stands):

    a policy changed      kubectl patch networkpolicy NAME -n NS --type=json -p '[replace /spec]'
    a policy gone         kubectl apply -f -              (stdin: the intended policy, JSON)
    a stray policy        kubectl delete networkpolicy NAME -n NS
    namespace labels      kubectl label namespace NAME KEY=VALUE [WRONG-] --overwrite
    pod labels            kubectl label pod NAME -n NS KEY=VALUE [WRONG-] --overwrite
    a Service             kubectl patch service NAME -n NS --type=json -p '[replace ...]'

`replay` applies such a command to a state as the API server would (JSON patches with its
own patch code, labels set and removed, objects created or deleted).
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Mapping, MutableMapping
from typing import Any

from emulators.k8s import patch as patches
from generators.k8s.faults import repair_command
from generators.k8s.overlay import Key

Command = dict[str, str]  # {"command": ..., "stdin": ...}
PLURALS = {"networkpolicy": "NetworkPolicy", "service": "Service", "namespace": "Namespace",
           "pod": "Pod"}  # fmt: skip


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _manifest(policy: Mapping[str, Any]) -> dict[str, Any]:
    meta = policy["metadata"]
    return {
        "apiVersion": policy.get("apiVersion", "networking.k8s.io/v1"),
        "kind": "NetworkPolicy",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "spec": copy.deepcopy(policy["spec"]),
    }


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _label_args(intended: Mapping[str, Any], now: Mapping[str, Any] | None) -> list[str]:
    want, have = _labels(intended), _labels(now)
    args = [f"{k}={v}" for k, v in sorted(want.items()) if have.get(k) != v]
    args += [f"{k}-" for k in sorted(set(have) - set(want))]
    return args


def fix(key: Key, intended: Mapping[str, Any] | None, now: Mapping[str, Any] | None) -> Command:
    """The command that makes object `key` (now `now`) what the intent has (`intended`)."""
    kind, ns, name = key
    if kind == "NetworkPolicy":
        if intended is None:
            return {"command": f"kubectl delete networkpolicy {name} -n {ns}", "stdin": ""}
        if now is None:
            return {"command": "kubectl apply -f -", "stdin": _json(_manifest(intended))}
        return {"command": repair_command(intended), "stdin": ""}
    if intended is None or now is None:
        raise ValueError(f"{kind} {name}: only policies are created or deleted by a fix")
    if kind in ("Namespace", "Pod"):
        where = f"namespace {name}" if kind == "Namespace" else f"pod {name} -n {ns}"
        args = " ".join(shlex.quote(a) for a in _label_args(intended, now))
        return {"command": f"kubectl label {where} {args} --overwrite", "stdin": ""}
    if kind == "Service":
        ops = [
            {"op": "replace", "path": f"/spec/{field}", "value": intended["spec"][field]}
            for field in ("selector", "ports")
            if (now.get("spec") or {}).get(field) != intended["spec"].get(field)
        ]
        text = shlex.quote(json.dumps(ops, separators=(",", ":"), sort_keys=True))
        return {
            "command": f"kubectl patch service {name} -n {ns} --type=json -p {text}",
            "stdin": "",
        }
    raise ValueError(f"no fix for a {kind}")


def fixes(
    changes: Mapping[Key, Mapping[str, Any] | None], base: Mapping[Key, Any]
) -> list[Command]:
    """The commands undoing `changes` (key -> the object a fault left, None: gone), strays
    deleted first."""
    order = sorted(changes, key=lambda k: (k in base, k))
    return [fix(key, base.get(key), changes[key]) for key in order]


# -- replay ----------------------------------------------------------------------------------
def replay(state: MutableMapping[Key, Any], command: Command) -> None:
    """Apply one of this module's commands to `state` (key -> object or None) in place."""
    args = shlex.split(command["command"])
    if args[:3] == ["kubectl", "apply", "-f"]:
        obj = json.loads(command["stdin"])
        meta = obj["metadata"]
        state[(obj["kind"], meta["namespace"], meta["name"])] = obj
        return
    verb, kind = args[1], PLURALS[args[2]]
    name = args[3]
    ns = args[args.index("-n") + 1] if "-n" in args else ""
    key = (kind, ns, name)
    if verb == "delete":
        state[key] = None
    elif verb == "patch":
        body = json.loads(args[args.index("-p") + 1])
        state[key] = patches.json_patch(state[key], body)
    elif verb == "label":
        obj = copy.deepcopy(state[key])
        labels = obj["metadata"].setdefault("labels", {})
        for arg in args[4:]:
            if arg.endswith("-") and "=" not in arg:
                labels.pop(arg[:-1], None)
            elif "=" in arg:
                k, _, v = arg.partition("=")
                labels[k] = v
        state[key] = obj
    else:
        raise ValueError(f"cannot replay {command['command']!r}")
