"""The three patch formats of `kubectl patch` / `apply` / `edit`: JSON patch (RFC 6902),
JSON merge patch (RFC 7386) and strategic merge patch (lists merged by key where the
type's schema names one, `$patch` / `$setElementOrder` / `$retainKeys` directives).
"""

from __future__ import annotations

import copy
from typing import Any

# Lists merged by key in strategic merge patches: path of field names (list indices
# skipped) -> merge key. Every other list is replaced whole (NetworkPolicy has none).
MERGE_KEYS: dict[tuple[str, ...], str] = {
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "containers", "ports"): "containerPort",
    ("spec", "containers", "env"): "name",
    ("spec", "volumes"): "name",
    ("spec", "template", "spec", "containers"): "name",
    ("spec", "template", "spec", "containers", "ports"): "containerPort",
    ("spec", "template", "spec", "containers", "env"): "name",
    ("spec", "template", "spec", "volumes"): "name",
    ("spec", "ports"): "port",
    ("metadata", "ownerReferences"): "uid",
}
PRIMITIVE_MERGE_LISTS = {("metadata", "finalizers")}


class PatchError(ValueError):
    """A patch that cannot be applied; the message is the API server's."""


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 patch; returns a new document."""
    if not isinstance(ops, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    out = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("Unexpected kind: <nil>")
        kind = op["op"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"missing value for operation {kind!r}")
        if kind == "copy" or kind == "move":
            value = copy.deepcopy(_get(out, _pointer(op.get("from", ""))))
            if kind == "move":
                out = _remove(out, _pointer(op.get("from", "")))
            out = _add(out, _pointer(op.get("path", "")), value)
        elif kind == "add":
            out = _add(out, _pointer(op.get("path", "")), copy.deepcopy(op["value"]))
        elif kind == "remove":
            out = _remove(out, _pointer(op.get("path", "")))
        elif kind == "replace":
            path = _pointer(op.get("path", ""))
            _get(out, path)  # must exist
            out = (
                _add(_remove(out, path), path, copy.deepcopy(op["value"])) if path else op["value"]
            )
        elif kind == "test":
            if _get(out, _pointer(op.get("path", ""))) != op["value"]:
                raise PatchError("testing value failed")
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"add operation does not apply: doc is missing path: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, path: list[str]) -> Any:
    node = doc
    for part in path[:-1]:
        node = _child(node, part, path)
    return node


def _child(node: Any, part: str, path: list[str]) -> Any:
    where = "/" + "/".join(path)
    if isinstance(node, dict):
        if part not in node:
            raise PatchError(f"doc is missing path: {where!r}: missing value")
        return node[part]
    if isinstance(node, list):
        if not part.isdigit() or int(part) >= len(node):
            raise PatchError(f"doc is missing path: {where!r}: missing value")
        return node[int(part)]
    raise PatchError(f"doc is missing path: {where!r}: missing value")


def _get(doc: Any, path: list[str]) -> Any:
    node = doc
    for part in path:
        node = _child(node, part, path)
    return node


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent, last = _parent(doc, path), path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        index = len(parent) if last == "-" else (int(last) if last.isdigit() else -1)
        if not 0 <= index <= len(parent):
            raise PatchError(f"add operation does not apply: doc is missing path: {path!r}")
        parent.insert(index, value)
    else:
        raise PatchError(f"add operation does not apply: doc is missing path: {path!r}")
    return doc


def _remove(doc: Any, path: list[str]) -> Any:
    if not path:
        return None
    parent, last = _parent(doc, path), path[-1]
    _child(parent, last, path)
    if isinstance(parent, dict):
        del parent[last]
    else:
        del parent[int(last)]
    return doc


def merge_patch(doc: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(doc: Any, patch: Any, path: tuple[str, ...] = ()) -> Any:
    """Kubernetes' strategic merge patch for the built-in types listed in MERGE_KEYS."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            out[name] = [v for v in out.get(name) or [] if v not in (value or [])]
            continue
        sub = (*path, key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, sub)
        else:
            merged = strategic_merge_patch(out.get(key), value, sub)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(current: Any, patch: list[Any], path: tuple[str, ...]) -> list[Any]:
    key = MERGE_KEYS.get(path)
    if path in PRIMITIVE_MERGE_LISTS:
        merged = list(current or [])
        return merged + [v for v in patch if v not in merged]
    if key is None or not isinstance(current, list):
        items = [p for p in patch if not (isinstance(p, dict) and p.get("$patch") == "delete")]
        return copy.deepcopy(items)
    merged = copy.deepcopy(current)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"unable to find merge key {key!r} in a non-object list item")
        if item.get("$patch") == "replace":
            return copy.deepcopy([p for p in patch if p.get("$patch") != "replace"])
        index = next((i for i, m in enumerate(merged) if m.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del merged[index]
        elif index is None:
            merged.append(copy.deepcopy(item))
        else:
            merged[index] = strategic_merge_patch(merged[index], item, path)
    return merged
