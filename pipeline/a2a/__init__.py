"""A2A agents: NetGauge plays an agent at a URL over the A2A protocol (the a2a-sdk client),
as NetArena's green agent plays its purple agents.

    config.py        the schema of conf/agent/*.yaml files with `kind: a2a`
    agent.py         A2AAgent, the agent kind: one Conversation per episode
    conversation.py  one episode's messages: one per turn, with time limits and bounds
"""

from pipeline.registry import AgentSpec

AGENTS = [AgentSpec("a2a", ".agent:A2AAgent", ".config:A2AAgentConfig")]
