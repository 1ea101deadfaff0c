"""The API server's object store: create, get, list, update, patch, delete with versions.

Objects are plain JSON dicts. Every write runs strict decoding, defaulting, validation
and the access rules (NetworkPolicies fully writable; other kinds: labels and
annotations only; derived kinds read-only), sets the metadata the server owns (uid,
creationTimestamp, generation, resourceVersion: never a client's), refuses objects over
MAX_OBJECT_BYTES, and calls the write hooks (the data plane recompiles enforcement there)
before the request is answered. Patches are computed outside the lock. A namespace's
`kubernetes.io/metadata.name` label is its name, as kube-apiserver forces it.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

from emulators.k8s import schema, writes
from emulators.k8s.derived import derived_objects
from emulators.k8s.resources import (
    BY_KIND,
    BY_PLURAL,
    ApiError,
    Resource,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
)
from emulators.k8s.selectors import parse, parse_fields

Key = tuple[str, str, str]  # (plural, namespace or "", name)
Hook = Callable[[Resource], None]


def _warn(warnings: list[str] | None, unknown: list[str]) -> None:
    if warnings is not None:
        warnings += [f'unknown field "{u}"' for u in unknown]


MAX_OBJECT_BYTES = 3 << 19  # 1.5 MiB, etcd's default --max-request-bytes
PATCH_ATTEMPTS = 5  # a patch recomputed on objects written meanwhile, then 409


class Store:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.objects: dict[Key, dict[str, Any]] = {}
        self.revision = 0  # bumped by every successful write
        self.hooks: list[Hook] = []
        # Checks of the whole would-be object set, run before a write is stored (the data
        # plane refuses what it could not enforce); each raises ApiError to refuse.
        self.validators: list[Callable[[list[dict[str, Any]]], None]] = []
        self._applied: dict[tuple[Key, str], dict[str, Any]] = {}  # server-side apply owners

    # -- loading (the cluster's own writes, not the agent's) ---------------------------------
    def load(
        self,
        objects: Iterable[dict[str, Any]],
        *,
        replace_kind: str | None = None,
        last_applied: bool = False,
        hooks: bool = True,
    ) -> None:
        """Put objects in place as the system (no access rules), e.g. at bring-up or reset;
        with `replace_kind`, every object of that kind not in `objects` is dropped first;
        with `last_applied`, each carries the annotation `kubectl apply` would have left."""
        objects = list(objects)
        with self.lock:
            if replace_kind is not None:
                plural = BY_KIND[replace_kind].plural
                for key in [k for k in self.objects if k[0] == plural]:
                    del self.objects[key]
                self._applied = {k: v for k, v in self._applied.items() if k[0][0] != plural}
            for obj in objects:
                res = BY_KIND[obj["kind"]]
                obj = copy.deepcopy(obj)
                if last_applied:
                    writes.annotate_applied(obj)
                if res.kind == "NetworkPolicy":
                    schema.default_network_policy(obj)
                if res.kind == "Namespace":
                    writes.name_label(obj)
                writes.own_metadata(res, obj, None, system=True)
                self._stamp(obj)
                self.objects[self._key(res, obj["metadata"].get("namespace", ""), obj)] = obj
            self.revision += 1
            kinds = {o["kind"] for o in objects} | ({replace_kind} if replace_kind else set())
            if kinds and hooks:  # one hook call for the whole load (hooks recompile everything)
                self._run_hooks(
                    BY_KIND["NetworkPolicy" if "NetworkPolicy" in kinds else min(kinds)]
                )

    def clear(self) -> None:
        """Drop every object (without hooks; a `load` follows)."""
        with self.lock:
            self.objects.clear()
            self._applied.clear()

    def checkpoint(self) -> tuple[dict[Key, dict[str, Any]], dict[Any, dict[str, Any]]]:
        """The objects and apply owners now, for `restore` (a write replaces a stored object,
        never changes it: no copy needed)."""
        with self.lock:
            return dict(self.objects), dict(self._applied)

    def restore(self, saved: tuple[dict[Key, dict[str, Any]], dict[Any, dict[str, Any]]]) -> None:
        with self.lock:  # no hooks: the caller enforces what it put back
            self.objects, self._applied = dict(saved[0]), dict(saved[1])
            self.revision += 1

    def all_objects(self) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(o) for o in self.objects.values()]

    # -- reads -------------------------------------------------------------------------------
    def get(self, res: Resource, ns: str, name: str) -> dict[str, Any]:
        with self.lock:
            if res.derived:
                for obj in self._derived(res, ns):
                    if obj["metadata"]["name"] == name:
                        return obj
                raise not_found(res, name)
            obj = self.objects.get(self._key(res, ns, name))
            if obj is None:
                raise not_found(res, name)
            return copy.deepcopy(obj)

    def list(
        self, res: Resource, ns: str | None, labels: str = "", fields: str = ""
    ) -> list[dict[str, Any]]:
        """Objects of `res` in `ns` (None: all namespaces) matching the selectors."""
        try:
            label_ok = parse(labels) if labels else (lambda _: True)
            wanted = parse_fields(fields) if fields else {}
        except ValueError as err:
            raise bad_request(str(err)) from None
        with self.lock:
            if res.derived:
                pool = self._derived(res, ns)
            else:
                pool = [
                    copy.deepcopy(o)
                    for (plural, o_ns, _), o in sorted(self.objects.items())
                    if plural == res.plural and (ns is None or not res.namespaced or o_ns == ns)
                ]
        out = []
        for obj in pool:
            meta = obj["metadata"]
            values = {
                "metadata.name": meta["name"],
                "metadata.namespace": meta.get("namespace", ""),
            }
            if not label_ok(meta.get("labels") or {}):
                continue
            if any(values.get(k, obj.get(k)) != v for k, v in wanted.items()):
                continue
            out.append(obj)
        return out

    def _derived(self, res: Resource, ns: str | None) -> list[dict[str, Any]]:
        return [
            o
            for o in derived_objects(res, self.objects.values())
            if ns is None or o["metadata"].get("namespace") == ns
        ]

    # -- writes ------------------------------------------------------------------------------
    # Decoding, patching and validating a body run outside the lock (they depend on the body
    # and one snapshot only); the lock is held to check the snapshot is still current and to
    # store, so a slow request never holds up another request or a reset.
    def create(
        self,
        res: Resource,
        ns: str,
        body: Any,
        *,
        strict: bool = True,
        dry_run: bool = False,
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        self._check_access(res, "create", ns)
        obj = copy.deepcopy(body)
        _warn(warnings, schema.decode(res, obj, strict, prune=True))
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") not in (None, "", ns):
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta["namespace"] = ns
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        self._bounded(res, obj)
        self._prepare(res, obj)
        with self.lock:
            if res.namespaced and ("namespaces", "", ns) not in self.objects:
                raise not_found(BY_PLURAL["namespaces"], ns)
            if self._key(res, ns, obj) in self.objects:
                raise already_exists(res, meta["name"])
            writes.own_metadata(res, obj, None)
            self._stamp(obj)
            return self._commit(res, ns, obj, dry_run)

    def update(
        self,
        res: Resource,
        ns: str,
        name: str,
        body: Any,
        *,
        strict: bool = True,
        dry_run: bool = False,
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        self._check_access(res, "update", ns)
        obj = copy.deepcopy(body)
        _warn(warnings, schema.decode(res, obj, strict, prune=True))
        meta = obj.setdefault("metadata", {})
        if meta.get("name") not in (None, name):
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on "
                f"the URL ({name})"
            )
        meta["name"] = name
        if res.namespaced:
            meta["namespace"] = ns
        self._bounded(res, obj)
        with self.lock:
            old = self.get(res, ns, name)
            rv = meta.get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)
            return self._replace(res, ns, old, obj, dry_run)

    def patch(
        self,
        res: Resource,
        ns: str,
        name: str,
        kind: str,
        body: Any,
        *,
        strict: bool = True,
        dry_run: bool = False,
        manager: str = "",
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        """kind: json | merge | strategic | apply (server-side apply). The patch is computed
        on a snapshot outside the lock; if the object changed meanwhile, it is computed
        again on the new version (as kube-apiserver retries a patch on a conflict)."""
        self._check_access(res, "patch", ns)
        meta = body.get("metadata") if isinstance(body, dict) else None
        rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
        applied: dict[str, Any] | None = None
        if kind == "apply":
            applied = copy.deepcopy(body)
            _warn(warnings, schema.decode(res, applied, strict, prune=True))
            applied.setdefault("metadata", {})["name"] = name
        key = (res.plural, ns if res.namespaced else "", name)
        for _ in range(PATCH_ATTEMPTS):
            with self.lock:
                exists = key in self.objects
                old = self.get(res, ns, name) if exists or applied is None else {}
                before = self._applied.get((key, manager), {})
            if applied is not None and not exists:
                created = self.create(res, ns, applied, strict=strict, dry_run=dry_run)
                if not dry_run:
                    with self.lock:
                        self._applied[(key, manager)] = applied
                return created
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)  # a resourceVersion in a patch is a precondition
            seen: list[str] = []
            if applied is not None:
                new = writes.server_side_apply(old, applied, before)
                schema.decode(res, new, strict=False, prune=True)
            else:
                new = writes.patched(old, kind, body)
                _warn(seen, schema.decode(res, new, strict, prune=True))  # 400 unless an object
                if (new.get("metadata") or {}).get("name") != name:
                    raise bad_request("the patch may not change the object's name")
            self._bounded(res, new)  # before the lock: validating a huge object takes a while
            with self.lock:
                current = self.objects.get(key)
                if current is None:
                    raise not_found(res, name)
                if current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
                    continue  # written meanwhile: patch the new version
                result = self._replace(res, ns, old, new, dry_run)
                if applied is not None and not dry_run:
                    self._applied[(key, manager)] = applied
                if warnings is not None:
                    warnings += seen
                return result
        raise conflict(res, name)

    def delete(self, res: Resource, ns: str, name: str, *, dry_run: bool = False) -> dict[str, Any]:
        with self.lock:
            self._check_access(res, "delete", ns)
            old = self.get(res, ns, name)
            key = self._key(res, ns, old)
            self._validate({k: v for k, v in self.objects.items() if k != key})
            if not dry_run:
                previous = self.objects.pop(key)
                self.revision += 1
                self._enforce_or_undo(res, key, previous)
                self._applied = {k: v for k, v in self._applied.items() if k[0] != key}
            return old

    # -- internals ---------------------------------------------------------------------------
    def _replace(
        self, res: Resource, ns: str, old: dict[str, Any], new: dict[str, Any], dry_run: bool
    ) -> dict[str, Any]:
        new.setdefault("metadata", {})
        new["apiVersion"], new["kind"] = res.api_version, res.kind
        writes.own_metadata(res, new, old)
        self._prepare(res, new)
        if not res.writable:
            schema.validate_metadata_only(res, old, new)
            new["status"] = old.get("status")
            if new["status"] is None:
                new.pop("status")
        self._stamp(new)
        return self._commit(res, ns, new, dry_run)

    def _prepare(self, res: Resource, obj: dict[str, Any]) -> None:
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        if res.kind == "NetworkPolicy":
            schema.default_network_policy(obj)
            schema.validate_network_policy(res, obj)
        else:
            causes = schema.validate_name(obj["metadata"].get("name"))
            if causes:
                raise invalid(res, str(obj["metadata"].get("name", "")), causes)
            if res.kind == "Namespace":
                writes.name_label(obj)

    def _stamp(self, obj: dict[str, Any]) -> None:
        meta = obj.setdefault("metadata", {})
        self.revision += 1
        meta["resourceVersion"] = str(1000 + self.revision)
        for key in ("labels", "annotations"):
            if meta.get(key) == {}:
                del meta[key]

    def _commit(self, res: Resource, ns: str, obj: dict[str, Any], dry_run: bool):
        key = self._key(res, ns, obj)
        self._bounded(res, obj)
        self._validate({**self.objects, key: obj})
        if not dry_run:
            previous = self.objects.get(key)
            self.objects[key] = copy.deepcopy(obj)
            self._enforce_or_undo(res, key, previous)
        return obj

    def _enforce_or_undo(self, res: Resource, key: Key, previous: dict[str, Any] | None) -> None:
        """Run the write hooks after `key` was written; if they fail (the data plane refused
        what the validators let through), put `previous` back (None: no object), enforce
        that again and refuse the write (422), so no write leaves the cluster unable to
        enforce the next one. If enforcing the previous objects fails too, that stands."""
        try:
            self._run_hooks(res)
        except ApiError as err:
            if previous is None:
                self.objects.pop(key, None)
            else:
                self.objects[key] = previous
            self.revision += 1
            self._run_hooks(res)
            raise ApiError(
                422, "Invalid", f"the data plane cannot enforce this change: {err}"
            ) from None

    @staticmethod
    def _bounded(res: Resource, obj: dict[str, Any]) -> None:
        """Refuse an object larger than etcd stores (a patch can grow one past its body)."""
        size = len(json.dumps(obj, separators=(",", ":")))
        if size > MAX_OBJECT_BYTES:
            raise ApiError(
                413,
                "RequestEntityTooLarge",
                f"etcdserver: request is too large: {res.qualified} "
                f'"{(obj.get("metadata") or {}).get("name", "")}" would be {size} bytes; the '
                f"limit is {MAX_OBJECT_BYTES}",
            )

    def _validate(self, objects: dict[Key, dict[str, Any]]) -> None:
        for check in self.validators:
            check(list(objects.values()))

    def _run_hooks(self, res: Resource) -> None:
        for hook in self.hooks:
            hook(res)

    @staticmethod
    def _key(res: Resource, ns: str, obj_or_name: dict[str, Any] | str) -> Key:
        name = obj_or_name if isinstance(obj_or_name, str) else obj_or_name["metadata"]["name"]
        return (res.plural, ns if res.namespaced else "", name)

    @staticmethod
    def _check_access(res: Resource, verb: str, ns: str) -> None:
        if res.derived or (not res.writable and verb in ("create", "delete")):
            raise forbidden(res, verb, ns)
