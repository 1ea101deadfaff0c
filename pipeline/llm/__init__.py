"""LLM agents: prompting strategies, NetLLMBench's repair chain, and served-model access."""
