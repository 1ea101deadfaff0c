"""LLM agents: prompting strategies, NetLLMBench's repair chain, and served-model access."""

from pipeline.registry import AgentSpec

AGENTS = [AgentSpec("llm", ".agent:LLMAgent", ".config:LLMAgentConfig")]
