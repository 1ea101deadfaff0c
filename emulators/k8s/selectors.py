"""Label selectors: LabelSelector objects (matchLabels / matchExpressions) and the string
form of `?labelSelector=` (`a=b,c!=d,e in (x,y),f notin (z),g,!h`), as the API server reads them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Labels = Mapping[str, str]
Predicate = Callable[[Labels], bool]


class SelectorError(ValueError):
    """A selector string or object that the API server would reject."""


def matches(selector: Mapping[str, Any] | None, labels: Labels) -> bool:
    """Whether a LabelSelector object selects `labels`; an empty selector selects all
    (callers treat a missing selector per field semantics, not here)."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def format_selector(selector: Mapping[str, Any] | None) -> str:
    """The kubectl/describe rendering of a LabelSelector (`app=x,tier in (a,b)`)."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(str(key))
        else:
            parts.append(f"!{key}")
    return ",".join(parts)


_TERM = re.compile(
    r"\s*(?:(?P<not>!)\s*(?P<nkey>[\w./-]+)"
    r"|(?P<key>[\w./-]+)\s*(?:(?P<op>==|=|!=)\s*(?P<value>[\w.-]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?)\s*(?:,|$)"
)


def parse(text: str) -> Predicate:
    """A predicate over labels for a `labelSelector` query string; raises SelectorError."""
    terms: list[Predicate] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _TERM.match(text, pos)
        if m is None or m.end() == pos:
            raise SelectorError(f"unable to parse requirement: found '{text[pos:]}'")
        pos = m.end()
        terms.append(_term(m))
    return lambda labels: all(t(labels) for t in terms)


def _term(m: re.Match[str]) -> Predicate:
    if m.group("not"):
        key = m.group("nkey")
        return lambda labels: key not in labels
    key = m.group("key")
    if m.group("op") in ("=", "=="):
        value = m.group("value")
        return lambda labels: labels.get(key) == value
    if m.group("op") == "!=":
        value = m.group("value")
        return lambda labels: labels.get(key) != value
    if m.group("setop"):
        values = {v.strip() for v in m.group("values").split(",") if v.strip()}
        if m.group("setop") == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def parse_fields(text: str) -> dict[str, str]:
    """`metadata.name=x,metadata.namespace=y` -> dict (only equality, as kubectl sends)."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("==" if "==" in part else "=")
        if not sep:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        out[key.strip()] = value.strip()
    return out
