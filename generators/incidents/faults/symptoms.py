"""What a NetLab shows against its intent, in one poll: the symptoms a fault can cause.

  flows        host pairs over ICMP, TCP and UDP that fail ("h1_1->h3_1/tcp")
  adjacencies  intended OSPF adjacencies not Full at one end (live.LabState)
  sessions     intended BGP sessions not Established at one end
  routes       a router without a route to some LAN
  paths        a path intent's hop whose FIB leaves it ("r2 10.2.5.11 via r2-eth3")
  ecmp         an ECMP intent whose next hops differ ("lf1 10.4.2.0/24 [lf1-eth3]")

The path and ECMP intents are read in the kernels' FIBs (`ip route get`, `ip route show`),
one shell round for all routers. A fault is observable when any class is non-empty once
the symptoms have settled (prove.py); which classes a kind shows is what the app's verdict
must check for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from emulators.probe import Flow
from generators.netlab.live import NetLab

CLASSES = ("flows", "adjacencies", "sessions", "routes", "paths", "ecmp")
_STATE = re.compile(r" \([^)]*\)$")  # a session's state, which moves while it stays down
_SEP = "@@intent@@"


@dataclass(frozen=True)
class Symptoms:
    flows: tuple[str, ...] = ()
    adjacencies: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    routes: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    ecmp: tuple[str, ...] = ()

    def classes(self) -> tuple[str, ...]:
        return tuple(c for c in CLASSES if getattr(self, c))

    @property
    def any(self) -> bool:
        return bool(self.classes())

    def signature(self) -> tuple:
        """What must stay the same for the symptoms to have settled: which flows fail
        may change from one probe to the next where ECMP hashes some flows onto a broken
        path, and a session's state changes while it stays down, so neither is in it."""
        sessions = tuple(_STATE.sub("", s) for s in self.sessions)
        return (bool(self.flows), self.adjacencies, sessions, self.routes, self.paths, self.ecmp)

    def to_json(self) -> dict[str, Any]:
        return {
            "classes": list(self.classes()),
            **{c: len(getattr(self, c)) for c in CLASSES},
            "examples": {c: list(getattr(self, c)[:3]) for c in self.classes()},
        }


def intent_breaks(lab: NetLab) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(path intents' hops that leave their link, ECMP intents whose next hops differ)."""
    spec = lab.spec
    asks: dict[str, dict[str, str]] = {}  # router -> {key: command}
    for e in spec.ecmp:
        asks.setdefault(e.router, {})[f"ecmp {e.prefix}"] = f"ip -4 route show {e.prefix}"
    for p in spec.paths:
        target = spec.host(p.target).address.split("/")[0]
        for router in p.routers[:-1]:
            asks.setdefault(router, {})[f"get {target}"] = f"ip -4 route get {target}"
    if not asks:
        return (), ()
    scripts = {
        r: "; ".join(f"echo {_SEP}; {command} 2>&1" for command in cmds.values())
        for r, cmds in asks.items()
    }
    outs = lab.emu._shell(scripts)
    seen: dict[tuple[str, str], str] = {}
    for router, cmds in asks.items():
        parts = outs[router][1].split(_SEP)[1:]
        for key, text in zip(cmds, parts, strict=False):
            seen[(router, key)] = text
    paths = []
    for p in spec.paths:
        target = spec.host(p.target).address.split("/")[0]
        for router, link in zip(p.routers[:-1], p.links, strict=True):
            want = spec.link(link).end(router)[0]
            text = seen.get((router, f"get {target}"), "")
            if f" dev {want} " not in text:
                got = re.search(r" dev (\S+)", text)
                paths.append(f"{router} {target} via {got.group(1) if got else '-'}")
    ecmp = []
    for e in spec.ecmp:
        text = seen.get((e.router, f"ecmp {e.prefix}"), "")
        devs = sorted(re.findall(r"nexthop via \S+ dev (\S+)", text))
        if not devs:
            devs = re.findall(r" dev (\S+)", text)[:1]
        if devs != sorted(e.via):
            ecmp.append(f"{e.router} {e.prefix} {devs}")
    return tuple(paths), tuple(ecmp)


def observe_symptoms(lab: NetLab, flows: Sequence[Flow]) -> Symptoms:
    state = lab.state()
    results = lab.emu.probe(flows)
    failed = sorted(f"{f.source}->{f.target}/{f.protocol}" for f, ok in results.items() if not ok)
    paths, ecmp = intent_breaks(lab)
    return Symptoms(
        flows=tuple(failed),
        adjacencies=tuple(sorted(state.adjacencies_down)),
        sessions=tuple(sorted(state.sessions_down)),
        routes=tuple(sorted(state.routes_missing)),
        paths=paths,
        ecmp=ecmp,
    )
