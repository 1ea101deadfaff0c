"""The three patch formats of `kubectl patch` / `apply` / `edit`: JSON patch (RFC 6902),
JSON merge patch (RFC 7386) and strategic merge patch (lists merged by key where the
type's schema names one, `$patch` / `$setElementOrder` / `$retainKeys` /
`$deleteFromPrimitiveList` directives).

Patches come from agents, so every function here takes any JSON value as the patch and
either returns the patched document or raises PatchError with the status code and message
the API server answers (400: the patch is not of the format's shape; 413: more operations
than kube-apiserver takes; 422: it does not apply to this document). Work is bounded: at
most MAX_OPERATIONS JSON-patch operations, `copy` (the one operation that can grow a
document beyond the size of the patch) at most MAX_COPY_BYTES in all, as kube-apiserver
bounds it (`--max-json-patch-copy-bytes`), and no result nested deeper than MAX_DEPTH
(adds and copies at the end of ever longer paths would otherwise nest without bound);
merging is linear in document plus patch and never nests deeper than both.
Documents are JSON values (dicts with str keys, lists, str, int, float, bool, None).
"""

from __future__ import annotations

import json
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
MAX_OPERATIONS = 10_000  # kube-apiserver's maxJSONPatchOperations
MAX_COPY_BYTES = 4 << 20  # what `copy` may add in all (the server's request body limit)
MAX_DEPTH = 64  # lists and objects nested in a body or a patched object (a NetworkPolicy: 9)
_MAX_INDEX_DIGITS = 9  # an index longer than this is past the end of any list we hold


class PatchError(ValueError):
    """A patch that cannot be applied; `code` and the message are the API server's."""

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


def _go_type(value: Any) -> str:
    """The JSON kind Go's decoder names in its errors."""
    if isinstance(value, bool):
        return "bool"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(
        type(value), "number"
    )


def _clone(value: Any) -> tuple[Any, int]:
    """A deep copy of a JSON value and its encoded size (one pass in C, not deepcopy's)."""
    text = json.dumps(value, separators=(",", ":"))
    return json.loads(text), len(text)


# -- JSON patch (RFC 6902) ---------------------------------------------------------------------
def json_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 patch; returns a new document (`doc` is left as it was)."""
    if not isinstance(ops, list):
        raise PatchError(
            f"json: cannot unmarshal {_go_type(ops)} into Go value of type jsonpatch.Patch", 400
        )
    if len(ops) > MAX_OPERATIONS:
        raise PatchError(
            f"The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {len(ops)}",
            413,
        )
    for op in ops:
        if not isinstance(op, dict):
            raise PatchError(
                f"json: cannot unmarshal {_go_type(op)} into Go value of type jsonpatch.Operation",
                400,
            )
    out, _ = _clone(doc)
    copied, depth = 0, depth_of(out)
    for op in ops:
        kind = op.get("op")
        if kind in ("add", "replace", "test"):
            path, value = _path(op, "path", kind), _value(op, kind)
            grown = len(path) + depth_of(value)
        elif kind in ("move", "copy"):
            source, path = _path(op, "from", kind), _path(op, "path", kind)
            grown = len(path) + depth - len(source)  # the moved value is that much shallower
        if kind == "add":
            out = _add(out, path, value, kind)
        elif kind == "remove":
            out = _remove(out, _path(op, "path", kind), kind)
        elif kind == "replace":
            if not path:
                out = value
            else:
                _get(out, path, kind)  # must exist
                out = _add(_remove(out, path, kind), path, value, kind)
        elif kind == "move":
            if path[: len(source)] == source and len(path) > len(source):
                raise PatchError(f"move operation does not apply: {_show(source)} is a "
                                 f"parent of {_show(path)}")  # fmt: skip
            value = _get(out, source, kind)
            out = _add(_remove(out, source, kind), path, value, kind)
        elif kind == "copy":
            value, size = _clone(_get(out, source, kind))
            copied += size
            if copied > MAX_COPY_BYTES:
                raise PatchError(
                    "Unable to complete the copy, the accumulated size increase of copy is "
                    f"{copied}, exceeding the limit {MAX_COPY_BYTES}"
                )
            out = _add(out, path, value, kind)
        elif kind == "test":
            if _get(out, path, kind) != value:
                raise PatchError(f"testing value {_show(path)} failed: test failed")
        else:
            shown = kind if isinstance(kind, str) else "unknown"
            raise PatchError(f"Unexpected kind: {shown[:60]}")
        if kind in ("add", "replace", "move", "copy"):
            depth = max(depth, grown) if path else grown
            if depth > MAX_DEPTH:
                raise PatchError(
                    f"{kind} operation does not apply: the object would be nested deeper than "
                    f"{MAX_DEPTH} levels"
                )
    return out


def depth_of(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep lists and objects nest in `value` (a scalar: 0, `{}`: 1), counted
    iteratively; stops early and returns limit + 1 once past `limit`."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return limit + 1
            deepest = max(deepest, depth)
            stack.extend(
                (child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)
            )
    return deepest


def _show(path: list[str]) -> str:
    text = "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path)
    return json.dumps(text if len(text) <= 200 else text[:200] + "...")


def _path(op: dict[str, Any], field: str, kind: str) -> list[str]:
    """The JSON pointer of `op[field]`, split and unescaped."""
    text = op.get(field)
    if text is None:
        raise PatchError(f"{kind} operation missing {field} field")
    if not isinstance(text, str):
        raise PatchError(
            f"{kind} operation failed to decode {field}: json: cannot unmarshal "
            f"{_go_type(text)} into Go value of type string"
        )
    if text == "":
        return []
    if not text.startswith("/"):
        raise PatchError(f"{kind} operation does not apply: JSON pointer must start with "
                         f"'/': {json.dumps(text[:200])}")  # fmt: skip
    return [p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/")]


def _value(op: dict[str, Any], kind: str) -> Any:
    if "value" not in op:
        raise PatchError(f"{kind} operation missing value field")
    return op["value"]


def _index(part: str, size: int, path: list[str], kind: str, end_ok: bool) -> int:
    """A list index of a pointer: ASCII digits (or "-", the end, where `end_ok`)."""
    if end_ok and part == "-":
        return size
    if not (part.isascii() and part.isdigit()) or len(part) > _MAX_INDEX_DIGITS:
        raise PatchError(f"{kind} operation does not apply: value was not a proper array "
                         f"index: {json.dumps(part[:60])} in {_show(path)}")  # fmt: skip
    index = int(part)
    if index > size or (index == size and not end_ok):
        raise PatchError(f"{kind} operation does not apply: Unable to access invalid index: "
                         f"{index} in {_show(path)}")  # fmt: skip
    return index


def _child(node: Any, part: str, path: list[str], kind: str) -> Any:
    if isinstance(node, dict):
        if part not in node:
            raise PatchError(f"{kind} operation does not apply: doc is missing path: "
                             f"{_show(path)}: missing value")  # fmt: skip
        return node[part]
    if isinstance(node, list):
        return node[_index(part, len(node), path, kind, end_ok=False)]
    raise PatchError(
        f"{kind} operation does not apply: doc is missing path: {_show(path)}: missing value"
    )


def _get(doc: Any, path: list[str], kind: str) -> Any:
    node = doc
    for part in path:
        node = _child(node, part, path, kind)
    return node


def _add(doc: Any, path: list[str], value: Any, kind: str) -> Any:
    if not path:
        return value
    parent, last = _get(doc, path[:-1], kind), path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), path, kind, end_ok=True), value)
    else:
        raise PatchError(
            f"{kind} operation does not apply: doc is missing path: {_show(path)}: missing value"
        )
    return doc


def _remove(doc: Any, path: list[str], kind: str) -> Any:
    if not path:
        return None
    parent, last = _get(doc, path[:-1], kind), path[-1]
    _child(parent, last, path, kind)  # must exist
    if isinstance(parent, dict):
        del parent[last]
    else:
        del parent[int(last)]
    return doc


# -- JSON merge patch (RFC 7386) ---------------------------------------------------------------
def merge_patch(doc: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    patch, _ = _clone(patch)
    if not isinstance(patch, dict):
        return patch
    out, _ = _clone(doc) if isinstance(doc, dict) else ({}, 0)
    _merge_into(out, patch)
    return out


def _merge_into(out: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            current = out.get(key)
            if not isinstance(current, dict):
                current = out[key] = {}
            _merge_into(current, value)
        else:
            out[key] = value


# -- strategic merge patch ---------------------------------------------------------------------
_DIRECTIVES = ("$patch", "$retainKeys")
_ORDER, _DELETE_PRIMITIVES = "$setElementOrder/", "$deleteFromPrimitiveList/"


def strategic_merge_patch(doc: Any, patch: Any) -> Any:
    """Kubernetes' strategic merge patch for the built-in types listed in MERGE_KEYS."""
    if not isinstance(patch, dict):
        raise PatchError(
            f"json: cannot unmarshal {_go_type(patch)} into Go value of type "
            "map[string]interface {}",
            400,
        )
    patch, _ = _clone(patch)
    out, _ = _clone(doc) if isinstance(doc, dict) else ({}, 0)
    return _strategic(out, patch, ())


def _key_of(value: Any) -> tuple[str, Any]:
    """A hashable stand-in of a JSON value, equal where Go's decoded values are equal
    (numbers decode as float64, so 1 == 1.0; true is not 1)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", float(value)) if abs(value) < 2**53 else ("n", str(value))
    if isinstance(value, str):
        return ("s", value)
    return ("j", json.dumps(value, sort_keys=True))


def _strategic(out: dict[str, Any], patch: dict[str, Any], path: tuple[str, ...]) -> Any:
    """Merge `patch` into `out` (both fresh copies) in place; None when it deletes `out`."""
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError(f"Unknown patch type: {str(directive)[:60]!r} in map", 400)
    retain = patch.get("$retainKeys")
    if retain is not None and not (
        isinstance(retain, list) and all(isinstance(k, str) for k in retain)
    ):
        raise PatchError("invalid patch format of retainKeys", 400)
    for key, value in patch.items():
        if key in _DIRECTIVES:
            continue
        if key.startswith(_ORDER):
            if not isinstance(value, list):
                raise PatchError("invalid patch format of setElementOrder list", 400)
            continue
        if key.startswith(_DELETE_PRIMITIVES):
            _delete_primitives(out, key[len(_DELETE_PRIMITIVES) :], value)
            continue
        sub = (*path, key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, sub)
        elif isinstance(value, dict):
            current = out.get(key)
            merged = _strategic(current if isinstance(current, dict) else {}, value, sub)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = value
    if retain is not None:
        keep = set(retain)
        stray = [k for k in patch if k not in keep and not k.startswith("$")]
        if stray:
            raise PatchError(f"patch content doesn't match retainKeys list: {stray[0][:60]!r}")
        for key in [k for k in out if k not in keep]:
            del out[key]
    return out


def _delete_primitives(out: dict[str, Any], name: str, value: Any) -> None:
    if not isinstance(value, list):
        raise PatchError("invalid patch format of primitive list", 400)
    current = out.get(name)
    if current is None:
        return
    if not isinstance(current, list):
        raise PatchError(f"$deleteFromPrimitiveList/{name[:60]}: the field is not a list")
    gone = {_key_of(v) for v in value}
    out[name] = [v for v in current if _key_of(v) not in gone]


def _merge_list(current: Any, patch: list[Any], path: tuple[str, ...]) -> list[Any]:
    if path in PRIMITIVE_MERGE_LISTS:
        merged = list(current) if isinstance(current, list) else []
        seen = {_key_of(v) for v in merged}
        for value in patch:
            if _key_of(value) not in seen:
                seen.add(_key_of(value))
                merged.append(value)
        return merged
    key = MERGE_KEYS.get(path)
    if key is None or not isinstance(current, list):
        return [p for p in patch if not (isinstance(p, dict) and p.get("$patch") == "delete")]
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(
                f"unable to find merge key {key!r} in a list item of type {_go_type(item)} "
                f"at {'.'.join(path)[:200]}"
            )
    if any(item.get("$patch") == "replace" for item in patch):
        return [p for p in patch if p.get("$patch") != "replace"]
    merged: list[Any] = list(current)
    where: dict[tuple[str, Any], int] = {}
    for i, item in enumerate(merged):
        if isinstance(item, dict) and key in item:
            where.setdefault(_key_of(item[key]), i)
    for item in patch:
        if key not in item:
            raise PatchError(
                f"map: {json.dumps(item)[:200]} does not contain declared merge key: {key}"
            )
        found = where.get(_key_of(item[key]))
        if item.get("$patch") == "delete":
            if found is not None:
                merged[found] = None  # dropped below; positions stay valid meanwhile
                del where[_key_of(item[key])]
        elif found is None:
            where[_key_of(item[key])] = len(merged)
            merged.append(_strategic({}, item, path))
        else:
            current_item = merged[found]
            merged[found] = _strategic(
                current_item if isinstance(current_item, dict) else {}, item, path
            )
    return [m for m in merged if m is not None]
