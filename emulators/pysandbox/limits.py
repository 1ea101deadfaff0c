"""Resource limits for one sandboxed run of agent code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SandboxLimits:
    wall_timeout_s: float = 10.0  # wall-clock limit for one run, then SIGKILL
    cpu_time_s: int = 5  # RLIMIT_CPU for the child
    memory_mb: int = 1024  # RLIMIT_AS for the child, on top of nothing: the whole address space
    output_bytes: int = 65536  # captured print() output kept; the rest is cut
    result_bytes: int = 16 * 1024 * 1024  # largest serialised return value accepted
    code_bytes: int = 1024 * 1024  # largest reply source accepted (UTF-8 bytes)
