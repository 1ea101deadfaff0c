"""How NetGauge's entry points log: one format, INFO by default (DEBUG when asked), and the
libraries that log a line per HTTP request or session (httpx, httpcore: one per model
call of a sweep; the MCP and A2A SDKs' servers: one or two per episode of an external
agent) kept at WARNING unless debugging. Per-item detail (a query redrawn, a request sent) is
DEBUG; INFO says what a stage does and what it made."""

from __future__ import annotations

import logging

CHATTY = ("httpx", "httpcore", "mcp", "a2a")  # a line per request or session at INFO
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def quiet_libraries(debug: bool = False) -> None:
    """The chatty libraries at WARNING (DEBUG with `debug`); for entry points whose logging
    another framework set up (Hydra's pipeline.run)."""
    for name in CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.WARNING)


def configure(debug: bool = False, *, timestamps: bool = True) -> None:
    """An entry point's logging: INFO (DEBUG with `debug`) to stderr, libraries quieted."""
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO,
        format=FORMAT if timestamps else FORMAT.removeprefix("%(asctime)s "),
    )
    quiet_libraries(debug)
