"""Runs untrusted `process_graph(graph)` code in a forked, isolated process.

Public API (see README in this folder for the isolation layers):
    SandboxLimits   - CPU, wall-clock, memory and output limits
    SandboxResult   - typed status, the serialised return value, captured stdout
    GraphSandbox    - context manager: one zygote process per base graph; `run(code)`

The names are loaded lazily: the zygote imports this package too, and everything it
imports (subprocess, for one) is within reach of the agent code its children run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emulators.pysandbox.limits import SandboxLimits
    from emulators.pysandbox.result import SandboxResult
    from emulators.pysandbox.sandbox import GraphSandbox

__all__ = ["GraphSandbox", "SandboxLimits", "SandboxResult"]

_HOMES = {
    "GraphSandbox": "emulators.pysandbox.sandbox",
    "SandboxLimits": "emulators.pysandbox.limits",
    "SandboxResult": "emulators.pysandbox.result",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'emulators.pysandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
