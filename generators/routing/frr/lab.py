"""A running FRR lab: Mininet devices, FRR daemons per router, convergence by polling.

`FrrLab(topo, cfg)` is a context manager: entering builds the Mininet lab, snapshots its
kernel state (before any routing daemon ran), starts the daemons with the healthy
configuration and waits until every required flow works. The required flows are every
ordered pair of hosts (h<i> -> h<j>) over the configured protocols: routers are the means,
the hosts' traffic is what the network is for.

Convergence is polled, never slept for: `settle(window_s)` returns once the routers'
kernel routes and their OSPF and BGP neighbour states have not changed for `window_s`
(and no neighbour is in a transitional state), then probes. A short window follows an
ordinary step; the final verdict's state is judged after a window longer than the OSPF
dead interval, so a change that breaks an adjacency only when its dead timer fires (a
hello mismatch) is seen before it counts. `reset()` kills the daemons, restores the
kernel snapshot (verified, emulators/namespaced.py), rewrites the healthy configuration
and starts them again.

After an agent's change, BGP sessions that are down and idle are retried at once
(`clear bgp <peer>`, as an operator would): FRR doubles a peer's idle-hold (start) timer
after every failed attempt, up to 120 s, so a session broken for a while would otherwise
come up minutes after the change that fixed it, and the verdict would depend on how long
the fault had lasted and how fast the machine ran. A retried peer counts as settling until
its attempt has been made (it left Idle or sent a message), so a fix is seen working and a
session still wrong is seen failing again, on an idle or a loaded machine alike.

What a settled state is judged on is the hosts' traffic and the protocol state of the
intended network (generators/routing/frr/intent.py: adjacencies, sessions, which protocol
each route is learned by, no static routes), both read after the same quiet window, so
the final window's durability holds for either. The intended state's kernel routes are
the lab's own before any daemon ran, recorded once when it is built (a reset restores
exactly that snapshot); a (re)started healthy network must show the whole intended state
before it counts as converged, so the intent and the lab can never drift apart unseen.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from emulators.base import EMULATORS, Reachability
from emulators.netcmd.sandbox import CommandSandbox
from emulators.probe import PROTOCOLS, Flow
from generators.routing.checks import Connectivity, Gap
from generators.routing.faults import Fault, InjectionFailed
from generators.routing.frr import intent
from generators.routing.frr.daemons import RouterDaemons, cleanup_stale
from generators.routing.frr.topology import DEAD, FrrTopology
from pipeline.api import EnvironmentFailure

CONVERGE_S = 40.0  # longest wait for the healthy network to work after a (re)start
SETTLE_MAX_S = 30.0  # longest wait for the routing state to stop changing
POLL_S = 0.3
MIN_QUIET_SAMPLES = 3  # unchanged routing states seen before a quiet window counts
START_QUIET_S = 0.5  # a (re)started network's routing state unchanged this long: probe it
STEP_WINDOW_S = 1.0  # quiet time after an ordinary step
FINAL_WINDOW_S = DEAD + 0.5  # quiet time before a state counts as final (> dead interval)
TRANSITIONAL = ("Init", "ExStart", "Exchange", "Loading", "2-Way", "Connect", "OpenSent",
                "OpenConfirm")  # fmt: skip


def flows(topo: FrrTopology, protocols: Sequence[str]) -> list[Flow]:
    hosts = topo.rs
    return [
        Flow(topo.host(i), topo.host(j), f"10.0.{j}.2", protocol)
        for protocol in protocols
        for i in hosts
        for j in hosts
        if i != j
    ]


class FrrLab:
    """See the module docstring."""

    def __init__(self, topo: FrrTopology, cfg: Any) -> None:
        self.topo = topo
        self.cfg = cfg
        self.protocols = tuple(cfg.probe.protocols)
        backend = EMULATORS.load("mininet")
        self.emu = backend(probe_timeout_ms=cfg.probe.timeout_ms, probe_retries=cfg.probe.retries)
        self.daemons: RouterDaemons | None = None
        self.sandbox: CommandSandbox | None = None
        self.resets: list[float] = []
        self.used = False  # changed since the last (re)start: reset before reuse
        self.intent = intent.Intent.of(topo)
        self._baseline: dict[str, frozenset[str]] = {}  # device -> its kernel routes

    def __enter__(self) -> Self:
        backend = type(self.emu)
        backend.cleanup_stale()  # what killed runs left (their namespaces, daemons with them)
        cleanup_stale(lambda prefix: bool(backend.leftovers(prefix)))
        self.emu.__enter__()
        try:
            self.emu.build(self.topo.lab())
            self.emu.snapshot()
            self._baseline = {
                d: frozenset(map(intent.route_key, routes))
                for d, routes in self._kernel_routes().items()
            }
            self.daemons = RouterDaemons(
                self.emu.prefix, self.topo.frr_routers, self.topo.daemons(), self.emu.netns_path
            )
            self._start()
            self.sandbox = CommandSandbox(
                self.emu,
                self.topo.machines,
                timeout_s=self.cfg.command.timeout_s,
                output_bytes=self.cfg.command.output_bytes,
                switches=self.topo.switches,
                vty_dirs={r: str(self.daemons.root(r)) for r in self.topo.frr_routers},
            )
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    def close(self) -> None:
        """Stop the daemons and the lab, the lab even when stopping the daemons fails."""
        try:
            if self.daemons is not None:
                self.daemons.remove()
        finally:
            self.emu.stop()

    def _start(self) -> None:
        assert self.daemons is not None
        configs = {self.topo.router(i): self.topo.configs(i) for i in self.topo.rs}
        self.daemons.write_configs(configs)
        self.daemons.start()
        deadline = time.monotonic() + CONVERGE_S
        last, since = None, time.monotonic()
        while True:
            # Probe only once the routing state is quiet: a probe of a network still
            # converging waits out every silent flow's retries.
            state, moving = self.routing_state()
            if state != last or moving:
                last, since = state, time.monotonic()
            up = state.count(" Full\n") + state.count(" Full\x00") + state.count(" Established")
            waiting = up < self._adjacencies or time.monotonic() - since < START_QUIET_S
            if waiting and time.monotonic() < deadline:
                time.sleep(POLL_S / 3)
                continue
            now = self.observe()
            gaps = self.protocol_gaps() if now.full else ()
            if now.full and not gaps:
                return
            if time.monotonic() > deadline:
                failing = {p: len(r.failed) for p, r in now.by_protocol.items() if not r.full}
                raise EnvironmentFailure(
                    f"{self.topo.name}: the healthy FRR network did not converge within "
                    f"{CONVERGE_S:g} s; failing: {failing}"
                    + (
                        f"; lacking its intended state: {[g.what for g in gaps[:3]]}"
                        if gaps
                        else ""
                    )
                )
            time.sleep(POLL_S)

    @property
    def _adjacencies(self) -> int:
        """Neighbour entries of the healthy network: both ends of every OSPF link, and
        both ends of the eBGP session."""
        return 2 * len(self.topo.ospf_links) + 2 * len(self.topo.border_links)

    def reset(self) -> float:
        """Back to the healthy, converged network (see the module docstring)."""
        assert self.daemons is not None
        started = time.perf_counter()
        self.daemons.stop()
        # What zebra installed goes first (routes through nexthop objects, which the
        # kernel snapshot does not hold), so the verified restore needs one pass.
        flush = "ip -4 route flush proto ospf; ip -4 route flush proto bgp; ip nexthop flush"
        self.emu._shell({r: f"{flush} 2>/dev/null; true" for r in self.topo.frr_routers})
        self.emu.reset()
        self._start()
        self.used = False
        self.resets.append(time.perf_counter() - started)
        return self.resets[-1]

    # -- observation -------------------------------------------------------------------
    def observe(self) -> Connectivity:
        wanted = flows(self.topo, self.protocols)
        results = self.emu.probe(wanted)
        devices = self.topo.hosts
        by_protocol = {}
        for protocol in PROTOCOLS:
            if protocol in self.protocols:
                ok = frozenset(
                    (f.source, f.target) for f in wanted if f.protocol == protocol and results[f]
                )
                by_protocol[protocol] = Reachability(devices, ok)
        return Connectivity(by_protocol)

    def state(self) -> Connectivity:
        """The hosts' traffic (`observe`) and the gaps to the intended protocol state."""
        now = self.observe()
        return Connectivity(now.by_protocol, self.protocol_gaps())

    def protocol_gaps(self) -> tuple[Gap, ...]:
        """What of the intended protocol state the lab lacks now (intent.py): one vtysh
        round on the routers, one `ip route` round on every device."""
        assert self.daemons is not None
        commands = ["show ip ospf neighbor detail json", "show ip route json"]
        if self.topo.level == 5:
            commands.append("show bgp summary json")
        outs = self.daemons.vtysh_all(self.topo.frr_routers, commands)
        readings = {r: intent.RouterReading.parse(out) for r, out in outs.items()}
        return intent.gaps(self.intent, readings, self._kernel_routes(), self._baseline)

    def _kernel_routes(self) -> dict[str, list[dict[str, Any]]]:
        """Every device's IPv4 routes, every table."""
        outs = self.emu._shell({d: "ip -j -4 route show table all" for d in self.topo.machines})
        routes = {}
        for device, (code, out) in outs.items():
            try:
                if code != 0:
                    raise ValueError(f"exit {code}")
                routes[device] = intent.kernel_routes(out)
            except ValueError as err:
                raise EnvironmentFailure(
                    f"reading the routes of {device}: {err}: {out[:200]}"
                ) from err
        return routes

    def routing_state(self) -> tuple[str, bool]:
        """(a digest of every router's kernel routes and neighbour states, whether a
        neighbour is in a transitional state)."""
        state, moving, _ = self._routing_state()
        return state, moving

    def _routing_state(self) -> tuple[str, bool, dict[tuple[str, str], BgpPeer]]:
        """routing_state and the BGP peers (level 5; {} below)."""
        assert self.daemons is not None
        scripts = {r: "ip -4 route show" for r in self.topo.frr_routers}
        routes = self.emu._shell(scripts)  # one round for all routers
        commands = ["show ip ospf neighbor json"]
        if self.topo.level == 5:
            commands.append("show bgp summary json")
        outs = self.daemons.vtysh_all(self.topo.frr_routers, commands)
        parts, moving, peers = [], False, {}
        for router in self.topo.frr_routers:
            parts += [routes[router][1], _neighbour_states(outs[router]) + "\x00"]
            moving |= any(state in parts[-1] for state in TRANSITIONAL)
            if self.topo.level == 5:
                peers.update(_bgp_peers(router, outs[router]))
        return "\n".join(parts), moving, peers

    def retry_idle_sessions(self) -> dict[tuple[str, str], BgpPeer]:
        """Retry now every BGP session that is down, idle and not shut down (see the
        module docstring): {(router, peer address): the peer as it was before}."""
        assert self.daemons is not None
        if self.topo.level != 5:
            return {}
        borders = [self.topo.router(i) for i in self.topo.borders]  # the only BGP speakers
        outs = self.daemons.vtysh_all(borders, ["show bgp summary json"])
        idle = {
            key: peer
            for router, out in outs.items()
            for key, peer in _bgp_peers(router, out).items()
            if peer.idle
        }
        by_router: dict[str, list[str]] = {}
        for router, address in idle:
            by_router.setdefault(router, []).append(f"clear bgp {address}")
        for router, commands in by_router.items():
            self.daemons.vtysh(router, commands)
        return idle

    def after_change(self) -> Connectivity:
        """The state a change leads to: idle BGP sessions retried, the routing state
        settled over the step window and, when every flow works, over the final one."""
        now = self.settle(STEP_WINDOW_S, retried=self.retry_idle_sessions())
        return self.settle(FINAL_WINDOW_S) if now.full else now

    def settle(
        self, window_s: float = STEP_WINDOW_S,
        retried: dict[tuple[str, str], BgpPeer] | None = None,
    ) -> Connectivity:  # fmt: skip
        """Wait until the routing state stayed the same for `window_s` (and every
        `retried` peer has made its attempt), then probe the traffic and read the gaps to
        the intended protocol state."""
        deadline = time.monotonic() + SETTLE_MAX_S
        last, since, samples = None, time.monotonic(), 0
        waiting = dict(retried or {})
        while time.monotonic() < deadline:
            state, moving, peers = self._routing_state()
            waiting = {
                key: was
                for key, was in waiting.items()
                if key in peers and peers[key].idle and peers[key].sent == was.sent
            }
            moving |= bool(waiting)
            if state != last or moving:
                last, since, samples = state, time.monotonic(), 0
            else:
                samples += 1
                # A quiet window counts only when it was sampled: on a starved machine the
                # clock runs while neither the daemons nor this poller do.
                if time.monotonic() - since >= window_s and samples >= MIN_QUIET_SAMPLES:
                    return self.state()
            time.sleep(POLL_S)
        raise EnvironmentFailure(
            f"{self.topo.name}: the routing state kept changing for {SETTLE_MAX_S:g} s"
        )

    def wait_full(self, timeout_s: float = 3 * DEAD + 5) -> bool:
        """Probe until every required flow works (True) or the time is up (False)."""
        deadline = time.monotonic() + timeout_s
        while not self.observe().full:
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_S)
        return True

    def wait_broken(self, timeout_s: float = 3 * DEAD + 5, final: bool = True) -> Connectivity:
        """After an injection: probe until a required flow fails (or the time is up);
        `final`: then settle with the final window and probe again."""
        deadline = time.monotonic() + timeout_s
        while True:
            now = self.observe()
            if not now.full or time.monotonic() > deadline:
                break
            time.sleep(POLL_S)
        return self.settle(FINAL_WINDOW_S) if final else now

    # -- trusted injection -------------------------------------------------------------
    def inject(self, faults: Sequence[Fault]) -> None:
        """Run the faults' injections: vtysh through the router's own socket, other
        argv on the device. One that fails is an EnvironmentFailure (InjectionFailed)."""
        assert self.daemons is not None
        for fault in faults:
            for machine, argv in fault.inject:
                if argv[0] == "vtysh":
                    commands = [a for a in argv[1:] if a != "-c"]
                    out = self.daemons.vtysh(machine, commands)
                    if "% " in out:  # vtysh prints "% Unknown command" and the like
                        raise InjectionFailed(
                            f"injecting {fault.type}/{fault.variant} on {machine}: {out[:200]}"
                        )
                    continue
                result = self.emu.run(machine, argv, timeout_s=10.0, output_bytes=4096)
                if result.exit_code != 0:
                    raise InjectionFailed(
                        f"injecting {fault.type}/{fault.variant}: `{' '.join(argv)}` on "
                        f"{machine} exited {result.exit_code}: {result.output.strip()[:200]}"
                    )


@dataclass(frozen=True)
class BgpPeer:
    """A BGP peer as `show bgp summary json` gives it."""

    state: str  # Idle, Connect, Active, OpenSent, OpenConfirm, Established
    peer_state: str  # OK, or why it is held down (Admin, PfxCt, ...)
    sent: int  # messages sent to it

    @property
    def idle(self) -> bool:
        """Down and waiting for its start timer (not shut down or held by policy)."""
        return self.state == "Idle" and self.peer_state == "OK"


def _bgp_peers(router: str, out: str) -> dict[tuple[str, str], BgpPeer]:
    """The peers in a router's `show bgp summary json` (within vtysh's concatenated
    replies): {(router, address): BgpPeer}."""
    peers = {}
    for value in intent.json_documents(out):
        unicast = value.get("ipv4Unicast") if isinstance(value, dict) else None
        if not isinstance(unicast, dict) or not isinstance(unicast.get("peers"), dict):
            continue
        for address, peer in unicast["peers"].items():
            if isinstance(peer, dict):
                peers[(router, address)] = BgpPeer(
                    str(peer.get("state", "")),
                    str(peer.get("peerState", "OK")),
                    int(peer.get("msgSent", 0) or 0),
                )
    return peers


def _neighbour_states(out: str) -> str:
    """The neighbour states in vtysh's JSON replies, one per line (the rest ignored:
    timers and counters change every second)."""
    states: list[str] = []
    for value in intent.json_documents(out):
        _collect_states(value, states)
    return "\n".join(sorted(set(states)))


def _collect_states(value: Any, out: list[str], key: str = "") -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("state", "nbrState", "converged") and isinstance(v, str):
                out.append(f"{key} {v.split('/')[0]}")
            else:
                _collect_states(v, out, k)
    elif isinstance(value, list):
        for item in value:
            _collect_states(item, out, key)
