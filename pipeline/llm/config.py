"""The schema of an LLM agent's config: conf/agent/<name>.yaml with `kind: llm`.

A strategy is composed of independent choices: which worked examples the model sees
(`examples`), how it is asked to reason (`reasoning`), how its reply is decoded
(`decoding`), how the conversation is kept within the model's context (`context`), and
how an unusable reply is repaired (`repair`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.errors import ConfigError

EXAMPLES = ("none", "fixed", "nearest")
REASONING = ("none", "cot", "react")
DECODING = ("text", "json", "tools")
TOOL_CHOICE = ("named", "required", "auto")
OBSERVATIONS = ("full", "changes")


@dataclass
class RepairConfig:
    reprompt: bool = True  # re-prompt saying the format was wrong
    example: bool = True  # then re-prompt showing an example of the right format
    master_model: str | None = None  # then ask this conf/model/ model to extract the action


@dataclass
class ContextConfig:
    # Tokens the whole request may hold, the reply included; None: the model's
    # max_model_len. Older turns are left out to fit (the task and the latest observation
    # always stay); if even those do not fit, the episode ends as context_overflow.
    max_tokens: int | None = None
    keep_turns: int | None = None  # at most this many past turns (None: as many as fit)
    chars_per_token: float = 3.0  # the estimate of a text's tokens (errs on the long side)
    # full: every observation as the app wrote it (the default: what every earlier result
    # saw); changes: each one after the task as what changed since the one before it, where
    # the app can say (routing: the reachability matrix's changes), else whole.
    observations: str = "full"


@dataclass
class LLMAgentConfig:
    name: str = "zero_shot"  # cell key; equals the YAML file's stem
    kind: str = "llm"  # implementation in the agent registry
    uses_model: bool = True  # its cells run once per model of the grid
    examples: str = "none"  # none | fixed (the first `shots`) | nearest (most similar to the task)
    shots: int = 2  # examples shown when examples is fixed or nearest
    library: str | None = None  # more examples: an SFT export (JSONL of the train split)
    reasoning: str = "none"  # none | cot (step by step) | react (Thought / Action turns)
    decoding: str = "text"  # text | json (schema-constrained) | tools (native tool calls)
    tool_choice: str = "named"  # tools: named (call the action) | required | auto
    # reasoning=react with decoding=tools: read-only diagnostics the app offers (e.g.
    # running code on a copy of MALT's graph) the model may call before it acts, per turn.
    max_probes: int = 3
    repair: RepairConfig = field(default_factory=RepairConfig)
    context: ContextConfig = field(default_factory=ContextConfig)

    def validate(self) -> None:
        for key, value, allowed in (
            ("examples", self.examples, EXAMPLES),
            ("reasoning", self.reasoning, REASONING),
            ("decoding", self.decoding, DECODING),
            ("tool_choice", self.tool_choice, TOOL_CHOICE),
            ("context.observations", self.context.observations, OBSERVATIONS),
        ):
            if value not in allowed:
                raise ConfigError(
                    f"agent.{key}='{value}' is not allowed; choose one of: {', '.join(allowed)}"
                )
        if not self.uses_model:
            raise ConfigError("agent.uses_model must be true for an LLM agent (kind: llm)")
        if self.max_probes < 0:
            raise ConfigError(f"agent.max_probes={self.max_probes} must be >= 0")
        if self.shots < 1:
            raise ConfigError(f"agent.shots={self.shots} is out of range; expected >= 1")
        if self.context.max_tokens is not None and self.context.max_tokens < 16:
            raise ConfigError(
                f"agent.context.max_tokens={self.context.max_tokens} is out of range; >= 16"
            )
        if self.context.keep_turns is not None and self.context.keep_turns < 0:
            raise ConfigError("agent.context.keep_turns must be >= 0 (or null)")
        if self.context.chars_per_token <= 0:
            raise ConfigError("agent.context.chars_per_token must be positive")
