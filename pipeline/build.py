"""Building a cell's objects from its composed config: the app, the agent, the hashes."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from pipeline import registry
from pipeline.agents import Agent
from pipeline.cells import Cell, Layout, cell_from_config, data_root
from pipeline.config import ROOT, compose, config_hash
from pipeline.core import App
from pipeline.datadir import ensure_layout
from pipeline.trials import trial_model
from pipeline.variants import section_settings


def cell_config(cell: Cell, data_dir: str, extra: list[str] | None = None) -> DictConfig:
    """Compose the config of one cell (the DAG's and the CLI's single entry point)."""
    return compose([*cell.overrides_all(), f"data_dir={data_dir}", *(extra or [])])


def layout(cfg: DictConfig) -> Layout:
    """The cell's data directory, moved to the current layout first if it is older."""

    root = data_root(cfg.data_dir)
    ensure_layout(root)
    return Layout(root)


def make_app(cfg: DictConfig) -> App:
    app_cls = registry.APPS.get(cfg.app.kind).app_class()
    shared = data_root(cfg.shared_data_dir) if cfg.shared_data_dir else None
    if shared is not None and not shared.is_absolute():
        shared = ROOT / shared
    app_cfg = OmegaConf.to_object(cfg.app)
    return app_cls(app_cfg, layout(cfg).cache / cfg.app.name, shared)


def make_agent(cfg: DictConfig, app: App, models: Any = None) -> Agent:
    """The cell's agent; one that uses a model gets it from `models` (a ModelPool)."""
    agent_cls = registry.AGENTS.get(cfg.agent.kind).agent_class()
    if cfg.agent.uses_model:  # with its trial's sampling seed (pipeline/trials.py)
        return agent_cls(cfg.agent, app, model=trial_model(cfg), models=models)
    return agent_cls(cfg.agent, app)


def app_version(cfg: DictConfig) -> str:
    """The version the cell's app declares (its AppSpec): part of every query's identity."""
    return registry.APPS.get(cfg.app.kind).version


def queries_hash(cfg: DictConfig) -> str:
    """What a queries shard depends on: the app's result settings and version, level and
    seed; not the count (a shard serves every count up to its length)."""
    repeats = [True] if cfg.get("allow_repeats") else []  # unchanged hash when off
    version = app_version(cfg)
    return config_hash(section_settings("app", cfg.app), version, cfg.level, cfg.seed, *repeats)


def run_hash(cfg: DictConfig) -> str:
    """What a cell's transcripts and verdicts depend on: its queries and their count, and
    the result settings of its agent and (if the agent uses one) its model."""
    model = section_settings("model", cfg.model) if cfg.agent.uses_model else None
    trial = [cfg.trial] if cfg.get("trial") else []  # unchanged hash for trial 0
    return config_hash(
        queries_hash(cfg), cfg.queries, section_settings("agent", cfg.agent), model, *trial
    )


__all__ = ["Cell", "cell_config", "cell_from_config", "layout", "make_agent", "make_app"]
