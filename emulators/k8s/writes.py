"""What a write stores, before the store checks it against the others: a patch applied to
the current object (JSON, merge, strategic, server-side apply) and the metadata the server
owns set as kube-apiserver sets it, whatever the client sent.

Nothing here holds the store's lock: a patch is computed on a snapshot (store.Store.patch).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from emulators.k8s import patch as patches
from emulators.k8s import schema
from emulators.k8s.resources import ApiError, Resource, invalid


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
NAME_LABEL = "kubernetes.io/metadata.name"
GENERATION_KINDS = {"NetworkPolicy", "Deployment"}
# Metadata the server sets on create and keeps on update, whatever a client sends.
OWNED = (
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_PATCH_REASONS = {400: "BadRequest", 413: "RequestEntityTooLarge", 422: "Invalid"}


def own_metadata(
    res: Resource, obj: dict[str, Any], old: dict[str, Any] | None, system: bool = False
) -> None:
    """Set the metadata the server owns, as kube-apiserver does whatever a client sent: uid,
    creationTimestamp and generation on create (the system's own objects may bring theirs),
    kept from `old` on update (generation + 1 when the spec changed; a different uid or a
    deletion field is refused as immutable); selfLink and managedFields are dropped (this
    server tracks no field managers)."""
    meta = obj.setdefault("metadata", {})
    for field_name in ("selfLink", "managedFields"):
        meta.pop(field_name, None)
    if old is None:
        given = dict(meta) if system else {}
        for field_name in OWNED:
            meta.pop(field_name, None)
        meta["uid"] = given.get("uid") or str(uuid.uuid4())
        meta["creationTimestamp"] = given.get("creationTimestamp") or now()
        if res.kind in GENERATION_KINDS:
            meta["generation"] = given.get("generation") or 1
        return
    before = old["metadata"]
    immutable = "field is immutable"
    by_deletion = "field is immutable; may only be changed via deletion"
    causes = [
        schema.invalid_value(f"metadata.{field_name}", meta[field_name], detail)
        for field_name, detail in (
            ("uid", immutable),
            ("deletionTimestamp", by_deletion),
            ("deletionGracePeriodSeconds", by_deletion),
        )
        if meta.get(field_name) not in (None, "", before.get(field_name))
    ]
    if causes:
        raise invalid(res, str(before.get("name", "")), causes)
    for field_name in OWNED:
        meta.pop(field_name, None)
        if field_name in before:
            meta[field_name] = before[field_name]
    if res.kind in GENERATION_KINDS and obj.get("spec") != old.get("spec"):
        meta["generation"] = int(before.get("generation") or 1) + 1


def name_label(namespace: dict[str, Any]) -> None:
    """kube-apiserver sets `kubernetes.io/metadata.name` to a namespace's name on every
    create, update and patch (defaulting and the strategy's Canonicalize), whatever the
    client sent: a write that removes or changes it succeeds and leaves it as it was."""
    meta = namespace["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), NAME_LABEL: meta["name"]}


def annotate_applied(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    shown = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"annotations": {}, "name": meta["name"], "namespace": meta.get("namespace")},
        **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")},
    }
    text = json.dumps(shown, sort_keys=True, separators=(",", ":")) + "\n"
    meta.setdefault("annotations", {})[LAST_APPLIED] = text


def _patch_error(err: patches.PatchError) -> ApiError:
    return ApiError(err.code, _PATCH_REASONS.get(err.code, "Invalid"), str(err))


def patched(old: dict[str, Any], kind: str, body: Any) -> Any:
    """`old` patched by `body` (json | merge | strategic); a patch that does not apply is
    the API server's 400, 413 or 422."""
    try:
        if kind == "json":
            return patches.json_patch(old, body)
        if kind == "merge":
            return patches.merge_patch(old, body)
        return patches.strategic_merge_patch(old, body)
    except patches.PatchError as err:
        raise _patch_error(err) from None


def server_side_apply(
    old: dict[str, Any], applied: dict[str, Any], before: dict[str, Any]
) -> dict[str, Any]:
    """`old` with `applied` merged in, less the fields the same manager applied `before`
    and no longer applies (top-level fields of spec and data, labels, annotations)."""
    try:
        new = patches.strategic_merge_patch(old, applied)
    except patches.PatchError as err:
        raise _patch_error(err) from None
    for section in ("spec", "data"):
        was, now_given, target = before.get(section), applied.get(section), new.get(section)
        if isinstance(was, dict) and isinstance(target, dict):
            kept = now_given if isinstance(now_given, dict) else {}
            for field_name in [f for f in was if f not in kept]:
                target.pop(field_name, None)
    meta_before, meta_applied = before.get("metadata"), applied.get("metadata")
    meta_new = new.get("metadata")
    for field_name in ("labels", "annotations"):
        was = meta_before.get(field_name) if isinstance(meta_before, dict) else None
        given = meta_applied.get(field_name) if isinstance(meta_applied, dict) else None
        target = meta_new.get(field_name) if isinstance(meta_new, dict) else None
        if isinstance(was, dict) and isinstance(target, dict):
            kept = given if isinstance(given, dict) else {}
            for label in [k for k in was if k not in kept]:
                target.pop(label, None)
    return new
