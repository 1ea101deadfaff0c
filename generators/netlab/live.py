"""A NetSpec running: Mininet devices, FRR daemons in their jails, convergence by state.

`NetLab(spec)` is a context manager: entering builds the lab on Mininet, snapshots its
kernel state (before any routing daemon ran), writes every router's configuration
(frrconf.py) and starts its daemons (generators/lab/frr/daemons.py: one RouterDaemons
per set of daemons, since a leaf runs no ospfd and a CE no ospfd either). `converge()`
polls the intended state, not a quiet window: every adjacency of the spec Full on its two
interfaces, every session Established at both ends, every router holding a route to
every host LAN, and the stated ECMP next hops and paths in the kernel's routes; then
every host pair is probed over the chosen protocols, and the lab has converged when all
of them work. Leaving stops the daemons and the lab.

This is the substrate's own proof that a family works (tests, bench); the warm pool of
issue 29 keeps labs alive across queries and resets them by configuration diff.
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from emulators.base import EMULATORS, Lab
from emulators.probe import PROTOCOLS, Flow
from generators.lab.frr.daemons import RouterDaemons, cleanup_stale
from generators.netlab.frrconf import all_configs
from generators.netlab.spec import NetSpec
from pipeline.api import EnvironmentFailure

CONVERGE_S = 60.0
POLL_S = 0.2


@dataclass
class LabState:
    """What the routers report against what the spec intends."""

    adjacencies_down: list[str] = field(default_factory=list)  # "r1 r1-eth1 -> r2"
    sessions_down: list[str] = field(default_factory=list)  # "lf1 -> 172.16.0.5 (Active)"
    routes_missing: list[str] = field(default_factory=list)  # "r3 10.1.7.0/24"

    @property
    def converged(self) -> bool:
        return not (self.adjacencies_down or self.sessions_down or self.routes_missing)

    def summary(self) -> str:
        parts = [
            f"{len(items)} {what}: {', '.join(items[:3])}"
            for what, items in (
                ("adjacencies down", self.adjacencies_down),
                ("sessions down", self.sessions_down),
                ("routes missing", self.routes_missing),
            )
            if items
        ]
        return "; ".join(parts) or "converged"


def json_documents(out: str) -> list[Any]:
    """The JSON documents vtysh printed one after another (one per -c)."""
    values, decoder, pos = [], json.JSONDecoder(), 0
    text = out.strip()
    while pos < len(text):
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        values.append(value)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return values


def host_flows(spec: NetSpec, protocols: Sequence[str] = PROTOCOLS) -> list[Flow]:
    """Every ordered pair of hosts, over each protocol."""
    hosts = [(h.name, h.address.split("/")[0]) for h in spec.hosts]
    return [
        Flow(src, dst, address, p)
        for p in protocols
        for src, _ in hosts
        for dst, address in hosts
        if src != dst
    ]


class NetLab:
    """See the module docstring."""

    def __init__(self, spec: NetSpec, *, probe_timeout_ms: int = 250, probe_retries: int = 3):
        self.spec = spec
        backend = EMULATORS.load("mininet")
        self.emu = backend(probe_timeout_ms=probe_timeout_ms, probe_retries=probe_retries)
        self.daemons: dict[str, RouterDaemons] = {}  # router -> its group's daemons
        self.timings: dict[str, float] = {}

    def __enter__(self) -> Self:
        backend = type(self.emu)
        backend.cleanup_stale()
        cleanup_stale(lambda prefix: bool(backend.leftovers(prefix)))
        self.emu.__enter__()
        try:
            started = time.perf_counter()
            self.emu.build(self.lab_model())
            self.timings["build_s"] = time.perf_counter() - started
            started = time.perf_counter()
            self.emu.snapshot()
            self.timings["snapshot_s"] = time.perf_counter() - started
            started = time.perf_counter()
            self._start()
            self.timings["daemons_s"] = time.perf_counter() - started
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        for group in {id(g): g for g in self.daemons.values()}.values():
            group.remove()
        self.daemons.clear()
        self.emu.stop()

    def lab_model(self) -> Lab:
        """The emulators' Lab this NetLab builds (a subclass may add to it)."""
        return self.spec.to_lab()

    def frr_configs(self) -> dict[str, dict[str, str]]:
        """{router: {daemon: text}} the daemons start with (a subclass may add to it)."""
        return all_configs(self.spec)

    def _start(self) -> None:
        configs = self.frr_configs()
        groups: dict[tuple[str, ...], list[str]] = {}
        for r in self.spec.routers:
            groups.setdefault(r.daemons, []).append(r.name)
        for daemons, routers in groups.items():
            group = RouterDaemons(self.emu.prefix, routers, daemons, self.emu.netns_path)
            self.daemons.update(dict.fromkeys(routers, group))
            group.write_configs({r: configs[r] for r in routers})
        for group in {id(g): g for g in self.daemons.values()}.values():
            group.start()

    # -- observation -------------------------------------------------------------------
    def vtysh(self, router: str, commands: Sequence[str]) -> str:
        return self.daemons[router].vtysh(router, commands)

    def state(self) -> LabState:
        """One poll of every router (its daemons' vty sessions, kernel routes in one round)."""
        spec = self.spec
        outs: dict[str, str] = {}
        for group in {id(g): g for g in self.daemons.values()}.values():
            commands = []
            if "ospfd" in group.daemons:
                commands.append("show ip ospf neighbor json")
            if "bgpd" in group.daemons:
                commands.append("show bgp summary json")
            if commands:
                outs.update(group.answer(dict.fromkeys(group.routers, commands)))
        routes = self.emu._shell({r.name: "ip -4 route show" for r in spec.routers})
        state = LabState()
        ospf, bgp = _neighbours(outs)
        loopback = {r.name: r.loopback for r in spec.routers}
        for adj in spec.adjacencies:
            for me, intf, peer in ((adj.a, adj.a_intf, adj.b), (adj.b, adj.b_intf, adj.a)):
                if ospf.get((me, loopback[peer], intf)) != "Full":
                    state.adjacencies_down.append(f"{me} {intf} -> {peer}")
        for s in spec.sessions:
            for me, peer_addr in ((s.a, s.b_addr), (s.b, s.a_addr)):
                got = bgp.get((me, peer_addr), "absent")
                if got != "Established":
                    state.sessions_down.append(f"{me} -> {peer_addr} ({got})")
        lans = [lan.subnet for lan in spec.lans]
        tables = {r.name: kernel_devices(routes[r.name][1]) for r in spec.routers}
        for r in spec.routers:
            state.routes_missing += [f"{r.name} {p}" for p in lans if p not in tables[r.name]]
        state.routes_missing += _intents_pending(spec, tables)
        return state

    def converge(self, protocols: Sequence[str] = PROTOCOLS, timeout_s: float = CONVERGE_S) -> int:
        """Wait for the intended state, then until every host pair works; returns the
        polls it took. EnvironmentFailure naming what is still wrong after `timeout_s`."""
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        flows, polls, state = host_flows(self.spec, protocols), 0, LabState()
        while time.monotonic() < deadline:
            polls += 1
            state = self.state()
            if not state.converged:
                time.sleep(POLL_S)
                continue
            self.timings.setdefault("state_s", time.perf_counter() - started)
            probe_started = time.perf_counter()
            results = self.emu.probe(flows)
            self.timings["probe_s"] = time.perf_counter() - probe_started
            failed = [f for f, ok in results.items() if not ok]
            if not failed:
                self.timings["converge_s"] = time.perf_counter() - started
                return polls
            state = LabState(routes_missing=[f"flow {f.source}->{f.target}" for f in failed])
        raise EnvironmentFailure(
            f"{self.spec.name} did not converge in {timeout_s:g} s: {state.summary()}"
        )


def kernel_devices(table: str) -> dict[str, list[str]]:
    """{prefix: the devices of its next hops} of `ip -4 route show` output: a multipath
    route's next hops follow it on indented `nexthop ... dev X` lines."""
    devices: dict[str, list[str]] = {}
    current: list[str] = []
    for line in table.splitlines():
        words = line.split()
        if not words:
            continue
        if not line[0].isspace():
            current = devices.setdefault(words[0], [])
        if "dev" in words[:-1]:
            current.append(words[words.index("dev") + 1])
    return devices


def _intents_pending(spec: NetSpec, tables: dict[str, dict[str, list[str]]]) -> list[str]:
    """The stated ECMP and path intents the kernel routes do not show yet. OSPF installs a
    prefix's first next hop before SPF has found its equal-cost twin, so a route to every
    LAN is not yet the intended state (a test reading the FIB then saw one next hop)."""
    pending = []
    for e in spec.ecmp:
        got = sorted(tables[e.router].get(e.prefix, []))
        if got != sorted(e.via):
            pending.append(f"{e.router} {e.prefix} via {got}, intended {sorted(e.via)}")
    for p in spec.paths:
        target = spec.host(p.target)
        prefix = str(ipaddress.ip_interface(target.address).network)
        for router, link in zip(p.routers[:-1], p.links, strict=True):
            want, got = spec.link(link).end(router)[0], tables[router].get(prefix, [])
            if want not in got:
                pending.append(f"{router} {prefix} via {got}, path {want}")
    return pending


def _neighbours(
    outs: dict[str, str],
) -> tuple[dict[tuple[str, str, str], str], dict[tuple[str, str], str]]:
    """({(router, neighbour id, interface): OSPF state}, {(router, peer): BGP state})."""
    ospf: dict[tuple[str, str, str], str] = {}
    bgp: dict[tuple[str, str], str] = {}
    for router, out in outs.items():
        for value in json_documents(out):
            if not isinstance(value, dict):
                continue
            for neighbour, entries in (value.get("neighbors") or {}).items():
                for entry in entries if isinstance(entries, list) else []:
                    intf = str(entry.get("ifaceName", "")).split(":")[0]
                    ospf[(router, neighbour, intf)] = str(entry.get("nbrState", "")).split("/")[0]
            peers = (value.get("ipv4Unicast") or {}).get("peers") or {}
            for address, peer in peers.items():
                bgp[(router, address)] = str(peer.get("state", ""))
    return ospf, bgp
