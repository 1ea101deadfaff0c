"""Lazy registries: name -> "module:object", imported only when that name is chosen.

Heavy backends (the MALT sandbox, later Mininet, Kathará, vLLM) are imported only by
the cells that use them, and a wrong name fails with a "did you mean" hint.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from pipeline.errors import RegistryError


class Registry:
    def __init__(self, kind: str, entries: dict[str, str]) -> None:
        self.kind = kind
        self._entries = dict(entries)

    def register(self, name: str, target: str) -> None:
        """Add or replace an entry ("module:object"); for plugins and tests."""
        self._entries[name] = target

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def load(self, name: str) -> Any:
        """Import and return the object registered under `name`."""
        try:
            target = self._entries[name]
        except KeyError:
            hint = difflib.get_close_matches(name, self._entries, n=1)
            near = f" (did you mean '{hint[0]}'?)" if hint else ""
            raise RegistryError(
                f"unknown {self.kind} '{name}'{near}; choose one of: {', '.join(self.names())}"
            ) from None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)


APPS = Registry(
    "app",
    {
        "malt": "generators.malt.app:MaltApp",
        "k8s": "generators.k8s.app:K8sApp",
        "routing": "generators.routing.app:RoutingApp",
        "netllmbench": "generators.netllmbench.app:NetLLMBenchApp",
    },
)
AGENTS = Registry(
    "agent",
    {
        "oracle": "pipeline.agents:OracleAgent",
        "null": "pipeline.agents:NullAgent",
        "llm": "pipeline.llm.agent:LLMAgent",
    },
)

# The config schema of each kind, per config group (checked before any work).
APP_SCHEMAS = Registry(
    "app kind",
    {
        "malt": "generators.malt.config:MaltConfig",
        "k8s": "generators.k8s.config:K8sConfig",
        "routing": "generators.routing.config:RoutingConfig",
        "netllmbench": "generators.netllmbench.config:NetLLMBenchConfig",
    },
)
AGENT_SCHEMAS = Registry(
    "agent kind",
    {
        "oracle": "pipeline.config:AgentConfig",
        "null": "pipeline.config:AgentConfig",
        "llm": "pipeline.llm.config:LLMAgentConfig",
    },
)
MODEL_SCHEMAS = Registry(
    "model kind",
    {
        "none": "pipeline.config:ModelConfig",
        "vllm_cpu": "pipeline.serving.config:VllmModelConfig",
        "vllm": "pipeline.serving.config:VllmModelConfig",
        "openai": "pipeline.serving.config:VllmModelConfig",
    },
)
SCHEMAS = {"app": APP_SCHEMAS, "agent": AGENT_SCHEMAS, "model": MODEL_SCHEMAS}
