"""Return-value records: how a child turns `process_graph`'s result into JSON, and how the
parent checks what it gets back.

Record shapes (the `value` of an OK `SandboxResult`):
    {"type": "scalar", "value": bool | int | float | str | None}
    {"type": "list",   "value": [json, ...]}            list, tuple, set, frozenset
    {"type": "table",  "value": {str(key): json, ...}}  dict
    {"type": "graph",  "graph_class": "DiGraph", "diff": graphdiff diff vs the base}
A graph answer is the graph the code was given, as the code left it: "diff" is that
graph's, whatever graph object was returned ("graph_class" is the returned one's class),
and the record holds "copy": true when the returned object is not the graph given (e.g.
`graph.copy()`, which leaves the given graph untouched). A scalar, list or table record
also holds "state", the graphdiff of the graph the code was given, when the code left that
graph changed (the child adds it; `split_state` takes it off).

`encode_value` runs in the child (untrusted side) and may call into hostile objects;
`validate_record` runs in the parent on already-parsed JSON and trusts nothing.
"""

from __future__ import annotations

import math
from typing import Any

import networkx as nx

from emulators.pysandbox import fastdiff, graphdiff
from pipeline.errors import NetGaugeError

RECORD_TYPES = ("scalar", "list", "table", "graph")
_MAX_DEPTH = 50  # nesting of containers inside a returned value


class UnsupportedValue(NetGaugeError):
    """The returned value (or something inside it) has no JSON record form."""


class ValueTooLarge(NetGaugeError):
    """The returned value's JSON form would exceed `SandboxLimits.result_bytes`."""


class _Budget:
    """Approximate JSON byte count, so a huge value fails before it is fully converted."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def spend(self, nbytes: int) -> None:
        self.left -= nbytes
        if self.left < 0:
            raise ValueTooLarge("the return value is larger than the result limit")


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnsupportedValue(f"process_graph returned a non-finite float ({value!r})")
        return float(value)
    return str.__str__(value)


def _plain(value: Any, budget: _Budget, depth: int) -> Any:
    """A JSON-able copy of `value` made of dict/list/str/int/float/bool/None."""
    if depth > _MAX_DEPTH:
        raise UnsupportedValue(f"the return value is nested deeper than {_MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, int, float, str)):
        scalar = _scalar(value)
        budget.spend(len(scalar) + 2 if isinstance(scalar, str) else 8)
        return scalar
    if isinstance(value, (list, tuple, set, frozenset)):
        budget.spend(2 + len(value))
        return [_plain(item, budget, depth + 1) for item in value]
    if isinstance(value, dict):
        budget.spend(2 + len(value))
        return {str(key): _plain(item, budget, depth + 1) for key, item in value.items()}
    item = getattr(type(value), "item", None)
    if callable(item):  # numpy and similar scalar types
        unwrapped = item(value)
        if unwrapped is None or isinstance(unwrapped, (bool, int, float, str)):
            return _plain(unwrapped, budget, depth + 1)
    raise UnsupportedValue(
        f"the return value contains an unsupported type {type(value).__name__!r}"
    )


def encode_value(
    value: Any, base: fastdiff.BaseIndex, limit: int, given: nx.Graph | None = None
) -> dict[str, Any]:
    """The record for `process_graph`'s return value; raises UnsupportedValue/ValueTooLarge.
    `given`: the graph the code was called with, which a graph answer stands for (None:
    the returned graph is taken to be it)."""
    if isinstance(value, nx.Graph):
        judged = value if given is None else given
        diff = fastdiff.graph_diff(base, judged)
        record = {"type": "graph", "graph_class": type(value).__name__, "diff": diff}
        if judged is not value:
            record["copy"] = True
        return record
    budget = _Budget(limit)
    if isinstance(value, (list, tuple, set, frozenset)):
        if len(value) > limit // 2:  # every JSON item costs at least a digit and a comma
            raise ValueTooLarge(f"the returned list has {len(value)} items, over the result limit")
        return {"type": "list", "value": _plain(value, budget, 0)}
    if isinstance(value, dict):
        return {"type": "table", "value": _plain(value, budget, 0)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"type": "scalar", "value": _plain(value, budget, 0)}
    item = getattr(type(value), "item", None)
    if callable(item):
        unwrapped = item(value)
        if unwrapped is None or isinstance(unwrapped, (bool, int, float, str)):
            return {"type": "scalar", "value": _plain(unwrapped, budget, 0)}
    raise UnsupportedValue(f"process_graph returned an unsupported type {type(value).__name__!r}")


def validate_record(record: Any) -> dict[str, Any]:
    """Check an untrusted, parsed record's shape; raise ValueError naming what is wrong."""
    if not isinstance(record, dict) or record.get("type") not in RECORD_TYPES:
        raise ValueError(f"a result record must be an object with 'type' in {RECORD_TYPES}")
    kind = record["type"]
    expected = {"type", "graph_class", "diff"} if kind == "graph" else {"type", "value"}
    optional = {"copy"} if kind == "graph" else {"state"}
    if not expected <= set(record) <= expected | optional:
        raise ValueError(f"a {kind} record must have exactly the keys {sorted(expected)}")
    if "copy" in record and record["copy"] is not True:
        raise ValueError("a graph record's 'copy' can only be true")
    if "state" in record:
        graphdiff.validate_diff(record["state"])
    if kind == "graph":
        if not isinstance(record["graph_class"], str):
            raise ValueError("a graph record's 'graph_class' must be a string")
        graphdiff.validate_diff(record["diff"])
        return record
    value = record["value"]
    if kind == "scalar" and not (value is None or isinstance(value, (bool, int, float, str))):
        raise ValueError(f"a scalar record holds a {type(value).__name__}")
    if kind == "scalar" and isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a scalar record holds a non-finite float")
    if kind == "list" and not isinstance(value, list):
        raise ValueError(f"a list record holds a {type(value).__name__}")
    if kind == "table" and not isinstance(value, dict):
        raise ValueError(f"a table record holds a {type(value).__name__}")
    return record


def split_state(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list] | None]:
    """(the answer record, the diff of the graph the code left, or None) of a valid record."""
    if "state" not in record:
        return record, None
    answer = {k: v for k, v in record.items() if k != "state"}
    return answer, record["state"]
