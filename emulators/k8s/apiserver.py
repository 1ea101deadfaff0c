"""The emulated kube-apiserver: a threaded HTTP server on a random loopback port.

Serves discovery, the OpenAPI v3 index, and REST for the kinds in `resources`, with
Tables for `kubectl get`, label and field selectors, `dryRun`, `fieldValidation`
(Strict / Warn / Ignore), and the four patch types. Errors are `metav1.Status` bodies.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from emulators.k8s import discovery, tables
from emulators.k8s.resources import BY_PLURAL, ApiError, Resource, bad_request
from emulators.k8s.store import Store

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}


class ApiServer:
    """`with ApiServer(store) as server:` serves on `server.url` until the block ends."""

    def __init__(self, store: Store, host: str = "127.0.0.1") -> None:
        self.store = store
        self.requests = 0
        handler = type("Handler", (_Handler,), {"api": self})
        self._http = ThreadingHTTPServer((host, 0), handler)
        self._http.daemon_threads = True
        self.url = f"http://{host}:{self._http.server_address[1]}"
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            daemon=True,
            name=f"ngk-apiserver-{self._http.server_address[1]}",
        )

    def __enter__(self) -> ApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._thread.is_alive():
            self._http.shutdown()
            self._thread.join(timeout=5)
        self._http.server_close()


def _resource_path(parts: list[str]) -> tuple[Resource, str | None, str | None, str | None]:
    """(resource, namespace, name, subresource) of an /api or /apis path."""
    if parts[0] == "api" and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    ns = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns, rest = rest[1], rest[2:]
    res = BY_PLURAL.get(rest[0])
    if res is None or (res.group, res.version) != (group, version) or len(rest) > 3:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    return res, ns, name, sub


class _Handler(BaseHTTPRequestHandler):
    api: ApiServer
    protocol_version = "HTTP/1.1"
    server_version = "netgauge-k8s"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the server's own access log is not wanted."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        self.api.requests += 1
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        warnings: list[str] = []
        try:
            code, body = self._route(method, url.path, query, raw, warnings)
        except ApiError as err:
            code, body = err.code, err.status()
        payload = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for text in warnings:
            self.send_header("Warning", "299 - " + json.dumps(text))
        self.end_headers()
        self.wfile.write(payload)

    def _route(
        self, method: str, path: str, query: dict[str, str], raw: bytes, warnings: list[str]
    ) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if method == "GET":
            static = self._static(parts)
            if static is not None:
                return 200, static
        if not parts or parts[0] not in ("api", "apis"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        res, ns, name, sub = _resource_path(parts)
        if res.kind == "Namespace" and name is None and ns is not None and method != "POST":
            name, ns = ns, None  # /api/v1/namespaces/<name>
        if sub is not None and sub != "status":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = (ns or "") if res.namespaced else ""
        store = self.api.store
        strict = query.get("fieldValidation", "Warn") == "Strict"
        dry = query.get("dryRun") == "All"
        if method == "GET":
            if query.get("watch") in ("true", "1"):
                raise ApiError(405, "MethodNotAllowed", "watch is not supported by this server")
            if name is not None:
                objects = [store.get(res, ns, name)]
            else:
                ns_filter = ns if (res.namespaced and ns) else None
                objects = store.list(
                    res, ns_filter, query.get("labelSelector", ""), query.get("fieldSelector", "")
                )
            rv = str(1000 + store.revision)
            if "as=Table" in (self.headers.get("Accept") or ""):
                return 200, tables.table(res, objects, query.get("includeObject", "Metadata"), rv)
            if name is not None:
                return 200, objects[0]
            return 200, {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": rv},
                "items": objects,
            }
        if sub == "status":
            raise ApiError(405, "MethodNotAllowed", "the status subresource is read-only here")
        if method == "DELETE":
            if name is None:
                raise ApiError(405, "MethodNotAllowed", "deletecollection is not supported")
            return 200, store.delete(res, ns, name, dry_run=dry)
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        body = self._body(raw, ctype)
        if method == "POST" and name is None:
            return 201, store.create(res, ns, body, strict=strict, dry_run=dry, warnings=warnings)
        if method == "PUT" and name is not None:
            return 200, store.update(
                res, ns, name, body, strict=strict, dry_run=dry, warnings=warnings
            )
        if method == "PATCH" and name is not None:
            kind = PATCH_TYPES.get(ctype)
            if kind is None:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted "
                    f"media types include: {', '.join(PATCH_TYPES)}",
                )
            existed = self._exists(res, ns, name)
            manager = query.get("fieldManager", "")
            obj = store.patch(
                res,
                ns,
                name,
                kind,
                body,
                strict=strict,
                dry_run=dry,
                manager=manager,
                warnings=warnings,
            )
            return (201 if kind == "apply" and not existed else 200), obj
        raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on {path}")

    def _exists(self, res: Resource, ns: str, name: str) -> bool:
        try:
            self.api.store.get(res, ns, name)
        except ApiError:
            return False
        return True

    def _static(self, parts: list[str]) -> Any | None:
        host = self.headers.get("Host", "127.0.0.1")
        if parts == ["version"]:
            return discovery.VERSION_INFO
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return "ok"
        if parts == ["api"]:
            return discovery.api_versions(host)
        if parts == ["apis"]:
            return discovery.api_groups()
        if parts == ["api", "v1"]:
            return discovery.resource_list("", "v1")
        if len(parts) == 3 and parts[0] == "apis":
            found = discovery.resource_list(parts[1], parts[2])
            if found is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return found
        if parts == ["openapi", "v3"]:
            return discovery.openapi_index()
        if parts[:2] == ["openapi", "v3"]:
            rest = parts[2:]
            if rest[:1] == ["api"] and len(rest) == 2:
                return discovery.openapi_document("", rest[1])
            if rest[:1] == ["apis"] and len(rest) == 3:
                return discovery.openapi_document(rest[1], rest[2])
        if parts[:1] == ["openapi"]:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return None

    @staticmethod
    def _body(raw: bytes, ctype: str) -> Any:
        try:
            if ctype.endswith("yaml"):
                return yaml.safe_load(raw.decode() or "{}")
            return json.loads(raw.decode() or "{}")
        except (ValueError, yaml.YAMLError) as err:
            raise bad_request(f"error decoding request body: {err}") from None
