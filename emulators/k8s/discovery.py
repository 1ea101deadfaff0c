"""Discovery documents (`/api`, `/apis`, `/api/v1`, ...) and the minimal OpenAPI v3 documents
kubectl needs: `apply`, `create` and `replace` look up each kind's PATCH operation to see
whether the server validates fields itself (`fieldValidation`), and refuse to run
without the index. Kinds carry no schema, so kubectl falls back to its built-in types for
strategic merge patches (as it does against old servers).

`/openapi/v2` is a protobuf OpenAPI v2 document without definitions: kubectl reads it to
validate a `kind: List` on the client (the v3 documents have no List), finds no schema
for the items and leaves them to the server, which checks each one strictly as it
arrives, as for any other manifest.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from emulators.k8s.resources import GROUP_VERSIONS, RESOURCES

VERSION_INFO = {
    "major": "1",
    "minor": "37",
    "emulationMajor": "1",
    "emulationMinor": "37",
    "gitVersion": "v1.37.1-netgauge",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


# The media type kube-apiserver answers with (the `@` form clients ask for does not parse).
OPENAPI_V2_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _proto_string(field: int, text: str) -> bytes:
    data = text.encode()
    return bytes([field << 3 | 2, len(data)]) + data


def openapi_v2() -> bytes:
    """gnostic's openapi_v2.Document with `swagger` (field 1) and `info` (field 2: title,
    version) only."""
    info = _proto_string(1, "Kubernetes") + _proto_string(2, VERSION_INFO["gitVersion"])
    return _proto_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info


def api_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def api_groups() -> dict[str, Any]:
    groups = []
    for group, version in GROUP_VERSIONS:
        if group:
            gv = {"groupVersion": f"{group}/{version}", "version": version}
            groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    items = [r for r in RESOURCES if (r.group, r.version) == (group, version)]
    if not items:
        return None
    resources = []
    for r in items:
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs,
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        resources.append(entry)
    gv = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }


def _doc_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_document(group: str, version: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        params = [
            {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for name in ("dryRun", "fieldManager", "fieldValidation", "force")
        ]
        op = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": params,
            "responses": {"200": {"description": "OK"}},
        }
        prefix = f"/{_doc_path(group, version)}"
        if r.namespaced:
            prefix += "/namespaces/{namespace}"
        paths[f"{prefix}/{r.plural}/{{name}}"] = {"patch": op, "put": op}
        paths[f"{prefix}/{r.plural}"] = {"post": op}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
        "paths": paths,
        "components": {"schemas": {}},
    }


def openapi_index() -> dict[str, Any]:
    paths = {}
    for group, version in GROUP_VERSIONS:
        doc = json.dumps(openapi_document(group, version), sort_keys=True).encode()
        digest = hashlib.sha512(doc).hexdigest()[:32].upper()
        path = _doc_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}
