"""Building a cell's objects from its composed config: the app, the agent, the hashes."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from pipeline import registry
from pipeline.agents import Agent
from pipeline.cells import Cell, Layout, cell_from_config, data_root
from pipeline.config import ROOT, compose, config_hash
from pipeline.core import App


def cell_config(cell: Cell, data_dir: str, extra: list[str] | None = None) -> DictConfig:
    """Compose the config of one cell (the DAG's and the CLI's single entry point)."""
    return compose([*cell.overrides(), f"data_dir={data_dir}", *(extra or [])])


def layout(cfg: DictConfig) -> Layout:
    return Layout(data_root(cfg.data_dir))


def make_app(cfg: DictConfig) -> App:
    app_cls = registry.APPS.load(cfg.app.kind)
    shared = data_root(cfg.shared_data_dir) if cfg.shared_data_dir else None
    if shared is not None and not shared.is_absolute():
        shared = ROOT / shared
    app_cfg = OmegaConf.to_object(cfg.app)
    return app_cls(app_cfg, layout(cfg).cache / cfg.app.name, shared)


def make_agent(cfg: DictConfig, app: App, models: Any = None) -> Agent:
    """The cell's agent; one that uses a model gets it from `models` (a ModelPool)."""
    agent_cls = registry.AGENTS.load(cfg.agent.kind)
    if cfg.agent.uses_model:
        return agent_cls(cfg.agent, app, model=cfg.model, models=models)
    return agent_cls(cfg.agent, app)


def queries_hash(cfg: DictConfig, app: App) -> str:
    """What a queries shard depends on: the app config and version, level, seed, count."""
    return config_hash(cfg.app, app.version, cfg.level, cfg.seed, cfg.queries)


def run_hash(cfg: DictConfig, app: App) -> str:
    """What a cell's transcripts and verdicts depend on: its queries, agent and model."""
    return config_hash(queries_hash(cfg, app), cfg.agent, cfg.model)


__all__ = ["Cell", "cell_config", "cell_from_config", "layout", "make_agent", "make_app"]
