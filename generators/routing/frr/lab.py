"""A running FRR lab of routing levels 4-5: a warm lab (generators/lab/frr/warm.py) judged
on the hosts' traffic and the intended protocol state.

`FrrLab(topo, cfg)` is a context manager: entering builds the Mininet lab, snapshots its
kernel state (before any routing daemon ran), starts the daemons with the healthy
configuration and waits until every required flow works and the whole intended protocol
state holds. The required flows are every ordered pair of hosts (h<i> -> h<j>) over the
configured protocols: routers are the means, the hosts' traffic is what the network is for.
Between queries the lab is restored by configuration difference and proven clean
(`reset`, WarmLab.restore), its daemons left running.

What a settled state is judged on is the hosts' traffic and the protocol state of the
intended network (generators/routing/frr/intent.py: adjacencies, sessions, which protocol
each route is learned by, no static routes), both read after the routing state went quiet
(WarmLab.settle; convergence is read from the routers' routes and neighbour states, never
slept for). The intended state's kernel routes are the lab's own before any daemon ran,
recorded once when it is built.

Waits, from the topology's timers (topology.py: OSPF dead 1 s, BGP hold 3 s):
  step    after an ordinary step: quiet for STEP_WINDOW_S (two OSPF hellos);
  final   a state where every flow works counts only once quiet for the dead interval
          plus half a second (FINAL_WINDOW_S, counted from the step's own quiet start) and
          every Full adjacency and Established session has been refreshed since: no dead
          or hold timer is left to fire, so a fix that breaks when a timer fires is seen
          before it counts. An adjacency that an agent gave a longer timer, not refreshed
          by then, holds the wait until the lab's longest timer plus half a second;
  broken  the state injected faults lead to: quiet for STEP_WINDOW_S and refreshed (or
          quiet for the dead interval plus half a second: a neighbour whose own dead
          timer an injection lengthened keeps a dead adjacency Full that long).
After an agent's change, BGP sessions that are down and idle are retried at once
(`clear bgp <peer>`, as an operator would): FRR doubles a peer's idle-hold (start) timer
after every failed attempt, up to 120 s, so a session broken for a while would otherwise
come up minutes after the change that fixed it. A retried peer counts as settling until
its attempt has been made (it left Idle or sent a message).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from emulators.base import Reachability
from emulators.probe import PROTOCOLS
from generators.lab.frr.warm import Quiet, WarmLab
from generators.routing.checks import Connectivity, Gap
from generators.routing.faults import Fault, InjectionFailed
from generators.routing.frr import intent
from generators.routing.frr.topology import DEAD, FrrTopology
from pipeline.api import EnvironmentFailure

POLL_S = 0.1
STEP_WINDOW_S = 0.5  # quiet time after an ordinary step (two OSPF hellos)
FINAL_WINDOW_S = DEAD + 0.5  # quiet time before a state counts as final (> dead interval)
PROBE_EVERY_S = 1.0  # wait_full: the longest between probes while the routing state is still


class FrrLab(WarmLab):
    """See the module docstring."""

    def __init__(self, topo: FrrTopology, cfg: Any) -> None:
        self.topo = topo
        self.cfg = cfg
        self.intent = intent.Intent.of(topo)
        self._baseline: dict[str, frozenset[str]] = {}  # device -> its kernel routes
        super().__init__(
            topo,
            probe_timeout_ms=cfg.probe.timeout_ms,
            probe_retries=cfg.probe.retries,
            protocols=cfg.probe.protocols,
            command_timeout_s=cfg.command.timeout_s,
            output_bytes=cfg.command.output_bytes,
            check=lambda lab: [g.what for g in self.protocol_gaps()],
        )

    def built(self) -> None:
        self._baseline = {
            d: frozenset(map(intent.route_key, routes))
            for d, routes in self._kernel_routes().items()
        }

    @property
    def longest_window_s(self) -> float:
        """Quiet time after which no timer of the healthy network is left to fire."""
        return self.topo.longest_timer_s + 0.5

    def reset(self) -> float:
        """Back to the healthy, converged network, proven (WarmLab.restore)."""
        return self.restore()

    # -- observation -------------------------------------------------------------------
    def observe(self) -> Connectivity:
        results = self.probe()
        devices = self.topo.hosts
        by_protocol = {}
        for protocol in PROTOCOLS:
            if protocol in self.protocols:
                ok = frozenset(
                    (f.source, f.target)
                    for f in self.flows
                    if f.protocol == protocol and results[f]
                )
                by_protocol[protocol] = Reachability(devices, ok)
        return Connectivity(by_protocol)

    def state(self) -> Connectivity:
        """The hosts' traffic (`observe`) and the gaps to the intended protocol state."""
        now = self.observe()
        return Connectivity(now.by_protocol, self.protocol_gaps())

    def protocol_gaps(self) -> tuple[Gap, ...]:
        """What of the intended protocol state the lab lacks now (intent.py): one vty
        round on the routers, one `ip route` round on every device."""
        commands = {
            "ospfd": ["show ip ospf neighbor detail json"],
            "zebra": ["show ip route json"],
        }
        if self.topo.level == 5:
            commands["bgpd"] = ["show bgp summary json"]
        outs = self.show(commands)
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

    # -- waiting -----------------------------------------------------------------------
    def after_change(self) -> Connectivity:
        """The state a change leads to: idle BGP sessions retried, the routing state
        settled over the step window and, when every flow works, over the final one."""
        quiet = self.settle(STEP_WINDOW_S, retried=self.retry_idle_sessions())
        now = self.state()
        return self._final(quiet) if now.full else now

    def _final(self, quiet: Quiet) -> Connectivity:
        self.settle(FINAL_WINDOW_S, start=quiet, refreshed=True, grace_s=self.longest_window_s)
        return self.state()

    def wait_full(self, timeout_s: float | None = None) -> bool:
        """Probe until every required flow works (True) or the time is up (False). The
        routing state is read between probes: a probe follows as soon as it is the
        healthy one, and PROBE_EVERY_S otherwise, so a network still converging is not
        probed in vain (a probe of a broken network waits out its silent flows' rounds)."""
        assert self.target is not None
        deadline = time.monotonic() + (timeout_s or self._break_s)
        probed, next_probe = "", time.monotonic() + PROBE_EVERY_S
        while True:
            now = self.read()
            healthy = now.digest == self.target.digest and now.digest != probed
            if not now.moving and (healthy or time.monotonic() >= next_probe):
                probed, next_probe = now.digest, time.monotonic() + PROBE_EVERY_S
                if self.observe().full:
                    return True
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_S)

    @property
    def _break_s(self) -> float:
        """How long a fault may take to show (or a fix to heal): three of the lab's
        longest timers and five seconds."""
        return 3 * self.topo.longest_timer_s + 5

    def wait_broken(self, timeout_s: float | None = None, final: bool = True) -> Connectivity:
        """After an injection: `final`, the broken state the faults lead to, settled (see
        the module docstring), read once the routing state is quiet and again after the
        traffic fails if it did not yet (a data-plane fault changes no route); not
        `final`, the first probe in which a required flow fails. Either waits at most
        `timeout_s` for the traffic to fail, then returns what it saw."""
        deadline = time.monotonic() + (timeout_s or self._break_s)
        if final:
            self.settle(STEP_WINDOW_S, refreshed=True, grace_s=FINAL_WINDOW_S)
            now = self.state()
            if not now.full:
                return now
        while True:
            now = self.observe()
            if not now.full or time.monotonic() > deadline:
                break
            time.sleep(POLL_S)
        if not final or now.full:
            return now
        self.settle(STEP_WINDOW_S, refreshed=True, grace_s=FINAL_WINDOW_S)
        return self.state()

    # -- trusted injection -------------------------------------------------------------
    def inject(self, faults: Sequence[Fault]) -> None:
        """Run the faults' injections: vtysh through the router's own socket, other
        argv on the device. One that fails is an EnvironmentFailure (InjectionFailed)."""
        for fault in faults:
            for machine, argv in fault.inject:
                if argv[0] == "vtysh":
                    commands = [a for a in argv[1:] if a != "-c"]
                    out = self.vtysh(machine, commands)
                    if "% " in out:  # vtysh prints "% Unknown command" and the like
                        raise InjectionFailed(
                            f"injecting {fault.type}/{fault.variant} on {machine}: {out[:200]}"
                        )
                    continue
                result = self.run(machine, argv)
                if result.exit_code != 0:
                    raise InjectionFailed(
                        f"injecting {fault.type}/{fault.variant}: `{' '.join(argv)}` on "
                        f"{machine} exited {result.exit_code}: {result.output.strip()[:200]}"
                    )
