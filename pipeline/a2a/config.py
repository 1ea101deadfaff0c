"""The schema of an A2A agent's config: conf/agent/<name>.yaml with `kind: a2a`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from pipeline.config import check_time_limits
from pipeline.errors import ConfigError
from pipeline.variants import operational


@dataclass
class A2AAgentConfig:
    name: str = "a2a_example"  # cell key; equals the YAML file's stem
    kind: str = "a2a"  # implementation in the agent registry
    uses_model: bool = False  # the agent brings its own model (if any): its cells use model=none
    url: str | None = None  # the agent's base URL (its card: <url>/.well-known/agent-card.json)
    # More HTTP headers for every request: literal values, and values read from environment
    # variables (so secrets stay out of configs and results).
    headers: dict[str, str] = operational(default_factory=dict)
    headers_env: dict[str, str] = operational(default_factory=dict)
    instructions: bool = True  # the first message adds the app's reply format and an example
    turn_timeout_s: float = 300.0  # each message must be answered within this
    episode_timeout_s: float = 1800.0  # the whole episode

    def validate(self) -> None:
        if self.uses_model:
            raise ConfigError("agent.uses_model must be false for an A2A agent (kind: a2a)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"agent.url='{self.url}' must start with http:// or https://")
        check_time_limits(self.turn_timeout_s, self.episode_timeout_s)

    def ready(self) -> None:
        """What the agent needs from NetGauge's environment, checked before any work
        (pipeline/preflight.py)."""
        self.require_url()
        self.resolved_headers()

    def require_url(self) -> str:
        """The URL, or a ConfigError saying how to give one (checked before any episode,
        not at composition: a named file may leave it to an override)."""
        if not self.url:
            raise ConfigError(
                f"agent '{self.name}' (kind: a2a) has no agent.url: set the base URL of your "
                "A2A agent, e.g. agent.url=http://127.0.0.1:9009, or in a copy of "
                f"conf/agent/{self.name}.yaml"
            )
        return self.url

    def resolved_headers(self) -> dict[str, str]:
        """`headers` plus each `headers_env` header read from its variable."""
        missing = [var for var in self.headers_env.values() if var not in os.environ]
        if missing:
            raise ConfigError(
                f"agent.headers_env reads {', '.join(missing)}, not set in NetGauge's environment"
            )
        return {**self.headers, **{h: os.environ[v] for h, v in self.headers_env.items()}}
