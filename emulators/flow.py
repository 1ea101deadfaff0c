"""A flow the prober checks: who sends, who must answer, at which address, over which
protocol (emulators/probe.py probes them in rounds, emulators/probe_round.py sends one)."""

from __future__ import annotations

from dataclasses import dataclass

PROTOCOLS = ("icmp", "tcp", "udp")
ECHO_PORT = 7
PAYLOAD_BYTES = 56


@dataclass(frozen=True, order=True)
class Flow:
    source: str  # the device that sends
    target: str  # the device that must answer
    address: str  # the IPv4 address probed
    protocol: str = "icmp"  # icmp | tcp | udp

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"flow protocol {self.protocol!r}: choose one of {PROTOCOLS}")
