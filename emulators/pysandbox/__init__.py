"""Runs untrusted `process_graph(graph)` code in a forked, isolated process.

Public API (see README in this folder for the isolation layers):
    SandboxLimits   - CPU, wall-clock, memory and output limits
    SandboxResult   - typed status, the serialised return value, captured stdout
    GraphSandbox    - context manager: one zygote process per base graph; `run(code)`
"""

from emulators.pysandbox.limits import SandboxLimits

__all__ = ["SandboxLimits"]
