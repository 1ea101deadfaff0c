"""NetGauge's one exception hierarchy: every failure the pipeline reports is a NetGaugeError.

Messages say what was wrong, what was expected, and which key or input caused it.
Agent misbehaviour is never an exception: it is a typed `Outcome` in the results.
"""

from __future__ import annotations


class NetGaugeError(Exception):
    """Base class of every error NetGauge raises on purpose."""


class ConfigError(NetGaugeError):
    """A configuration value, key or name is wrong; raised before any work starts."""


class DataError(NetGaugeError):
    """An input file is missing or unreadable, or a stored shard does not match its schema."""


class EnvironmentFailure(NetGaugeError):
    """An emulator, sandbox or model server failed for reasons that are not the agent's."""


class QueryGenerationError(NetGaugeError):
    """An app's generator drew no valid query in its allowed tries, or its oracle disagrees
    with the analytic answer; the message names the query and the last reasons."""


class RegistryError(ConfigError):
    """A name (app, agent, backend) is not registered."""
