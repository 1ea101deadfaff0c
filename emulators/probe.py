"""Traffic probes across a lab's network namespaces, run from this process: an ICMP echo, a
TCP echo or a UDP echo per flow, each judged by what the target's namespace received and
what came back to the source.

A `Flow` is (source device, target device, the address probed, protocol). Every socket is
opened inside its device's namespace with setns(2) on this thread (emulators/setns.py) and
served by one poll loop: nothing forks, and no other process must be scheduled for a probe
to be answered.

  icmp  one raw ICMP socket per namespace sends 56-byte echo requests (ping's size, so an
        MTU below 84 bytes fails them as it fails ping) and sees the requests that reach it
        and the replies and errors that come back;
  tcp   a connection to port 7 of the address; 56 bytes sent and echoed back by a listener
        in the target's namespace;
  udp   a 56-byte datagram to port 7, echoed back by a socket in the target's namespace
        (the source's socket is connected: only the probed address may answer).

A flow succeeds when its payload came back to the source from the probed address AND the
target device's namespace received the request: an address answered by another device (an
alias on the source's own loopback, a duplicate elsewhere) fails.

Rounds. A flow that got no answer is asked again with the wait doubled, up to `retries`
more rounds; a refusal (an ICMP error, a reset, EPERM at the source, the wrong device
answering) is an answer and final. Answers that arrived while this process was not
scheduled are read before a round's time is judged over. From the second round on, flows
that succeeded in the first are sent again beside the silent ones as controls (one from the
silent flow's source and one to its target where such flows exist): when every control is
answered within a quarter of the round's wait, the machine demonstrably answered in time and
the silent flows are judged failed; otherwise the next round waits twice as long. On an idle
machine a flow that never answers costs two rounds (timeout + 2 x timeout).

The kernel's neighbour (ARP) table is one for the whole machine, every namespace's entries
counted against gc_thresh3: with many labs alive it fills, and packets that need a new
entry are dropped until garbage collection frees some (entries younger than 5 s are kept).
A round during which the table overflowed (its `table_fulls` counter, /proc/net/stat/
arp_cache, went up) proves nothing about its silent flows, nor about those refused as "host
unreachable" (a neighbour that could not be resolved: forced garbage collection drops
entries still being resolved, and a same-LAN pair can then fail with ICMP 3/1 or
EHOSTUNREACH; a reference player's ticket once named a same-LAN pair that none of its faults
could cut): rounds go on past `retries`, with waits of at most MAX_WAIT_S, until one passes
without an overflow; if none does within CROWDED_S, the probe raises EnvironmentFailure
rather than judge.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from emulators.flow import PROTOCOLS, Flow
from emulators.probe_round import Round
from pipeline.errors import EnvironmentFailure

# Flow and its constants are defined in emulators/flow.py, which a round imports too.
__all__ = ["PROTOCOLS", "Flow", "Prober", "table_fulls"]

NEIGH_STATS = Path("/proc/net/stat/arp_cache")
MAX_WAIT_S = 4.0  # the longest wait of one round
CROWDED_S = 30.0  # how long rounds may go on while the neighbour table overflows


class Prober:
    """Probes flows between the namespaces in `netns` (device -> open namespace fd)."""

    def __init__(self, netns: Mapping[str, int], *, timeout_s: float, retries: int) -> None:
        self.netns = netns
        self.timeout_s = timeout_s
        self.retries = retries
        self.rounds: list[int] = []  # flows (controls included) per round of the last probe

    def probe(self, flows: Sequence[Flow]) -> dict[Flow, bool]:
        """Flow -> whether it succeeded; see the module docstring for the rounds."""
        unknown = sorted({d for f in flows for d in (f.source, f.target)} - set(self.netns))
        if unknown:
            raise ValueError(f"no namespace for devices {unknown}")
        results: dict[Flow, bool] = {}
        todo = sorted(set(flows))
        answered: list[Flow] = []
        timeout = self.timeout_s
        self.rounds = []
        started = time.monotonic()
        number = 0
        while True:
            controls = _controls(todo, answered) if number else []
            overflows = table_fulls()
            outcome = Round(self.netns, [*todo, *controls]).run(timeout)
            crowded = table_fulls() != overflows
            self.rounds.append(len(todo) + len(controls))
            decided = [f for f in todo if outcome[f].decided]
            if crowded:  # an unresolved neighbour may be the overflow's doing: asked again
                decided = [f for f in decided if not outcome[f].unresolved]
            results.update({f: outcome[f].ok for f in decided})
            if number == 0:
                answered = [f for f in todo if results.get(f)]
            known = set(decided)
            todo = [f for f in todo if f not in known]
            if not todo:
                break
            in_time = [c for c in controls if outcome[c].ok and outcome[c].replied <= timeout / 4]
            if not crowded and controls and len(in_time) == len(controls):
                break
            if not crowded and number >= self.retries:
                break
            if crowded and time.monotonic() - started > CROWDED_S:
                raise EnvironmentFailure(
                    f"{len(todo)} flows got no answer while the kernel's neighbour table "
                    f"overflowed ({NEIGH_STATS}: table_fulls rose) for {CROWDED_S:g} s: "
                    "too many network namespaces on this machine to measure connectivity"
                )
            number += 1
            timeout = min(timeout * 2, MAX_WAIT_S)
        results.update(dict.fromkeys(todo, False))
        return results


def table_fulls() -> int:
    """How often the machine's neighbour table refused a new entry (it only grows)."""
    try:
        lines = NEIGH_STATS.read_text().splitlines()
    except OSError:
        return 0
    column = lines[0].split().index("table_fulls") if lines else -1
    return sum(int(line.split()[column], 16) for line in lines[1:] if line.strip())


def _controls(silent: Sequence[Flow], answered: Sequence[Flow]) -> list[Flow]:
    """Flows that answered in the first round sharing a source or a target with the silent
    ones: one per silent source and one per silent target, the same protocol first."""
    picked: dict[Flow, None] = {}
    for key in ("source", "target"):
        for value in sorted({getattr(f, key) for f in silent}):
            protocols = {f.protocol for f in silent if getattr(f, key) == value}
            near = [f for f in answered if getattr(f, key) == value]
            if near:
                picked.setdefault(min(near, key=lambda f: (f.protocol not in protocols, f)))
    if not picked and answered:
        picked.setdefault(answered[0])
    return list(picked)
