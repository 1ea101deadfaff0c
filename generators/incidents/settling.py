"""When a live lab's routing state has settled: the rule, apart from the lab that reads it.

A reading (`Reading`) is every router's kernel routes and addresses, and every OSPF
neighbour's and BGP peer's state, keyed `router|neighbour` (`router|interface|router-id`
for OSPF, `router|address` for BGP). The lab has settled when its reading stayed the same
for the window (at least MIN_QUIET_SAMPLES samples, so a starved machine's clock running
alone is not quiet) while no neighbour is on its way up.

Faults hold neighbours down for good, and some keep them moving while down: an OSPF MTU
mismatch holds an adjacency in ExStart/Exchange (the bigger end's DBDs are refused, and
retransmitted every second), a TCP MD5 mismatch or a wrong neighbour address keeps a BGP
session cycling Connect -> Active -> Connect at its 1 s connect-retry timer, a wrong
remote AS cycles it through OpenSent. A neighbour that has not been up (OSPF Full, BGP
Established) for HELD_S on end is *held down*: its state no longer counts as moving, and
the reading records it as `held` whichever non-up state it shows (or none: a neighbour
missing from the listing is down), so its cycling changes nothing. What it must not hide:
a held neighbour carries no routes, so everything it
could change shows in the routes, which still must stay the same over the window; a
neighbour that comes up again is no longer held. HELD_S is the time a healthy adjacency
or session needs to come up on this loaded machine, bounded well above what was measured
(see the README's "Settling"): OSPF retransmits every second and BGP retries its connection
every second (generators/netlab/frrconf.py), so a neighbour that will come up does so in a
few of those; one that has not for HELD_S is held by something.

`settle(read, window_s)` returns the last reading; `Unsettled` (an EnvironmentFailure)
says what kept changing when it does not settle within SETTLE_MAX_S.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pipeline.api import EnvironmentFailure

POLL_S = 0.3
SETTLE_MAX_S = 40.0
MIN_QUIET_SAMPLES = 3
HELD_S = 12.0  # a neighbour down this long is held down, not coming up (module docstring)
UP = ("Full", "Established")
TRANSITIONAL = ("Init", "ExStart", "Exchange", "Loading", "2-Way", "Connect", "OpenSent",
                "OpenConfirm")  # fmt: skip


class Unsettled(EnvironmentFailure):
    """The routing state kept changing for SETTLE_MAX_S."""


@dataclass(frozen=True)
class Reading:
    routes: Mapping[str, str]  # router -> its kernel routes and addresses, as read
    neighbours: Mapping[str, str]  # "router|neighbour" -> its state (FRR's words)
    idle: tuple[tuple[str, str], ...] = ()  # BGP peers idle with no reason: (router, address)


def is_up(state: str) -> bool:
    return state.split("/")[0] in UP


def is_transitional(state: str) -> bool:
    return state.split("/")[0].split(" ")[0] in TRANSITIONAL


@dataclass
class Settling:
    """The rule of the module docstring, fed one reading at a time."""

    window_s: float
    down_since: dict[str, float] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)  # every neighbour listed so far
    last: tuple | None = None
    since: float = 0.0
    samples: int = 0
    changes: list[str] = field(default_factory=list)  # what changed last, for the error

    def held(self, now: float) -> frozenset[str]:
        return frozenset(k for k, t in self.down_since.items() if now - t >= HELD_S)

    def observe(self, reading: Reading, now: float) -> bool:
        """Whether the lab has settled with this reading."""
        # a neighbour gone from the listing is down too, since it first went down: FRR
        # drops a neighbour it keeps failing with and lists it again at its next hello
        seen = {**dict.fromkeys(self.known, "absent"), **reading.neighbours}
        self.known |= set(seen)
        for key, state in seen.items():
            if is_up(state):
                self.down_since.pop(key, None)
            else:
                self.down_since.setdefault(key, now)
        held = self.held(now)
        neighbours = {k: "held" if k in held else s for k, s in seen.items()}
        moving = sorted(
            f"{k} {s}" for k, s in neighbours.items() if k not in held and is_transitional(s)
        )
        digest = (tuple(sorted(reading.routes.items())), tuple(sorted(neighbours.items())))
        if digest != self.last or moving:
            self.changes = moving or self._differences(digest)
            self.last, self.since, self.samples = digest, now, 0
            return False
        self.samples += 1
        return now - self.since >= self.window_s and self.samples >= MIN_QUIET_SAMPLES

    def _differences(self, digest: tuple) -> list[str]:
        if self.last is None:
            return ["the first reading"]
        out = []
        for before, after in zip(self.last, digest, strict=True):
            b, a = dict(before), dict(after)
            for key in sorted(set(b) | set(a)):
                if b.get(key) != a.get(key):
                    out.append(f"{key}: {_changed(b.get(key), a.get(key))}")
        return out


def _changed(before: str | None, after: str | None) -> str:
    if before is None or after is None:
        return f"{before!r} -> {after!r}"
    old, new = set(before.splitlines()), set(after.splitlines())
    gone = "; ".join(sorted(old - new)[:2])
    came = "; ".join(sorted(new - old)[:2])
    return f"-[{gone}] +[{came}]"


def settle(
    read: Callable[[], Reading],
    window_s: float,
    *,
    name: str,
    retry_idle: Callable[[tuple[tuple[str, str], ...]], None] = lambda idle: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Reading:
    """Read until settled (see the module docstring); BGP peers idle with no reason are
    retried once (`retry_idle`), and count as a change."""
    rule = Settling(window_s)
    deadline = clock() + SETTLE_MAX_S
    retried = False
    while clock() < deadline:
        reading = read()
        if reading.idle and not retried:
            retry_idle(reading.idle)
            retried = True
            rule.last = None
        if rule.observe(reading, clock()):
            return reading
        sleep(POLL_S)
    more = len(rule.changes) - 4
    shown = "; ".join(rule.changes[:4]) + (f" (+{more} more)" if more > 0 else "")
    raise Unsettled(
        f"{name}: the routing state kept changing for {SETTLE_MAX_S:g} s; last: {shown}"
    )
