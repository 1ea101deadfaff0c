"""A cell's variant: every result-changing setting that differs from its named configs.

A result's identity is its full effective config. The readable part of it is the cell key
(app, model, agent, level, seed, query count); the rest is the *variant*, computed from
the composed config by comparing the app, agent and model sections with what their
named files (`conf/app/<app>.yaml`, ...) give on their own:

    variant "base"            nothing differs: the cell is exactly what the names say
    variant "v" + 8 hex chars the sha256 of the differences as canonical JSON, e.g.
                              {"app.max_turns": 5, "model.temperature": 0.7}

A repeated trial t > 0 (pipeline/trials.py) adds {"trial": t}; `trial_of` is the variant
without it, the one every trial of a cell shares.

`app_variant` is the same for the app section alone: it names the queries shard, which
depends on nothing else. Settings that cannot change a result (a server's venv, how many
requests are in flight, how many labs stay alive) are declared `operational` in their
schema and never split cells; neither do run.*, data_dir or the grid. The model section
counts only for agents that use a model.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pipeline import registry
from pipeline.config import choices, load_choice
from pipeline.core import canonical_json
from pipeline.focus import weights
from pipeline.registry import conf_dirs

BASE = "base"
SECTIONS = ("app", "agent", "model")
_OPERATIONAL = "netgauge.operational"
_ADDED = "netgauge.added"


def operational(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING):
    """A schema field whose value cannot change a result (it never splits cells)."""
    return dataclasses.field(
        default=default, default_factory=default_factory, metadata={_OPERATIONAL: True}
    )


def added(default: Any) -> Any:
    """A result-changing schema field added after results existed: at `default` it is
    left out of a section's result settings, so the cells, variants and response-cache
    entries made before it keep their identity; any other value is in them."""
    return dataclasses.field(default=default, metadata={_ADDED: True})


def result_settings(value: Any, schema: Any) -> Any:
    """`value` (a plain dict of one section) without the fields `schema` declares
    operational, nor `added` fields at their default, recursively through fields whose
    type is itself a schema dataclass."""
    if not isinstance(value, dict) or not dataclasses.is_dataclass(schema):
        return value
    fields = {f.name: f for f in dataclasses.fields(schema)}
    hints = _hints(schema)
    return {
        key: result_settings(item, hints.get(key))
        for key, item in value.items()
        if not (key in fields and fields[key].metadata.get(_OPERATIONAL))
        and not (key in fields and fields[key].metadata.get(_ADDED) and item == fields[key].default)
    }


@functools.cache
def _hints(schema: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(schema)
    except (NameError, TypeError):  # an unresolvable forward reference: no nesting
        return {}


def flatten(value: Any, prefix: str) -> dict[str, Any]:
    """{dotted key: leaf value}; lists are leaves."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}"))
        return out
    return {prefix: value}


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def name_of(differences: Mapping[str, Any]) -> str:
    return BASE if not differences else "v" + digest(dict(differences))[:8]


def label_of(differences: Mapping[str, Any]) -> str:
    """The differences as overrides a user could type: "app.max_turns=5 model.seed=1"."""
    if not differences:
        return "as configured"
    return " ".join(f"{key}={canonical_json(value)}" for key, value in sorted(differences.items()))


@dataclass(frozen=True)
class Variant:
    """What sets a cell apart from its named configs (see the module docstring)."""

    name: str
    app_variant: str
    differences: dict[str, Any]  # dotted key -> effective value, result settings only
    settings: dict[str, Any]  # the result settings of app, agent, model: the identity
    trial_of: str = BASE  # the variant of trial 0 of this cell (pipeline/trials.py)

    @property
    def label(self) -> str:
        return label_of(self.differences)


def section_settings(group: str, section: Any) -> dict[str, Any]:
    """The result settings of one validated section (DictConfig or dict)."""
    plain = (
        OmegaConf.to_container(section, resolve=True)
        if isinstance(section, DictConfig)
        else section
    )
    kind = plain.get("kind", plain.get("name"))
    return result_settings(plain, registry.schema(group, str(kind)))


@functools.cache
def _named(group: str, name: str, kind: str, search: tuple[str, ...]) -> dict[str, Any]:
    del search  # part of the cache key only: another app path means other files
    if name in choices(group):
        return section_settings(group, load_choice(group, name))
    # A config built in code (no conf file of that name): its schema's defaults are what
    # the name stands for.
    schema = registry.schema(group, kind)
    node = OmegaConf.merge(OmegaConf.structured(schema), {"name": name, "kind": kind})
    return section_settings(group, node)


def named_settings(group: str, name: str, kind: str) -> dict[str, Any]:
    """The result settings `conf/<group>/<name>.yaml` gives on its own (cached)."""
    return _named(group, name, kind, tuple(str(d) for d in conf_dirs()))


def variant_of(cfg: Any) -> Variant:
    """The variant of a composed, validated run config."""
    groups = ["app", "agent"] + (["model"] if cfg.agent.uses_model else [])
    settings: dict[str, Any] = {}
    differences: dict[str, Any] = {}
    app_differences: dict[str, Any] = {}
    for group in groups:
        mine = section_settings(group, cfg[group])
        settings[group] = mine
        section = cfg[group]
        kind = str(section.get("kind", section.name))
        named = flatten(named_settings(group, str(section.name), kind), group)
        for key, value in flatten(mine, group).items():
            if key not in named or named[key] != value:
                differences[key] = value
                if group == "app":
                    app_differences[key] = value
        for key in named.keys() - flatten(mine, group).keys():
            differences[key] = None  # a key the named file has and this config lacks
            if group == "app":
                app_differences[key] = None
    for key, value in generation_settings(cfg).items():  # the queries themselves change
        differences[key] = app_differences[key] = settings[key] = value
    first = name_of(differences)  # trial 0's: what the trials of one cell share
    if cfg.get("trial"):  # a repeated trial: its own variant (pipeline/trials.py)
        differences["trial"] = settings["trial"] = int(cfg.trial)
    return Variant(
        name_of(differences), name_of(app_differences), differences, settings, trial_of=first
    )


def generation_settings(cfg: Any) -> dict[str, Any]:
    """How a cell's queries are drawn, where it differs from the default: repeats kept,
    failure-driven weights (pipeline/focus.py)."""
    out: dict[str, Any] = {}
    if cfg.get("allow_repeats"):
        out["allow_repeats"] = True
    focus = weights(cfg)
    if focus is not None:
        out["focus"] = focus
    return out
