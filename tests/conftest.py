"""Shared fixtures, and two rules about real components.

- Integration tests fail, not skip, under CI=true (a missing install step is a failure).
- A test that needs root or an emulator must be marked `integration`, so that
  `pytest -m "not integration"` (`make test-fast`) is the quick suite it claims to be:
  `require_root` and `require_emulator` fail an unmarked test, wherever they are called.
  A test marked `slow` counts as `integration` too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import pytest
from omegaconf import OmegaConf

from pipeline import registry
from pipeline.cells import CACHE_DIR_ENV
from pipeline.config import ROOT, NetGaugeConfig

IN_CI = os.environ.get("CI") == "true"
_running: list[pytest.Item] = []  # the test now in setup, call or teardown
_INTEGRATION_FIXTURES: set[str] = set()


def integration_fixture(function):
    """Mark every test that uses this fixture (directly or not) `integration`.

    Apply under `@pytest.fixture`; a fixture that starts real components declares it once
    instead of each test that uses it.
    """
    _INTEGRATION_FIXTURES.add(function.__name__)
    return function


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # tryfirst: before `-m` deselects by markers. A slow test is kept out of the fast
    # suite as well, so `-m "not integration"` alone selects it.
    for item in items:
        if _INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ())) or (
            item.get_closest_marker("slow") is not None
        ):
            item.add_marker(pytest.mark.integration)


SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def require(condition: bool, reason: str) -> None:
    """Skip with `reason` on a user's machine; fail under CI=true (a missing install step)."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


def _integration_only(what: str) -> None:
    item = _running[-1] if _running else None
    if item is not None and item.get_closest_marker("integration") is None:
        pytest.fail(
            f"{item.nodeid} needs {what} but is not marked integration: add "
            "`pytestmark = pytest.mark.integration` (or the mark) so the fast suite stays fast",
            pytrace=False,
        )


def require_root(reason: str) -> None:
    """`require` root for a test that starts real components (namespaces, emulators)."""
    _integration_only("root")
    require(os.geteuid() == 0, reason)


def require_emulator(name: str) -> None:
    """`require` what the emulator backend `name` needs: root, and its installed parts."""
    _integration_only(f"the {name} emulator")
    require(os.geteuid() == 0, f"the {name} backend needs root")
    if name == "mininet":
        try:
            import mininet.net  # noqa: F401
        except ImportError:
            require(False, "Mininet is not installed (scripts/setup.d/20-mininet.sh)")
    if name == "kathara":
        require(
            Path("/usr/sbin/dockerd").exists()
            and Path("/var/lib/netgauge/kathara/rootfs.done").exists(),
            "Docker and the Kathara base image are missing (scripts/setup.d/50-kathara.sh)",
        )
        try:
            import Kathara  # noqa: F401
        except ImportError:
            require(False, "the kathara package is not installed (scripts/setup.d/50-kathara.sh)")


SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
SLOTS = str(2 * len(os.sched_getaffinity(0)))  # Snakemake's --cores, as `make sweep` sets it


def snakemake(
    data: Path, *args: str, grid: str = "smoke", config: tuple[str, ...] = (), **kwargs: object
) -> subprocess.CompletedProcess:
    """`snakemake --cores N ARGS --config grid=GRID data_dir=DATA CONFIG...`, from the
    project root, with N twice the CPUs as `make sweep` gives it (Makefile)."""
    return subprocess.run(
        [
            SNAKEMAKE,
            "--cores",
            SLOTS,
            *args,
            "--config",
            f"grid={grid}",
            f"data_dir={data}",
            *config,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


def in_threads(count: int, work: Callable[[int], object]) -> list[BaseException]:
    """Run `work(0)` ... `work(count - 1)` on threads of their own; the errors they raised."""
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.fixture(scope="session", autouse=True)
def shared_cache(tmp_path_factory) -> Iterator[Path]:
    """One cache for every data directory of the session ($NETGAUGE_CACHE_DIR, inherited by
    the Snakemake runs): its entries are keyed by what they depend on, so each capacity and
    parsed topology is computed once (about 24 s per fresh data directory that plans
    malt and k8s levels 1-3) instead of once per test."""
    path = tmp_path_factory.mktemp("cache")
    with mock.patch.dict(os.environ, {CACHE_DIR_ENV: str(path)}):
        yield path


@pytest.fixture(scope="session")
@integration_fixture
def smoke_sweep(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The smoke grid swept once by Snakemake for the whole session (every app, oracle and
    null, levels 1-3): tests read it; one that writes into it must work on a copy."""
    require_root("the smoke grid's network apps need root")
    data = tmp_path_factory.mktemp("smoke")
    done = snakemake(data, "sweep")
    assert done.returncode == 0, done.stderr[-4000:]
    return data, done


@pytest.fixture
def echo_app():
    """Register the fake echo app for one test."""
    spec = registry.AppSpec(
        "echo", "tests.fakes:EchoApp", "tests.fakes:EchoConfig", "1", levels=(1, 2, 3)
    )
    with registry.APPS.override("echo", spec):
        yield


def echo_config(tmp_path: Path, *, agent: str = "oracle", queries: int = 6, **app: object):
    """A composed-looking config for the echo app (the echo app has no conf/ file)."""
    from tests.fakes import EchoConfig

    base = OmegaConf.structured(NetGaugeConfig)
    cfg = OmegaConf.merge(
        base,
        {
            "app": OmegaConf.merge(OmegaConf.structured(EchoConfig), app),
            "agent": {"name": agent, "kind": agent, "uses_model": False},
            "level": 1,
            "seed": 0,
            "queries": queries,
            "data_dir": str(tmp_path),
        },
    )
    return cfg
