"""Command-line overrides checked key by key against the schemas, before Hydra sees them.

Hydra answers a key it does not know (`agnt=oracle`, `app.max_turn=3`) with a block of
its own ("Key 'agnt' is not in struct ... Set the environment variable HYDRA_FULL_ERROR=1
..."), and `+app.foo=1` gets through composition to fail at the schema. `check_keys` walks
each override's dotted key through the dataclass schemas instead — NetGaugeConfig for the
top level, and for `app.*`, `agent.*`, `model.*` the schema the chosen config's `kind`
names in the registry — and raises one ConfigError naming the key, the closest known key
and the keys there are. A field typed as a mapping (`agent.env`, `model.headers_env`)
takes any key below it; `hydra.*` is Hydra's own.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from pipeline.errors import ConfigError

SECTIONS = ("app", "agent", "model")


def check_keys(overrides: Sequence[str], top: type) -> None:
    """Raise a ConfigError for the first override whose key no schema has; `top` is the
    schema of the top level (pipeline/config.py's NetGaugeConfig)."""
    for item in overrides:
        key, sep, _ = item.partition("=")
        key = key.lstrip("+~")
        if not sep or not key or key.startswith("hydra") or key in ("grid", *SECTIONS):
            continue
        parts = key.split(".")
        if parts[0] in SECTIONS and len(parts) > 1:
            name = _chosen(parts[0], overrides)
            kind = _kind(parts[0], name) if name else None
            if kind is None:
                continue  # an unknown choice or kind is check_overrides' and validate's
            schema = _schema(parts[0], kind)
            _walk(schema, parts[1:], key, f"{parts[0]} '{name}'", len(parts[0]) + 1)
        else:
            _walk(top, parts, key, "the top level", 0)


def _walk(schema: Any, parts: list[str], key: str, where: str, offset: int) -> None:
    node = schema
    for i, part in enumerate(parts):
        if not dataclasses.is_dataclass(node):
            return  # a mapping or an untyped value: anything below it is the value's
        hints = typing.get_type_hints(node)
        if part not in hints:
            known = sorted(hints)
            prefix = key[: offset + sum(len(p) + 1 for p in parts[:i])]
            near = difflib.get_close_matches(part, known, n=1)
            hint = f" (did you mean '{prefix}{near[0]}'?)" if near else ""
            parent = f"'{prefix[:-1]}'" if i else where
            raise ConfigError(
                f"unknown config key '{key}'{hint}; the keys of {parent} are: {', '.join(known)}"
            )
        node = _dataclass_of(hints[part])


def _dataclass_of(hint: Any) -> Any:
    """The dataclass a field holds (through Optional), else None."""
    if dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        if dataclasses.is_dataclass(arg):
            return arg
    return None


def _schema(section: str, kind: str) -> Any:
    from pipeline import registry

    try:
        return registry.schema(section, kind)
    except ConfigError:
        return None


def _chosen(section: str, overrides: Sequence[str]) -> str | None:
    """The config file the section uses: its override, else conf/config.yaml's default."""
    for item in overrides:
        key, sep, value = item.partition("=")
        if sep and key.lstrip("+") == section:
            return value.split(",")[0].strip().strip("'\"")
    defaults = _yaml(_file("", "config"))
    for entry in defaults.get("defaults", []):
        if isinstance(entry, dict) and section in entry:
            return str(entry[section])
    return None


def _kind(section: str, name: str, depth: int = 0) -> str | None:
    """The `kind` a config file sets, or inherits through its `defaults:` list."""
    path = _file(section, name)
    if path is None or depth > 5:
        return None
    data = _yaml(path)
    if "kind" in data:
        return str(data["kind"])
    for entry in data.get("defaults", []):
        if isinstance(entry, str) and entry != "_self_":
            found = _kind(section, entry, depth + 1)
            if found is not None:
                return found
    return name if section != "model" else None


def _file(section: str, name: str) -> Path | None:
    from pipeline.registry import conf_dirs

    for root in conf_dirs():
        path = (root / section / f"{name}.yaml") if section else root / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def _yaml(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}
