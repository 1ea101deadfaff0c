"""The emulated kube-apiserver: a threaded HTTP server on a random loopback port.

Serves discovery, the OpenAPI v3 index, and REST for the kinds in `resources`, with
Tables for `kubectl get`, label and field selectors, `dryRun`, `fieldValidation`
(Strict / Warn / Ignore), and the four patch types. Errors are `metav1.Status` bodies.
Every request must carry the cluster's token (401 otherwise, as a real server answers):
kubectl sends bearer tokens only over TLS, so the token is the first segment of the
server's URL path (`http://127.0.0.1:<port>/<token>`, a prefix client-go keeps on every
request, as behind an API proxy). A body larger than MAX_BODY_BYTES is refused (413)
before it is read. A request that meets a bug of ours is answered with a 500 Status (as
kube-apiserver answers a panic) and recorded in `internal_errors`, never a dropped
connection.

A request a client sent is served to the end even if the client is gone (a killed kubectl's
write still lands, as on a real server); `wait_idle()` returns once every connection made
so far, accepted or still in the listen queue, has been served and closed, so the caller
can measure the cluster after all of a command's writes.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from emulators.k8s import discovery, tables
from emulators.k8s.patch import MAX_DEPTH, depth_of
from emulators.k8s.resources import BY_PLURAL, ApiError, Resource, bad_request
from emulators.k8s.store import Store

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}


MAX_BODY_BYTES = 4 << 20
JSON = "application/json"
log = logging.getLogger(__name__)
_TCPI_UNACKED = 24  # offset in struct tcp_info; for a listening socket, its accept queue


class _Server(ThreadingHTTPServer):
    """Counts each connection from before accept() until its thread has shut it down."""

    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.open = 0
        self.changed = threading.Condition()
        super().__init__(*args, **kwargs)

    def get_request(self) -> tuple[socket.socket, Any]:
        with self.changed:
            self.open += 1  # before accept() takes it off the listen queue
        try:
            return super().get_request()
        except BaseException:
            self._closed()
            raise

    def shutdown_request(self, request: Any) -> None:
        try:
            super().shutdown_request(request)
        finally:
            self._closed()

    def _closed(self) -> None:
        with self.changed:
            self.open -= 1
            self.changed.notify_all()

    def queued(self) -> int:
        """Connections in the listen queue, not yet accepted."""
        info = self.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        return struct.unpack_from("I", info, _TCPI_UNACKED)[0]


class ApiServer:
    """`with ApiServer(store, token) as server:` serves on `server.url` until the block ends,
    on a loopback port of its own or on `sock` (a listening socket, e.g. opened inside the
    cluster's own network namespace)."""

    def __init__(
        self, store: Store, token: str, host: str = "127.0.0.1", sock: socket.socket | None = None
    ) -> None:
        self.store = store
        self.token = token
        self.requests = 0
        self.internal_errors: list[str] = []  # requests that met a bug of ours (answered 500)
        handler = type("Handler", (_Handler,), {"api": self})
        self._http = _Server((host, 0), handler, bind_and_activate=sock is None)
        if sock is not None:
            self._http.socket.close()
            self._http.socket = sock
            self._http.server_address = sock.getsockname()
        self.url = f"http://{host}:{self._http.server_address[1]}/{token}"
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

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no connection is queued, open or being served (call it once the
        clients are gone: a new connection starts another wait); False on timeout."""
        deadline = time.monotonic() + timeout_s
        http = self._http
        while True:
            # The queue first: a connection leaves it only after `open` counted it.
            queued = http.queued()
            with http.changed:
                if not queued and not http.open:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                http.changed.wait(min(left, 0.005 if queued else 0.5))

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
    # Headers and body go out in two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK of the headers (40 ms on loopback), per request.
    disable_nagle_algorithm = True

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
        warnings: list[str] = []
        try:
            path = self._authorize(url.path)
            raw = self._read_body()
            code, body = self._route(method, path, query, raw, warnings)
        except ApiError as err:
            code, body = err.code, err.status()
            self.close_connection = code in (400, 413)  # a body may be left unread
        except Exception as err:  # a bug of ours this request met: answer, record, go on
            where = f"{method} {'/'.join(url.path.split('/')[2:])}"
            self.api.internal_errors.append(f"{where}: {type(err).__name__}: {err}")
            log.exception("internal error serving %s", where)
            why = f"Internal error occurred: {type(err).__name__} serving {where}"
            code, body = 500, ApiError(500, "InternalError", why).status()
            self.close_connection = True
        binary = isinstance(body, bytes)  # the OpenAPI v2 document
        payload = body if binary else json.dumps(body).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", discovery.OPENAPI_V2_TYPE if binary else JSON)
            self.send_header("Content-Length", str(len(payload)))
            for text in warnings:
                self.send_header("Warning", "299 - " + json.dumps(text))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client is gone (a killed kubectl); what it asked for is done
            self.close_connection = True

    def _authorize(self, path: str) -> str:
        """The request path after the token; 401 when the token is not there."""
        _, _, rest = path.partition("/")
        sent, slash, rest = rest.partition("/")
        if not hmac.compare_digest(sent.encode(), self.api.token.encode()):
            raise ApiError(401, "Unauthorized", "Unauthorized")
        return slash + rest

    def _read_body(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise bad_request("the Content-Length header is not a number") from None
        if length > MAX_BODY_BYTES or length < 0:
            raise ApiError(
                413,
                "RequestEntityTooLarge",
                f"the request body is limited to {MAX_BODY_BYTES} bytes",
            )
        return self.rfile.read(length) if length else b""

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
            if res.kind == "Pod":  # the task is the policies; workloads stay as they are
                raise ApiError(
                    403,
                    "Forbidden",
                    f'pods "{name}" is forbidden: deleting pods is not allowed in this task',
                )
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
        if parts == ["openapi", "v2"]:
            return discovery.openapi_v2()
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
        """The request body as JSON values only, as Go's decoders would read it: YAML is
        read without aliases (a few bytes of them expand exponentially) and without
        timestamps, non-string keys become strings as sigs.k8s.io/yaml makes them, and
        NaN, Infinity and numbers out of float64's range are refused. Bytes that are not
        UTF-8 are refused in YAML (go-yaml does) and read as U+FFFD in JSON (encoding/json
        does)."""
        try:
            if ctype.endswith("yaml"):
                loaded = yaml.load(raw.decode() or "{}", Loader=_YamlLoader)
                body = json.loads(json.dumps(loaded, allow_nan=False), parse_constant=_no_constant)
            else:
                body = json.loads(
                    raw.decode("utf-8", errors="replace") or "{}",
                    parse_constant=_no_constant,
                    parse_float=_finite_float,
                )
        except (ValueError, TypeError, yaml.YAMLError) as err:
            raise bad_request(f"error decoding request body: {str(err)[:300]}") from None
        except RecursionError:  # deeper than the decoder goes
            raise bad_request(
                f"error decoding request body: nested deeper than {MAX_DEPTH}"
            ) from None
        if depth_of(body) > MAX_DEPTH:
            raise bad_request(f"error decoding request body: nested deeper than {MAX_DEPTH}")
        return body


def _no_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[:1]}' looking for beginning of value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"json: cannot unmarshal number {text[:40]} into Go value of type float64")
    return value


class _YamlLoader(yaml.SafeLoader):
    """SafeLoader without aliases and with timestamps read as strings."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases are not accepted", event.start_mark
            )
        return super().compose_node(parent, index)


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
