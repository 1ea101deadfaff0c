"""The reference agents (agent kinds `oracle` and `null`): the oracle proves every query
solvable and the scorer fair, the null agent that answering nothing scores 0 %."""

from pipeline.registry import AgentSpec

AGENTS = [
    AgentSpec("oracle", ".agents:OracleAgent", "pipeline.config:AgentConfig"),
    AgentSpec("null", ".agents:NullAgent", "pipeline.config:AgentConfig"),
]
