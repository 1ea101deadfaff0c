"""Shared fixtures; and the rule that integration tests fail, not skip, under CI=true."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pipeline import registry
from pipeline.config import NetGaugeConfig

IN_CI = os.environ.get("CI") == "true"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def require(condition: bool, reason: str) -> None:
    """Skip with `reason` on a user's machine; fail under CI=true (a missing install step)."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


def require_emulator(name: str) -> None:
    """`require` what the emulator backend `name` needs: root, and its installed parts."""
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


@pytest.fixture
def echo_app():
    """Register the fake echo app for one test."""
    registry.APPS.register("echo", "tests.fakes:EchoApp")
    registry.APP_SCHEMAS.register("echo", "tests.fakes:EchoConfig")
    yield
    registry.APPS.unregister("echo")
    registry.APP_SCHEMAS.unregister("echo")


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
