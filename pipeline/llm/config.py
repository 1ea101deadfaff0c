"""The schema of an LLM agent's config: conf/agent/<name>.yaml with `kind: llm`."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.errors import ConfigError

STRATEGIES = ("zero_shot", "few_shot", "cot", "react")


@dataclass
class RepairConfig:
    reprompt: bool = True  # re-prompt saying the format was wrong
    example: bool = True  # then re-prompt showing an example of the right format
    master_model: str | None = None  # then ask this conf/model/ model to extract the action


@dataclass
class LLMAgentConfig:
    name: str = "zero_shot"  # cell key; equals the YAML file's stem
    kind: str = "llm"  # implementation in the agent registry
    uses_model: bool = True  # its cells run once per model of the grid
    strategy: str = "zero_shot"  # zero_shot | few_shot | cot | react
    repair: RepairConfig = field(default_factory=RepairConfig)

    def validate(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConfigError(
                f"agent.strategy='{self.strategy}' is not allowed; "
                f"choose one of: {', '.join(STRATEGIES)}"
            )
        if not self.uses_model:
            raise ConfigError("agent.uses_model must be true for an LLM agent (kind: llm)")
