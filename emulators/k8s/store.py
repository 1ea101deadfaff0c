"""The API server's object store: create, get, list, update, patch, delete with versions.

Objects are plain JSON dicts. Every write runs strict decoding, defaulting, validation
and the access rules (NetworkPolicies fully writable; other kinds: labels and
annotations only; derived kinds read-only), bumps `resourceVersion`, and calls the write
hooks (the data plane recompiles enforcement there) before the request is answered.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from emulators.k8s import patch as patches
from emulators.k8s import schema
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
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _warn(warnings: list[str] | None, unknown: list[str]) -> None:
    if warnings is not None:
        warnings += [f'unknown field "{u}"' for u in unknown]


def _annotate_applied(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    shown = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"annotations": {}, "name": meta["name"], "namespace": meta.get("namespace")},
        **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")},
    }
    text = json.dumps(shown, sort_keys=True, separators=(",", ":")) + "\n"
    meta.setdefault("annotations", {})[LAST_APPLIED] = text


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.objects: dict[Key, dict[str, Any]] = {}
        self.revision = 0  # bumped by every successful write
        self.hooks: list[Hook] = []
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
                    _annotate_applied(obj)
                if res.kind == "NetworkPolicy":
                    schema.default_network_policy(obj)
                self._stamp(res, obj, None)
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
        with self.lock:
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
                if ("namespaces", "", ns) not in self.objects:
                    raise not_found(BY_PLURAL["namespaces"], ns)
            self._prepare(res, obj)
            if self._key(res, ns, obj) in self.objects:
                raise already_exists(res, meta["name"])
            self._stamp(res, obj, None)
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
        with self.lock:
            self._check_access(res, "update", ns)
            obj = copy.deepcopy(body)
            _warn(warnings, schema.decode(res, obj, strict, prune=True))
            old = self.get(res, ns, name)
            meta = obj.setdefault("metadata", {})
            if meta.get("name") not in (None, name):
                raise bad_request(
                    f"the name of the object ({meta.get('name')}) does not match the name on "
                    f"the URL ({name})"
                )
            meta["name"] = name
            if res.namespaced:
                meta["namespace"] = ns
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
        """kind: json | merge | strategic | apply (server-side apply)."""
        with self.lock:
            self._check_access(res, "patch", ns)
            rv = (
                (body.get("metadata") or {}).get("resourceVersion")
                if isinstance(body, dict)
                else None
            )
            if kind == "apply":
                return self._server_side_apply(
                    res, ns, name, body, strict, dry_run, manager, warnings
                )
            old = self.get(res, ns, name)
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)  # a resourceVersion in a patch is a precondition
            try:
                if kind == "json":
                    new = patches.json_patch(old, body)
                elif kind == "merge":
                    new = patches.merge_patch(old, body)
                else:
                    new = patches.strategic_merge_patch(old, body)
            except patches.PatchError as err:
                raise ApiError(422, "Invalid", str(err)) from None
            if not isinstance(new, dict) or new.get("metadata", {}).get("name") != name:
                raise bad_request("the patch may not change the object's name")
            _warn(warnings, schema.decode(res, new, strict, prune=True))
            return self._replace(res, ns, old, new, dry_run)

    def delete(self, res: Resource, ns: str, name: str, *, dry_run: bool = False) -> dict[str, Any]:
        with self.lock:
            self._check_access(res, "delete", ns)
            old = self.get(res, ns, name)
            if not dry_run:
                key = self._key(res, ns, old)
                del self.objects[key]
                self._applied = {k: v for k, v in self._applied.items() if k[0] != key}
                self.revision += 1
                self._run_hooks(res)
            return old

    # -- internals ---------------------------------------------------------------------------
    def _server_side_apply(
        self,
        res: Resource,
        ns: str,
        name: str,
        body: Any,
        strict: bool,
        dry_run: bool,
        manager: str,
        warnings: list[str] | None,
    ) -> dict[str, Any]:
        applied = copy.deepcopy(body)
        _warn(warnings, schema.decode(res, applied, strict, prune=True))
        applied.setdefault("metadata", {})["name"] = name
        key = (res.plural, ns if res.namespaced else "", name)
        try:
            old = self.get(res, ns, name)
        except ApiError:
            created = self.create(res, ns, applied, strict=strict, dry_run=dry_run)
            if not dry_run:
                self._applied[(key, manager)] = applied
            return created
        new = patches.strategic_merge_patch(old, applied)
        before = self._applied.get((key, manager), {})
        for section in ("spec", "data"):
            for field_name in before.get(section) or {}:
                if field_name not in (applied.get(section) or {}):
                    (new.get(section) or {}).pop(field_name, None)
        for field_name in ("labels", "annotations"):
            gone = set(before.get("metadata", {}).get(field_name) or {}) - set(
                applied["metadata"].get(field_name) or {}
            )
            for label in gone:
                (new["metadata"].get(field_name) or {}).pop(label, None)
        result = self._replace(res, ns, old, new, dry_run)
        if not dry_run:
            self._applied[(key, manager)] = applied
        return result

    def _replace(
        self, res: Resource, ns: str, old: dict[str, Any], new: dict[str, Any], dry_run: bool
    ) -> dict[str, Any]:
        new.setdefault("metadata", {})
        for field_name in ("uid", "creationTimestamp"):
            new["metadata"][field_name] = old["metadata"][field_name]
        new["apiVersion"], new["kind"] = res.api_version, res.kind
        self._prepare(res, new)
        if not res.writable:
            schema.validate_metadata_only(res, old, new)
            new["status"] = old.get("status")
            if new["status"] is None:
                new.pop("status")
        if res.kind == "NetworkPolicy" and new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
        self._stamp(res, new, old)
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

    def _stamp(self, res: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj.setdefault("metadata", {})
        self.revision += 1
        meta["resourceVersion"] = str(1000 + self.revision)
        if old is None:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now())
            if res.kind == "NetworkPolicy" or res.kind == "Deployment":
                meta.setdefault("generation", 1)
        for key in ("labels", "annotations"):
            if meta.get(key) == {}:
                del meta[key]

    def _commit(self, res: Resource, ns: str, obj: dict[str, Any], dry_run: bool):
        if not dry_run:
            self.objects[self._key(res, ns, obj)] = copy.deepcopy(obj)
            self._run_hooks(res)
        return obj

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
