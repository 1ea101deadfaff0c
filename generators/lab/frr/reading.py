"""One reading of an FRR lab's routing state, and what it says about convergence.

A reading holds, per router, the kernel's main routing table (read over netlink,
emulators/routes.py: next hops included, zebra's nexthop-object ids and carrier flags
left out) and the state of every OSPF neighbour and BGP peer, read over the daemons' vty
sockets (generators/lab/frr/vty.py): no process per router per poll. Its `digest` is what "the
routing state changed" compares; `moving` says a neighbour is in a transitional state.

Two protocol timers can change a quiet state later: an OSPF neighbour's inactivity (dead)
timer and a BGP session's hold timer, each restarted by every hello or message the
neighbour accepts. `refreshed(since)` says which of the Full adjacencies and Established
sessions have been refreshed after `since`:
  OSPF  the neighbour's dead timer fires `routerDeadIntervalTimerDueMsec` after the read,
        so it was last restarted at (read sent + due - the interface's dead interval); a
        daemon slow to answer makes that time earlier, never later, so no slowness can
        make a neighbour look refreshed when it was not;
  BGP   the session's received-message counter went up over a reading taken after
        `since` (keepalives arrive every keepalive interval).
A quiet state whose every adjacency and session was refreshed after the change that led
to it has no dead or hold timer left to fire (generators/lab/frr/warm.py uses it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from emulators.routes import Route
from pipeline.api import JSON

TRANSITIONAL = ("Init", "ExStart", "Exchange", "Loading", "2-Way", "Connect", "OpenSent",
                "OpenConfirm")  # fmt: skip
OSPF_READS = ("show ip ospf neighbor detail json", "show ip ospf interface json")
BGP_READS = ("show bgp summary json",)
UNKNOWN_DEAD_MS = 1 << 30


def json_documents(text: str) -> list[Any]:
    """The JSON documents a daemon printed one after another (one per command), skipping
    any text between them (a `%` warning of a daemon that is not configured)."""
    out, pos = [], 0
    while True:
        pos = text.find("{", pos)
        if pos < 0:
            return out
        try:  # what a daemon prints holds what agents configured: read it as untrusted
            value, pos = JSON.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pos += 1
            continue
        out.append(value)


@dataclass(frozen=True)
class BgpPeer:
    """A BGP peer as `show bgp summary json` gives it."""

    state: str  # Idle, Connect, Active, OpenSent, OpenConfirm, Established
    peer_state: str  # OK, or why it is held down (Admin, PfxCt, ...)
    sent: int  # messages sent to it
    received: int = 0  # messages received from it

    @property
    def idle(self) -> bool:
        """Down and waiting for its start timer (not shut down or held by policy)."""
        return self.state == "Idle" and self.peer_state == "OK"


@dataclass(frozen=True)
class OspfNeighbour:
    """An OSPF neighbour of one router, from `show ip ospf neighbor detail json`."""

    state: str  # Full, 2-Way, Init, ... (the part before FRR's "/DR" role)
    dead_due_ms: int  # when its inactivity timer fires, from the read
    dead_ms: int  # the dead interval of the interface it is seen on


def bgp_peers(router: str, out: str) -> dict[tuple[str, str], BgpPeer]:
    """The peers in a router's `show bgp summary json` (among other documents):
    {(router, address): BgpPeer}."""
    peers = {}
    for value in json_documents(out):
        unicast = value.get("ipv4Unicast") if isinstance(value, dict) else None
        if not isinstance(unicast, dict) or not isinstance(unicast.get("peers"), dict):
            continue
        for address, peer in unicast["peers"].items():
            if isinstance(peer, dict):
                peers[(router, address)] = BgpPeer(
                    str(peer.get("state", "")),
                    str(peer.get("peerState", "OK")),
                    int(peer.get("msgSent", 0) or 0),
                    int(peer.get("msgRcvd", 0) or 0),
                )
    return peers


def ospf_neighbours(router: str, out: str) -> dict[tuple[str, str, str], OspfNeighbour]:
    """{(router, interface, neighbour id): OspfNeighbour} from the detail and interface
    documents of one router's ospfd."""
    dead: dict[str, int] = {}
    found: list[tuple[str, dict[str, Any]]] = []
    for doc in json_documents(out):
        if not isinstance(doc, dict):
            continue
        if isinstance(doc.get("interfaces"), dict):
            for name, intf in doc["interfaces"].items():
                if isinstance(intf, dict):
                    dead[name] = int(intf.get("timerDeadSecs", 0) or 0) * 1000
        elif isinstance(doc.get("neighbors"), dict):
            for nbr_id, entries in doc["neighbors"].items():
                for entry in entries if isinstance(entries, list) else []:
                    if isinstance(entry, dict):
                        found.append((nbr_id, entry))
    return {
        (router, str(e.get("ifaceName", "")), nbr_id): OspfNeighbour(
            str(e.get("nbrState", "")).split("/")[0],
            int(e.get("routerDeadIntervalTimerDueMsec", 0) or 0),
            # unknown: never seen refreshed (a wait that ends in a failure, not a guess)
            dead.get(str(e.get("ifaceName", "")), UNKNOWN_DEAD_MS),
        )
        for nbr_id, e in found
    }


@dataclass
class Reading:
    """The routing state of every router at one moment; see the module docstring."""

    taken: float  # monotonic time the requests were sent
    routes: dict[str, tuple[Route, ...]]  # router -> its main table (emulators/routes.py)
    ospf: dict[tuple[str, str, str], OspfNeighbour] = field(default_factory=dict)
    peers: dict[tuple[str, str], BgpPeer] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        states = sorted(
            [f"ospf {k} {n.state}" for k, n in self.ospf.items()]
            + [f"bgp {k} {p.state} {p.peer_state}" for k, p in self.peers.items()]
        )
        return repr([sorted(self.routes.items()), states])

    @property
    def moving(self) -> bool:
        states = [n.state for n in self.ospf.values()] + [p.state for p in self.peers.values()]
        return any(s in TRANSITIONAL for s in states)

    def ospf_refreshed(self, since: float) -> set[tuple[str, str, str]]:
        """Full adjacencies whose dead timer was restarted after `since`."""
        return {
            key
            for key, n in self.ospf.items()
            if n.state == "Full" and self.taken + (n.dead_due_ms - n.dead_ms) / 1000 > since
        }

    def unrefreshed(self, baseline: Reading | None, since: float) -> list[str]:
        """Full adjacencies and Established sessions not refreshed after `since`; BGP
        counts from `baseline`, a reading taken after `since` (None: none yet)."""
        fresh = self.ospf_refreshed(since)
        out = [f"ospf {k}" for k, n in self.ospf.items() if n.state == "Full" and k not in fresh]
        for key, peer in self.peers.items():
            if peer.state != "Established":
                continue
            before = None if baseline is None else baseline.peers.get(key)
            if before is None or before.state != "Established" or peer.received <= before.received:
                out.append(f"bgp {key}")
        return out


def parse(
    taken: float,
    routes: Mapping[str, tuple[Route, ...]],
    ospfd: Mapping[str, str],
    bgpd: Mapping[str, str],
) -> Reading:
    """A Reading from every router's kernel routes and its daemons' answers."""
    reading = Reading(taken, dict(routes))
    for router, out in ospfd.items():
        reading.ospf.update(ospf_neighbours(router, out))
    for router, out in bgpd.items():
        reading.peers.update(bgp_peers(router, out))
    return reading
