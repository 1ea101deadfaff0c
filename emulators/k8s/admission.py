"""What the data plane can enforce, checked on every write in time that does not grow with
the policies already stored.

`Enforceable` is the store validator that refuses (422) a write the data plane could not
compile into rules, or only into more rules than it takes (`enforce.MAX_RULES`). Validation
already keeps malformed objects out; this is the line that guarantees the enforcement step
never meets an object it cannot handle, so no write can leave the cluster unable to take
the next one.

Checking the whole would-be object set on every write (compile every pod's script) made a
`kubectl apply` of a List of n policies cost n full compilations, each over up to n
policies. A policy's rules, and its share of the rule bound, depend only on that policy and
on the pods, namespaces and Services (enforce.py: `check_policy`, `policy_bound`), never on
the other policies. So the result per policy is kept, keyed by the policy's uid and
resourceVersion (a new version on every write, unique across stores), and thrown away when
any pod, namespace or Service changes (a context key of their uids and versions); a write
then costs one policy's compilation and a sum. When the context changes, the scripts
without policies are compiled (the Service rules, every pod's frame) and every policy
again: one full compilation, as each write cost before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from emulators.k8s import enforce
from emulators.k8s.policy import View, view_from_objects
from emulators.k8s.resources import ApiError

# What our compiler raises on input it does not understand.
COMPILE_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError)
CONTEXT_KINDS = ("Pod", "Namespace", "Service")


def _version(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))


def _refuse(why: str) -> ApiError:
    return ApiError(422, "Invalid", f"the data plane cannot enforce this change: {why}")


class Enforceable:
    """Store validator (see the module docstring); one per store."""

    def __init__(self) -> None:
        self._context: tuple[tuple[str, str], ...] | None = None
        self._policies: dict[tuple[str, str], tuple[int, str | None]] = {}

    def __call__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        context = tuple(sorted(_version(o) for o in objects if o.get("kind") in CONTEXT_KINDS))
        try:
            view = view_from_objects(objects)
            if context != self._context:  # the Service rules and every script's frame
                self._context, self._policies = None, {}
                enforce.compile_all(View(view.pods, view.namespaces, view.services))
                self._context = context
        except COMPILE_ERRORS as err:
            raise _refuse(f"{type(err).__name__}: {err}") from None
        known, needed = {}, 0
        for policy in view.policies:
            key = _version(policy)
            judged = self._policies.get(key)
            if judged is None:
                judged = _judge(view, policy)
            known[key] = judged
            share, error = judged
            if error is not None:
                raise _refuse(error)
            needed += share
        self._policies = known  # only those still stored: the cache stays their size
        if needed > enforce.MAX_RULES:
            raise _refuse(
                f"the policies would need up to {needed} packet-filter rules across the pods, "
                f"and it takes {enforce.MAX_RULES}"
            )


def _judge(view: View, policy: Mapping[str, Any]) -> tuple[int, str | None]:
    """(the policy's share of the rule bound, why it cannot be compiled or None)."""
    try:
        share = enforce.policy_bound(view, policy)
        if share <= enforce.MAX_RULES:
            enforce.check_policy(view, policy)
    except COMPILE_ERRORS as err:
        return 0, f"{type(err).__name__}: {err}"
    return share, None
