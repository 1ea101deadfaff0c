"""Registries of apps, agents and model kinds, found where their code lives.

An app declares itself: the package `generators/<kind>/` (or `<dir>/<kind>/` for each
directory `<dir>` in $NETGAUGE_APP_PATH) exports `APP = AppSpec(...)` from its
`__init__.py`, naming its App class and config schema as "module:object" strings, so
nothing heavy is imported until a cell picks that app. Its config files sit in
`conf/app/` (or `<dir>/conf/app/`). Agents declare themselves the same way with
`AGENTS = [AgentSpec(...), ...]` (the built-in ones in `pipeline/agents.py`).

Two packages declaring the same kind are an error naming both; an unknown name fails
with a "did you mean" hint. Tests swap an entry for a while with `override`, which puts
the previous one back.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from pipeline.errors import RegistryError

ROOT = Path(__file__).resolve().parents[1]
APP_PATH_ENV = "NETGAUGE_APP_PATH"


def _load(target: str, package: str) -> Any:
    """The object `target` ("module:object", or ".module:object" inside `package`) names."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise RegistryError(f"'{target}' is not 'module:object'")
    try:
        return getattr(importlib.import_module(module, package or None), attr)
    except (ImportError, AttributeError) as err:
        where = f" (in package {package})" if package else ""
        raise RegistryError(f"cannot load '{target}'{where}: {err}") from err


@dataclass(frozen=True)
class AppSpec:
    """What an app is: its kind (the `kind:` of its configs), its App class, its config
    schema and its version (part of every query shard's hash)."""

    kind: str
    app: str  # "module:Class"; a leading "." is relative to the app's package
    config: str  # the schema dataclass of conf/app/*.yaml files of this kind
    version: str
    package: str = ""  # the package that declared it (set when found)

    def app_class(self) -> Any:
        return _load(self.app, self.package)

    load = app_class

    def config_class(self) -> type:
        return _load(self.config, self.package)


@dataclass(frozen=True)
class AgentSpec:
    """What an agent kind is: its class and the schema of its conf/agent/*.yaml files."""

    kind: str
    agent: str  # "module:Class"
    config: str  # "module:Class"
    package: str = ""

    def agent_class(self) -> Any:
        return _load(self.agent, self.package)

    load = agent_class

    def config_class(self) -> type:
        return _load(self.config, self.package)


S = TypeVar("S")


@dataclass(frozen=True)
class BackendSpec:
    """An emulator backend (`emulators/<name>/__init__.py` exports `BACKEND`): its class
    and the name prompts give it. Constructors take keyword arguments probe_timeout_ms
    and probe_retries."""

    name: str
    emulator: str  # "module:Class"; a leading "." is relative to the backend's package
    display: str  # e.g. "Kathará"
    package: str = ""

    def load(self) -> Any:
        return _load(self.emulator, self.package)


@dataclass(frozen=True)
class Target:
    """A plain "module:object" entry."""

    target: str

    def load(self) -> Any:
        return _load(self.target, "")


class Registry(Generic[S]):
    """name -> spec, filled on first use by `find` (which yields (name, spec, where))."""

    def __init__(self, kind: str, find: Callable[[], Iterable[tuple[str, S, str]]]) -> None:
        self.kind = kind
        self._find = find
        self._entries: dict[str, S] | None = None
        self._where: dict[str, str] = {}

    def _table(self) -> dict[str, S]:
        if self._entries is None:
            entries: dict[str, S] = {}
            for name, spec, where in self._find():
                self._add(entries, name, spec, where)
            self._entries = entries
        return self._entries

    def _add(self, entries: dict[str, S], name: str, spec: S, where: str) -> None:
        if name in entries:
            raise RegistryError(
                f"{self.kind} '{name}' is declared twice: in {self._where[name]} and in {where}"
            )
        entries[name] = spec
        self._where[name] = where

    def refresh(self) -> None:
        """Find the entries again (after $NETGAUGE_APP_PATH changed)."""
        self._entries = None
        self._where = {}

    def names(self) -> list[str]:
        return sorted(self._table())

    def get(self, name: str) -> S:
        table = self._table()
        if name in table:
            return table[name]
        hint = difflib.get_close_matches(name, table, n=1)
        near = f" (did you mean '{hint[0]}'?)" if hint else ""
        raise RegistryError(
            f"unknown {self.kind} '{name}'{near}; choose one of: {', '.join(self.names())}"
        )

    def load(self, name: str) -> Any:
        """The class the entry under `name` names (imported now)."""
        return self.get(name).load()  # type: ignore[attr-defined]

    def add(self, name: str, spec: S, where: str = "code") -> None:
        """Add an entry; a name already taken is an error."""
        self._add(self._table(), name, spec, where)

    @contextmanager
    def override(self, name: str, spec: S) -> Iterator[S]:
        """Use `spec` under `name` inside the block; the previous entry (or none) after."""
        table = self._table()
        missing = object()
        before, where = table.get(name, missing), self._where.get(name)
        table[name], self._where[name] = spec, "an override"
        try:
            yield spec
        finally:
            if before is missing:
                table.pop(name, None)
                self._where.pop(name, None)
            else:
                table[name] = before  # type: ignore[assignment]
                self._where[name] = where or ""


def app_dirs() -> list[Path]:
    """Where app packages are looked for: generators/, then $NETGAUGE_APP_PATH's entries."""
    extra = [Path(p) for p in os.environ.get(APP_PATH_ENV, "").split(os.pathsep) if p]
    return [ROOT / "generators", *extra]


def conf_dirs() -> list[Path]:
    """Config roots: conf/, then `<dir>/conf` for each $NETGAUGE_APP_PATH entry having one."""
    return [ROOT / "conf", *(d / "conf" for d in app_dirs()[1:] if (d / "conf").is_dir())]


def _packages(bases: list[Path] | None = None) -> Iterator[tuple[str, Path]]:
    """(module name, folder) of every package in the app directories (or `bases`, which
    must be folders of the project)."""
    for base in bases or app_dirs():
        builtin = base.parent == ROOT
        if not builtin:
            if not base.is_dir():
                raise RegistryError(f"${APP_PATH_ENV} names {base}, which is not a directory")
            if str(base) not in sys.path:
                sys.path.append(str(base))
        for folder in sorted(base.iterdir()):
            if (folder / "__init__.py").is_file():
                yield (f"{base.name}.{folder.name}" if builtin else folder.name), folder


def _declared(
    attr: str, cls: type, bases: list[Path] | None = None
) -> Iterator[tuple[Any, str, Path]]:
    for module_name, folder in _packages(bases):
        value = getattr(importlib.import_module(module_name), attr, None)
        for spec in value if isinstance(value, list | tuple) else [value]:
            if spec is None:
                continue
            if not isinstance(spec, cls):
                raise RegistryError(
                    f"{folder}/__init__.py: {attr} must be a {cls.__name__}, got {spec!r}"
                )
            yield spec, module_name, folder


def _find_apps() -> Iterator[tuple[str, AppSpec, str]]:
    for spec, module_name, folder in _declared("APP", AppSpec):
        yield spec.kind, replace(spec, package=module_name), str(folder)


def _find_agents() -> Iterator[tuple[str, AgentSpec, str]]:
    from pipeline.agents import AGENTS as BUILTIN

    for spec in BUILTIN:
        yield spec.kind, spec, "pipeline/agents.py"
    for spec, module_name, folder in _declared("AGENTS", AgentSpec):
        yield spec.kind, replace(spec, package=module_name), str(folder)


def _find_backends() -> Iterator[tuple[str, BackendSpec, str]]:
    for spec, module_name, folder in _declared("BACKEND", BackendSpec, [ROOT / "emulators"]):
        yield spec.name, replace(spec, package=module_name), str(folder)


_MODEL_KINDS = {
    "none": Target("pipeline.config:ModelConfig"),
    "vllm_cpu": Target("pipeline.serving.config:VllmModelConfig"),
    "vllm": Target("pipeline.serving.config:VllmModelConfig"),
}

APPS: Registry[AppSpec] = Registry("app kind", _find_apps)
AGENTS: Registry[AgentSpec] = Registry("agent kind", _find_agents)
EMULATORS: Registry[BackendSpec] = Registry("emulator", _find_backends)
MODELS: Registry[Target] = Registry(
    "model kind", lambda: ((k, v, "pipeline/registry.py") for k, v in _MODEL_KINDS.items())
)


def schema(group: str, kind: str) -> type:
    """The schema dataclass of a config of `group` (app, agent, model) and `kind`."""
    if group == "app":
        return APPS.get(kind).config_class()
    if group == "agent":
        return AGENTS.get(kind).config_class()
    if group == "model":
        return MODELS.load(kind)
    raise RegistryError(f"no schemas for config group '{group}'")
