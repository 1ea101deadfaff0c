"""OpenAI's strict mode for JSON schemas: which action schemas may be sent with `strict: true`.

With `strict: true` (a tool's `function.strict`, a `response_format`'s `json_schema.strict`)
OpenAI constrains decoding to the schema, and refuses the request (HTTP 400) when the schema
is outside the subset it can compile:

  - the root is an object (not `anyOf`);
  - every object lists every one of its properties in `required` (an optional value is a
    required one that may be null, `"type": ["string", "null"]`) and has
    `additionalProperties: false`;
  - every schema says what it is (`type`, `enum`, `const`, `anyOf` or `$ref`), with JSON
    types only, and uses only the keywords OpenAI supports (`SUPPORTED`);
  - at most MAX_DEPTH levels of nested objects.

`problems(schema)` lists what breaks those rules (empty: the schema qualifies);
pipeline.core.Action sends `strict` only for a schema that qualifies, so a plug-in app's
looser schema is still offered (unconstrained) rather than refused.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 10
TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
SUPPORTED = frozenset(
    {
        # structure and annotations
        "type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "anyOf", "$ref", "$defs", "definitions", "description", "title",
        # the constraints OpenAI's strict mode compiles
        "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip


def qualifies(schema: dict[str, Any]) -> bool:
    return not problems(schema)


def problems(schema: Any) -> list[str]:
    """Why `schema` cannot be sent in strict mode, one reason per line (empty: it can)."""
    found: list[str] = []
    if not isinstance(schema, dict) or _types(schema) != {"object"}:
        found.append("the root must be a schema of type object")
    _check(schema, "$", 1, found)
    return found


def _types(node: dict[str, Any]) -> set[str]:
    value = node.get("type")
    if isinstance(value, str):
        return {value}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return set(value)
    return set()


def _check(node: Any, where: str, depth: int, found: list[str]) -> None:
    if not isinstance(node, dict):
        found.append(f"{where}: a schema must be an object, not {type(node).__name__}")
        return
    unsupported = sorted(set(node) - SUPPORTED)
    if unsupported:
        found.append(f"{where}: unsupported keywords {', '.join(unsupported)}")
    if not ({"type", "enum", "const", "anyOf", "$ref"} & set(node)):
        found.append(f"{where}: says neither type, enum, const, anyOf nor $ref")
    if "type" in node and (not _types(node) or not _types(node) <= TYPES):
        found.append(f"{where}: type {node['type']!r} is not a JSON type (or a list of them)")
    if "object" in _types(node):
        if depth > MAX_DEPTH:
            found.append(f"{where}: objects are nested deeper than {MAX_DEPTH} levels")
        properties = node.get("properties", {})
        if not isinstance(properties, dict):
            found.append(f"{where}: properties must be an object")
            properties = {}
        if node.get("additionalProperties") is not False:
            found.append(f"{where}: additionalProperties must be false")
        required = node.get("required", [])
        missing = [name for name in properties if name not in required]
        if missing:
            found.append(
                f"{where}: every property must be required (optional ones nullable): "
                f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not"
            )
        extra = [name for name in required if name not in properties]
        if extra:
            found.append(f"{where}: required names {', '.join(extra)}, not among properties")
        for name, child in properties.items():
            _check(child, f"{where}.{name}", depth + 1, found)
    if "items" in node:
        _check(node["items"], f"{where}[]", depth, found)
    for i, child in enumerate(node.get("anyOf", [])):
        _check(child, f"{where}.anyOf[{i}]", depth, found)
    for key in ("$defs", "definitions"):
        for name, child in (node.get(key) or {}).items():
            _check(child, f"{where}.{key}.{name}", depth, found)
