"""Checks that need no work, run before any query is generated.

A cell's config can be valid and still unplayable from the start: the data directory cannot
be created, the MCP agent has no `agent.command`, the A2A agent no `agent.url`, a variable
that `agent.pass_env`, `agent.headers_env`, `model.headers_env` or `model.api_key_env`
names is not set, or an external model endpoint answers nothing at all. Each would
otherwise surface only when the first episode starts, after the queries were generated
(30-50 s on the lab apps), and some as a traceback per episode. `check_cell(cfg)` raises
the first of them as one NetGaugeError line; `python -m pipeline.run` and the plan stage
call it (the plan without the network probe, which belongs to the job that uses the model).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pipeline.errors import ConfigError, EnvironmentFailure

PROBE_TIMEOUT_S = 5.0


def check_data_dir(data_dir: str | Path) -> None:
    """The data directory exists or can be made, and can be written."""
    from pipeline.cells import data_root

    root = data_root(data_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"data_dir={data_dir}: cannot create {root}: {err.strerror}") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise ConfigError(f"data_dir={data_dir}: {root} is not writable")


def check_agent(agent: Any) -> None:
    """What the agent needs from NetGauge's environment (its config's `ready()`)."""
    ready = getattr(_plain(agent), "ready", None)
    if ready is not None:
        ready()


def check_model(model: Any, probe: bool = True) -> None:
    """The model's variables are set; an external endpoint answers (`probe`)."""
    cfg = _plain(model)
    if getattr(cfg, "kind", "none") == "none":
        return
    missing = [v for v in getattr(cfg, "headers_env", {}).values() if v not in os.environ]
    if missing:
        raise ConfigError(f"model.headers_env reads {', '.join(missing)}, not set")
    if getattr(cfg, "endpoint", None) != "external":
        return
    key = cfg.api_key_env
    if key is not None and not os.environ.get(key):
        raise ConfigError(f"model.api_key_env names ${key}, which is unset or empty")
    if probe:
        reach(cfg.base_url)


def reach(base_url: str) -> None:
    """Raise EnvironmentFailure when nothing answers at `base_url` (any HTTP answer, even
    an error status, means a server is there; its model name is checked on first use)."""
    import httpx

    url = base_url.rstrip("/") + "/models"
    try:
        httpx.get(url, timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError as err:
        raise EnvironmentFailure(
            f"cannot reach the model endpoint {base_url} ({type(err).__name__}: "
            f"{err or 'no answer'}); is the server running? (model.base_url)"
        ) from None


def check_cell(cfg: DictConfig, probe: bool = True) -> None:
    """Every check above for one composed cell config."""
    check_data_dir(cfg.data_dir)
    check_agent(cfg.agent)
    if cfg.agent.uses_model:
        check_model(cfg.model, probe)


def _plain(section: Any) -> Any:
    return OmegaConf.to_object(section) if isinstance(section, DictConfig) else section
