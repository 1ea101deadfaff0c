"""The resource types the emulated API server serves, and its error type (a `Status`).

Each `Resource` is one REST collection (`pods`, `networkpolicies`, ...) with the names,
group, version and verbs its discovery document lists. `ApiError` carries the HTTP code,
reason and message of a `metav1.Status`, worded as kube-apiserver words them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "deletecollection", "patch", "update")
AGENT_USER = "netgauge-agent"


@dataclass(frozen=True)
class Resource:
    plural: str
    kind: str
    group: str  # "" for the core group
    version: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    writable: bool = False  # full write access (else: labels and annotations only)
    derived: bool = False  # computed from other objects, read-only (events, endpoints)
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """The group-qualified plural used in messages (`networkpolicies.networking.k8s.io`)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def verbs(self) -> list[str]:
        return list(READ_VERBS) if self.derived else [*READ_VERBS, *WRITE_VERBS]


RESOURCES: tuple[Resource, ...] = (
    Resource("namespaces", "Namespace", "", "v1", namespaced=False, short_names=("ns",)),
    Resource("pods", "Pod", "", "v1", short_names=("po",), categories=("all",)),
    Resource("services", "Service", "", "v1", short_names=("svc",), categories=("all",)),
    Resource("events", "Event", "", "v1", short_names=("ev",), derived=True),
    Resource("endpoints", "Endpoints", "", "v1", short_names=("ep",), derived=True),
    Resource(
        "deployments", "Deployment", "apps", "v1", short_names=("deploy",), categories=("all",)
    ),
    Resource("replicasets", "ReplicaSet", "apps", "v1", short_names=("rs",), derived=True),
    Resource("endpointslices", "EndpointSlice", "discovery.k8s.io", "v1", derived=True),
    Resource(
        "networkpolicies",
        "NetworkPolicy",
        "networking.k8s.io",
        "v1",
        short_names=("netpol",),
        writable=True,
    ),
)
BY_PLURAL = {r.plural: r for r in RESOURCES}
BY_KIND = {r.kind: r for r in RESOURCES}
GROUP_VERSIONS = sorted({(r.group, r.version) for r in RESOURCES})


@dataclass
class ApiError(Exception):
    """A request the API server refuses; `status()` is the body it answers with."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(res: Resource, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{res.qualified} "{name}" not found',
        {"name": name, "group": res.group, "kind": res.plural},
    )


def already_exists(res: Resource, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{res.qualified} "{name}" already exists',
        {"name": name, "group": res.group, "kind": res.plural},
    )


def conflict(res: Resource, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res.qualified} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        {"name": name, "group": res.group, "kind": res.plural},
    )


def forbidden(res: Resource, verb: str, namespace: str | None) -> ApiError:
    where = f' in the namespace "{namespace}"' if res.namespaced and namespace else ""
    scope = "" if where else " at the cluster scope"
    return ApiError(
        403,
        "Forbidden",
        f'{res.qualified} is forbidden: User "{AGENT_USER}" cannot {verb} resource '
        f'"{res.plural}" in API group "{res.group}"{where}{scope}',
        {"group": res.group, "kind": res.plural},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(res: Resource, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; causes are (reason, field, detail) as field.Error gives them."""
    texts = [f"{f}: {m}" for _, f, m in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return ApiError(
        422,
        "Invalid",
        f'{res.qualified_kind} "{name}" is invalid: {joined}',
        {
            "name": name,
            "group": res.group,
            "kind": res.kind,
            "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes],
        },
    )
