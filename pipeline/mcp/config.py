"""The schema of an MCP agent's config: conf/agent/<name>.yaml with `kind: mcp`.

The agent is the user's own program (`command`), started once per episode; it acts only
through the tools NetGauge serves it over MCP (pipeline/mcp/__init__.py lists them and
the environment variables it is started with).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from pipeline.config import check_time_limits
from pipeline.errors import ConfigError
from pipeline.variants import operational

TRANSPORTS = ("http", "stdio")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class MCPAgentConfig:
    name: str = "mcp_example"  # cell key; equals the YAML file's stem
    kind: str = "mcp"  # implementation in the agent registry
    uses_model: bool = False  # the agent brings its own model (if any): its cells use model=none
    # The user's agent program as an argument list (no shell); started once per episode.
    command: list[str] | None = None
    transport: str = "http"  # http: it connects to $NETGAUGE_MCP_URL; stdio: it runs the bridge
    env: dict[str, str] = field(default_factory=dict)  # variables set for it (stored with results)
    pass_env: list[str] = operational(default_factory=list)  # copied from NetGauge's (secrets)
    cwd: str | None = operational(None)  # where it starts (None: the project root)
    turn_timeout_s: float = 300.0  # its next action must come within this after a result
    episode_timeout_s: float = 1800.0  # the whole episode, from the agent's start
    max_bad_calls: int = 5  # unknown tools or overlapping actions tolerated before agent_error
    # The app's read-only diagnostics (show, run_code, kubectl_read) allowed between two
    # actions; each past it is a bad call.
    max_diagnostics: int = 10
    memory_mb: int = 4096  # memory cgroup of the agent's processes (as root; else not enforced)
    grace_s: float = operational(5.0)  # after the episode, time to exit before it is killed

    def validate(self) -> None:
        if self.transport not in TRANSPORTS:
            raise ConfigError(
                f"agent.transport='{self.transport}' is not allowed; choose one of: "
                f"{', '.join(TRANSPORTS)}"
            )
        if self.uses_model:
            raise ConfigError("agent.uses_model must be false for an MCP agent (kind: mcp)")
        check_time_limits(self.turn_timeout_s, self.episode_timeout_s)
        if self.max_bad_calls < 0:
            raise ConfigError(f"agent.max_bad_calls={self.max_bad_calls}; expected >= 0")
        if self.max_diagnostics < 0:
            raise ConfigError(f"agent.max_diagnostics={self.max_diagnostics}; expected >= 0")
        if self.memory_mb < 64:
            raise ConfigError(f"agent.memory_mb={self.memory_mb} is out of range; >= 64")
        if self.grace_s < 0:
            raise ConfigError(f"agent.grace_s={self.grace_s}; expected >= 0")
        for name in [*self.env, *self.pass_env]:
            if not ENV_NAME.match(name):
                raise ConfigError(f"agent.env / agent.pass_env: '{name}' is no variable name")

    def ready(self) -> None:
        """What the program needs from NetGauge's environment, checked before any work
        (pipeline/preflight.py)."""
        self.require_command()

    def require_command(self) -> list[str]:
        """The command, or a ConfigError saying how to give one (checked before any
        episode, not at composition: a named file may leave it to an override)."""
        if not self.command or not all(isinstance(a, str) and a for a in self.command):
            raise ConfigError(
                f"agent '{self.name}' (kind: mcp) has no agent.command: set the argument list "
                "that starts your MCP agent, e.g. agent.command='[python,my_agent.py]' or "
                f"in a copy of conf/agent/{self.name}.yaml"
            )
        missing = [name for name in self.pass_env if name not in os.environ]
        if missing:
            raise ConfigError(
                f"agent.pass_env names {', '.join(missing)}, not set in NetGauge's environment"
            )
        return list(self.command)
