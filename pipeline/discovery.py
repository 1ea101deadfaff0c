"""Where declarations are found: the project's packages, $NETGAUGE_APP_PATH, entry points.

A package declares what it provides in its `__init__.py` (`APP`, `AGENTS`, `BACKEND`,
`BENCHES`; pipeline/registry.py has the specs). They are looked for in

- the project's rooms: every package folder of `pipeline/`, `emulators/`, `generators/`
  and `analysis/` (and the room's own `__init__.py`);
- each directory of $NETGAUGE_APP_PATH (its package folders; its `conf/` holds their
  configs);
- the entry points of the installed distributions, group `netgauge.apps` for apps and
  `netgauge.agents` for agents, each naming the spec object ("package:APP"); the configs of
  such a package sit in its own `conf/` folder.

A package or entry point that fails to load (an import error, a wrong declaration) is a
plugin's bug, not everyone's: it is reported by name as a `PluginWarning` and left out,
and every other package still loads. What failed is kept (`Found.broken`) so that an
unknown name can say which packages could have declared it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pipeline.errors import RegistryError

ROOT = Path(__file__).resolve().parents[1]
APP_PATH_ENV = "NETGAUGE_APP_PATH"
ROOMS = ("pipeline", "emulators", "generators", "analysis")
APP_GROUP = "netgauge.apps"
AGENT_GROUP = "netgauge.agents"


class PluginWarning(UserWarning):
    """A package or entry point that declares NetGauge parts failed to load."""


@dataclass
class Found:
    """Declarations found, and the places that failed to load (where -> why)."""

    specs: list[tuple[Any, str, str]] = field(default_factory=list)  # (spec, package, where)
    broken: dict[str, str] = field(default_factory=dict)


# One import attempt per package folder and process: a broken package is warned about once,
# however many registries look into it.
_MODULES: dict[tuple[str, str], ModuleType | str] = {}


def app_dirs() -> list[Path]:
    """Where app packages are looked for: generators/, then $NETGAUGE_APP_PATH's entries."""
    extra = [Path(p) for p in os.environ.get(APP_PATH_ENV, "").split(os.pathsep) if p]
    return [ROOT / "generators", *extra]


def conf_dirs() -> list[Path]:
    """Config roots: conf/, then `<dir>/conf` for each $NETGAUGE_APP_PATH entry and each
    entry-point package that has one."""
    extra = [d / "conf" for d in app_dirs()[1:]]
    extra += [folder / "conf" for folder in _entry_point_folders()]
    return [ROOT / "conf", *dict.fromkeys(d for d in extra if d.is_dir())]


def room_packages(
    rooms: tuple[str, ...] = ROOMS, naming: str | None = None
) -> Iterator[tuple[str, Path]]:
    """(module name, folder) of each room and each package folder in it; with `naming`,
    only those whose `__init__.py` has that word (the project's own packages are imported
    only when they can declare what is looked for: every process looks up agents, and
    importing, say, pipeline/gym/ for that would cost it Gymnasium's import)."""
    for room in rooms:
        for module_name, folder in [(room, ROOT / room), *_subpackages(ROOT / room, f"{room}.")]:
            if naming is None or naming in (folder / "__init__.py").read_text():
                yield module_name, folder


def path_packages() -> Iterator[tuple[str, Path]]:
    """(module name, folder) of the packages in $NETGAUGE_APP_PATH's directories, which are
    put on sys.path so that their packages import by their own names."""
    for base in app_dirs()[1:]:
        if not base.is_dir():
            raise RegistryError(f"${APP_PATH_ENV} names {base}, which is not a directory")
        if str(base) not in sys.path:
            sys.path.append(str(base))
        yield from _subpackages(base, prefix="")


def _subpackages(base: Path, prefix: str) -> Iterator[tuple[str, Path]]:
    for folder in sorted(base.iterdir()):
        if (folder / "__init__.py").is_file():
            yield f"{prefix}{folder.name}", folder


def declared(
    attr: str, cls: type, packages: Iterator[tuple[str, Path]], found: Found | None = None
) -> Found:
    """The `attr` declarations (one spec of `cls`, or a list of them) of these packages."""
    found = found if found is not None else Found()
    for module_name, folder in packages:
        where = str(folder)
        module = _import(module_name, folder)
        if isinstance(module, str):
            found.broken[where] = module
            continue
        value = getattr(module, attr, None)
        specs = value if isinstance(value, list | tuple) else [value]
        if not all(spec is None or isinstance(spec, cls) for spec in specs):
            _report(found, where, f"{attr} must be a {cls.__name__} (or a list of them)")
            continue
        found.specs += [(spec, module_name, where) for spec in specs if spec is not None]
    return found


def entry_points(group: str, cls: type, found: Found | None = None) -> Found:
    """The specs the entry points of `group` name ("package:APP", a spec or a list of them)."""
    found = found if found is not None else Found()
    for point in importlib.metadata.entry_points(group=group):
        dist = point.dist.name if point.dist is not None else "?"
        where = f"entry point '{point.name} = {point.value}' ({group}, distribution {dist})"
        try:
            value = point.load()
        except Exception as err:  # a plugin's own bug: reported by name, the rest still loads
            _report(found, where, f"it failed to load: {type(err).__name__}: {err}")
            continue
        specs = value if isinstance(value, list | tuple) else [value]
        if not specs or not all(isinstance(spec, cls) for spec in specs):
            _report(found, where, f"it must name a {cls.__name__}, got {value!r}")
            continue
        module = sys.modules.get(point.module)
        package = point.module if hasattr(module, "__path__") else point.module.rpartition(".")[0]
        found.specs += [(spec, package, where) for spec in specs]
    return found


@functools.cache
def _entry_point_folders() -> tuple[Path, ...]:
    """The folder of each app or agent entry point's top-level package, found without
    importing it (once per process: reading every distribution's metadata takes ms, and
    every config composed asks)."""
    folders = []
    for group in (APP_GROUP, AGENT_GROUP):
        for point in importlib.metadata.entry_points(group=group):
            spec = importlib.util.find_spec(point.module.split(".")[0])
            if spec is not None and spec.submodule_search_locations:
                folders.append(Path(next(iter(spec.submodule_search_locations))))
    return tuple(folders)


def _import(module_name: str, folder: Path) -> ModuleType | str:
    """The imported package, or why it could not be imported (warned once)."""
    key = (module_name, str(folder))
    if key not in _MODULES:
        try:
            _MODULES[key] = importlib.import_module(module_name)
        except Exception as err:  # a plugin's own bug: reported by name, the rest still loads
            why = f"it failed to import: {type(err).__name__}: {err}"
            _MODULES[key] = why
            _warn(str(folder), why)
    return _MODULES[key]


def _report(found: Found, where: str, why: str) -> None:
    found.broken[where] = why
    _warn(where, why)


def _warn(where: str, why: str) -> None:
    warnings.warn(f"NetGauge left out {where}: {why}", PluginWarning, stacklevel=3)


def forget() -> None:
    """Try the packages again on the next look (after $NETGAUGE_APP_PATH changed)."""
    _MODULES.clear()
    _entry_point_folders.cache_clear()
