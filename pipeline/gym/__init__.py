"""Gymnasium environments of every NetGauge app, registered as `NetGauge/<Name>-v0`.

    import gymnasium as gym
    import pipeline.gym                     # registers one id per conf/app/*.yaml
    env = gym.make("NetGauge/Malt-v0", levels=[1, 2, 3], queries=500)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(reply_text)
    env.close()

    gym.make("pipeline.gym:NetGauge/Malt-v0")   # the same, importing the module for you

Names: an app config `malt_google` becomes `NetGauge/MaltGoogle-v0`. A new app gets its
id as soon as its `conf/app/<name>.yaml` exists; nothing here names an app. The
environment and its reward are documented in `pipeline.gym.env`.
"""

from __future__ import annotations

import re

import gymnasium as gym

from pipeline.config import choices

ENTRY_POINT = "pipeline.gym.env:NetGaugeEnv"
VERSION = 0


def env_id(app: str) -> str:
    """`malt` -> `NetGauge/Malt-v0`, `malt_google` -> `NetGauge/MaltGoogle-v0`."""
    name = "".join(part[:1].upper() + part[1:] for part in re.split(r"[_.\-]", app) if part)
    return f"NetGauge/{name}-v{VERSION}"


def register_envs() -> list[str]:
    """Register an id for every app config (idempotent); return the ids."""
    ids = []
    for app in choices("app"):
        ident = env_id(app)
        if ident not in gym.registry:
            gym.register(id=ident, entry_point=ENTRY_POINT, kwargs={"app": app})
        ids.append(ident)
    return ids


ENV_IDS = register_envs()

__all__ = ["ENV_IDS", "env_id", "register_envs"]
