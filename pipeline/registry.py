"""Registries of apps, agents, emulator backends, benchmarks and model kinds, filled from
what packages declare where their code lives (pipeline/discovery.py says where).

An app declares itself: the package `generators/<kind>/` (or a package in a directory of
$NETGAUGE_APP_PATH, or one an installed distribution names under the `netgauge.apps`
entry point) exports `APP = AppSpec(...)` from its `__init__.py`, naming its App class
and config schema as "module:object" strings, so nothing heavy is imported until a cell
picks that app. The spec also says what the pipeline must know before that: the app's
version, its levels and its benchmarks. Its config files sit in `conf/app/` (or the
`conf/app/` beside or inside its package). Agents declare themselves the same way with
`AGENTS = [AgentSpec(...), ...]` (the built-in ones in pipeline/reference/, pipeline/llm/,
pipeline/mcp/, pipeline/a2a/), backends with `BACKEND = BackendSpec(...)`
(emulators/<name>/), and any package its benchmarks with `BENCHES = [BenchSpec(...)]`.

Two packages declaring the same name are an error naming both; an unknown name fails
with a "did you mean" hint (and names the packages that failed to load, if any). Tests
swap an entry for a while with `override`, which puts the previous one back.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from pipeline import discovery
from pipeline.diagnosis import TASKS
from pipeline.discovery import APP_PATH_ENV, ROOT, app_dirs, conf_dirs
from pipeline.errors import ConfigError, RegistryError

__all__ = ["APP_PATH_ENV", "ROOT", "app_dirs", "conf_dirs"]  # where things are looked for


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
class BenchSpec:
    """A benchmark of `make bench` (pipeline/bench.py): `target` names a function of the
    data directory returning a flat dict of figures."""

    name: str  # what `python -m pipeline.bench --only NAME` calls it
    target: str  # "module:function"; a leading "." is relative to the declaring package
    default: bool = False  # part of `make bench` (others run only with --only)
    package: str = ""

    def load(self) -> Callable[..., dict[str, Any]]:
        return _load(self.target, self.package)


@dataclass(frozen=True)
class AppSpec:
    """What an app is: its kind (the `kind:` of its configs), its App class, its config
    schema, its version (part of every query shard's hash), the levels it defines and its
    benchmarks."""

    kind: str
    app: str  # "module:Class"; a leading "." is relative to the app's package
    config: str  # the schema dataclass of conf/app/*.yaml files of this kind
    version: str
    levels: tuple[int, ...]  # the complexity levels its queries are drawn at
    benches: tuple[BenchSpec, ...] = ()
    package: str = ""  # the package that declared it (set when found)
    # The task kinds it offers (pipeline/diagnosis.py: TASKS). An app offering more than
    # mitigate has a `task` field in its config schema and a `vocabulary(level)` method.
    tasks: tuple[str, ...] = ("mitigate",)
    # Whether its queries are prefixes: query i of (level, seed) is the same whatever the
    # count asked (no cap, quota or room sized by the count; pipeline/querygen.py). Only
    # then is a cell of n queries derived from a finished cell of more (pipeline/derive.py).
    prefix_queries: bool = False

    def __post_init__(self) -> None:
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown or not self.tasks:
            raise RegistryError(
                f"app kind '{self.kind}' declares tasks {list(self.tasks)}; each must be one "
                f"of: {', '.join(TASKS)}"
            )

    def app_class(self) -> Any:
        return _load(self.app, self.package)

    load = app_class

    def config_class(self) -> type:
        return _load(self.config, self.package)

    def found_in(self, package: str) -> AppSpec:
        """The spec as found in `package`: its relative targets (its benches' too) resolve
        there."""
        benches = tuple(replace(b, package=b.package or package) for b in self.benches)
        return replace(self, package=package, benches=benches)

    def check_task(self, task: str) -> str:
        """`task` if the app offers it, else the one error every stage gives for it."""
        if task not in self.tasks:
            raise ConfigError(
                f"app.task={task} is not offered by app kind '{self.kind}'; choose one of: "
                + ", ".join(self.tasks)
            )
        return task

    def check_level(self, level: int) -> int:
        """`level` if the app defines it, else the one error every stage gives for it."""
        if level not in self.levels:
            raise ConfigError(
                f"level={level} is not defined for app kind '{self.kind}'; choose one of "
                + ", ".join(str(v) for v in self.levels)
            )
        return level


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

    def __init__(self, kind: str, find: Callable[[], Iterator[tuple[Any, Any, str]]]) -> None:
        self.kind = kind
        self._find = find
        self._entries: dict[str, S] | None = None
        self._where: dict[str, str] = {}
        self.broken: dict[str, str] = {}  # where -> why, for packages that failed to load

    def _table(self) -> dict[str, S]:
        if self._entries is None:
            entries: dict[str, S] = {}
            self.broken = {}
            for name, spec, where in self._find():
                if name is None:  # a package that failed to load: where, and why
                    self.broken[where] = str(spec)
                    continue
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
        discovery.forget()

    def names(self) -> list[str]:
        return sorted(self._table())

    def get(self, name: str) -> S:
        table = self._table()
        if name in table:
            return table[name]
        hint = difflib.get_close_matches(name, table, n=1)
        near = f" (did you mean '{hint[0]}'?)" if hint else ""
        failed = "".join(f"; left out: {where} ({why})" for where, why in self.broken.items())
        raise RegistryError(
            f"unknown {self.kind} '{name}'{near}; choose one of: {', '.join(self.names())}" + failed
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


def _entries(found: discovery.Found, key: Callable[[Any], str]) -> Iterator[tuple[Any, Any, str]]:
    """(name, spec with its package set, where) per declaration; (None, why, where) per
    package that failed to load."""
    for spec, package, where in found.specs:
        placed = (
            spec.found_in(package) if isinstance(spec, AppSpec) else replace(spec, package=package)
        )
        yield key(spec), placed, where
    for where, why in found.broken.items():
        yield None, why, where


def _find_apps() -> Iterator[tuple[Any, Any, str]]:
    rooms = discovery.room_packages(("generators",), naming="APP")
    found = discovery.declared("APP", AppSpec, rooms)
    discovery.declared("APP", AppSpec, discovery.path_packages(), found)
    discovery.entry_points(discovery.APP_GROUP, AppSpec, found)
    return _entries(found, lambda spec: spec.kind)


def _find_agents() -> Iterator[tuple[Any, Any, str]]:
    rooms = discovery.room_packages(("pipeline", "generators"), naming="AGENTS")
    found = discovery.declared("AGENTS", AgentSpec, rooms)
    discovery.declared("AGENTS", AgentSpec, discovery.path_packages(), found)
    discovery.entry_points(discovery.AGENT_GROUP, AgentSpec, found)
    return _entries(found, lambda spec: spec.kind)


def _find_backends() -> Iterator[tuple[Any, Any, str]]:
    rooms = discovery.room_packages(("emulators",), naming="BACKEND")
    found = discovery.declared("BACKEND", BackendSpec, rooms)
    return _entries(found, lambda spec: spec.name)


def _find_benches() -> Iterator[tuple[Any, Any, str]]:
    """Every package's `BENCHES`, and each app's (its AppSpec's `benches`)."""
    found = discovery.declared("BENCHES", BenchSpec, discovery.room_packages(naming="BENCHES"))
    discovery.declared("BENCHES", BenchSpec, discovery.path_packages(), found)
    yield from _entries(found, lambda spec: spec.name)
    for kind in APPS.names():
        app = APPS.get(kind)
        for bench in app.benches:
            yield bench.name, bench, f"app kind '{kind}'"


_MODEL_KINDS = {
    "none": Target("pipeline.config:ModelConfig"),
    "vllm_cpu": Target("pipeline.serving.config:VllmModelConfig"),
    "vllm": Target("pipeline.serving.config:VllmModelConfig"),
    "hosted": Target("pipeline.serving.config:VllmModelConfig"),
}

APPS: Registry[AppSpec] = Registry("app kind", _find_apps)
AGENTS: Registry[AgentSpec] = Registry("agent kind", _find_agents)
EMULATORS: Registry[BackendSpec] = Registry("emulator", _find_backends)
BENCHES: Registry[BenchSpec] = Registry("benchmark", _find_benches)
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
