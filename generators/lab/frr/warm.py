"""`WarmLab`: an FRR lab kept converged between uses and restored by configuration difference.

A lab definition and its intended state in, a warm converged lab out. The definition is
anything shaped as `FrrSpec` (the lab's devices and links, its FRR routers with their
daemons and healthy configuration per daemon, the flows the network must carry); the
intended state is `check`, a function of the running lab returning what of it is missing
(empty: it holds). Nothing here knows a topology family.

Entering builds the lab, snapshots its kernel state before any daemon ran, starts the
daemons (generators/lab/frr/daemons.py) and waits until the network is converged: the
routing state quiet (generators/lab/frr/reading.py), `check` empty and every required
flow working. The healthy state is then recorded: each daemon's running configuration and
the routing state (every router's routes with their next hops, every OSPF neighbour's and
BGP session's state), the target a restore returns to.

`restore()` proves the lab clean before its next use, daemons left running:
  1. configuration: every daemon's running configuration is read over its vty socket and,
     where it differs from the healthy one, the difference is applied (confdiff.py) and
     read again until equal; the routers' configuration folders are written back;
  2. kernel: the emulator's verified reset of every device, FRR's routes (proto ospf,
     bgp, zebra's nexthop objects) left out of the comparison, since the daemons own them;
  3. convergence: until the routing state equals the healthy one (the FIB with next hops,
     not "every prefix present": a ring keeps every prefix while a link comes back), then
     `check` must be empty and every required flow work.
A step that cannot be proven (a difference that does not apply, the target not reached
within RESTORE_S) falls back to `restart()`: daemons killed, FRR's routes flushed, the
kernel reset, daemons started with their files, the same target reached and proven; a lab
that fails that too raises EnvironmentFailure, and its pool drops it.

`settle()` waits for a quiet routing state: unchanged over a window (sampled at least
MIN_QUIET_SAMPLES times: on a starved machine the clock runs while neither the daemons nor
this poller do), no neighbour in a transitional state, every retried BGP peer's attempt
made, and with `refreshed` every Full adjacency and Established session seen refreshed
after the quiet began (no dead or hold timer left to fire; reading.py). Polls are cheap:
the daemons' vty sockets and netlink, no process per router per poll.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

from emulators.base import EMULATORS, Lab
from emulators.netcmd.sandbox import CommandSandbox
from emulators.probe import Flow
from emulators.routes import RouteReader
from generators.lab.frr import reading
from generators.lab.frr.daemons import RouterDaemons, cleanup_stale
from generators.lab.frr.reading import BgpPeer, Reading
from generators.lab.frr.restore import RESTORE_S, restart, restore_configs
from generators.lab.frr.vty import Vty
from pipeline.api import EnvironmentFailure

log = logging.getLogger(__name__)
CONVERGE_S = 40.0  # longest wait for the healthy network after a (re)start
SETTLE_MAX_S = 30.0  # longest wait for the routing state to stop changing
POLL_S = 0.1
MIN_QUIET_SAMPLES = 3
START_QUIET_S = 0.5  # a (re)started network's routing state unchanged this long: check it
BGP_BASELINE_S = 0.2  # a session's refresh counts from a reading this long after a change
OWNED = ("ospf", "bgp")  # route protocols FRR's daemons own (state.owned_by)


class _Once:
    """A lock and whether the once-a-process work behind it is done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.done = False

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


_SWEPT = _Once()


class FrrSpec(Protocol):
    """What a warm lab needs of a lab definition."""

    @property
    def name(self) -> str: ...  # the pool's key: equal names give equal labs

    @property
    def machines(self) -> tuple[str, ...]: ...  # devices agents may run commands on

    @property
    def switches(self) -> tuple[str, ...]: ...  # domains, named in refusals

    @property
    def frr_routers(self) -> tuple[str, ...]: ...

    def lab(self) -> Lab: ...

    def daemons(self) -> tuple[str, ...]: ...  # zebra first

    def router_configs(self) -> dict[str, dict[str, str]]: ...  # router -> daemon -> text

    def required_flows(self, protocols: Sequence[str]) -> list[Flow]: ...


@dataclass(frozen=True)
class Quiet:
    """A quiet routing state: its digest, when it began, how many polls saw it since, and
    the first reading BGP_BASELINE_S after it began (None: none yet)."""

    digest: str
    since: float
    samples: int = 0
    baseline: Reading | None = None


class WarmLab:
    """See the module docstring. `check(lab)` lists what of the intended state is missing."""

    def __init__(
        self,
        spec: FrrSpec,
        *,
        probe_timeout_ms: int,
        probe_retries: int,
        protocols: Sequence[str],
        command_timeout_s: float,
        output_bytes: int,
        check: Callable[[WarmLab], Sequence[str]] | None = None,
    ) -> None:
        self.spec = spec
        self.protocols = tuple(protocols)
        self.flows = spec.required_flows(self.protocols)
        backend = EMULATORS.load("mininet")
        self.emu = backend(probe_timeout_ms=probe_timeout_ms, probe_retries=probe_retries)
        self._command = (command_timeout_s, output_bytes)
        self._check = check
        self.daemons: RouterDaemons | None = None
        self.sandbox: CommandSandbox | None = None
        self.vty: Vty | None = None
        self.routes: RouteReader | None = None
        self.configs = spec.router_configs()
        self.healthy_config: dict[tuple[str, str], str] = {}
        self.target: Reading | None = None
        self.restores: list[float] = []
        self.restarts = 0
        self.used = False  # changed since it was last proven healthy: restore before reuse

    # -- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> Self:
        backend = type(self.emu)
        backend.cleanup_stale()  # what killed runs left (their namespaces, daemons with them)
        with _SWEPT:
            # Their FRR folders, once a process: telling a live lab's folder from a dead
            # one's reads every process's command line, per folder.
            if not _SWEPT.done:
                cleanup_stale(lambda prefix: bool(backend.leftovers(prefix)))
                _SWEPT.done = True
        self.emu.__enter__()
        try:
            self.emu.build(self.spec.lab())
            self.emu.snapshot()
            self.built()
            routers = self.spec.frr_routers
            self.daemons = RouterDaemons(
                self.emu.prefix, routers, self.spec.daemons(), self.emu.netns_path
            )
            self.vty = self.daemons.vty  # the daemons own their sessions
            self.routes = RouteReader(self.emu._ns_fds)
            self.daemons.write_configs(self.configs)
            self.daemons.start()
            self.converge()
            self.healthy_config = self.running_config()
            self.target = self.read()
            self.sandbox = CommandSandbox(
                self.emu,
                self.spec.machines,
                timeout_s=self._command[0],
                output_bytes=self._command[1],
                switches=self.spec.switches,
                vty_dirs={r: str(self.daemons.root(r)) for r in routers},
            )
        except BaseException:
            self.close()
            raise
        return self

    def built(self) -> None:
        """Called once the lab is built and snapshotted, before any daemon runs (a
        subclass records what it needs of the bare lab)."""

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    def close(self) -> None:
        """Stop the daemons and the lab, the lab even when stopping the daemons fails."""
        try:
            if self.routes is not None:
                self.routes.close()
            if self.daemons is not None:
                self.daemons.remove()
        finally:
            self.emu.stop()

    # -- reading -------------------------------------------------------------------------
    def read(self) -> Reading:
        """The routing state now (reading.py): one vty round, one netlink dump per router."""
        assert self.vty is not None and self.routes is not None
        routers = self.spec.frr_routers
        taken = time.monotonic()
        asked = {"ospfd": list(reading.OSPF_READS)}
        if "bgpd" in self.spec.daemons():
            asked["bgpd"] = list(reading.BGP_READS)
        answers = self.vty.ask({(r, d): lines for r in routers for d, lines in asked.items()})
        routes = {r: self.routes.routes(r) for r in routers}
        texts = {d: {r: "".join(out for _, out in answers[(r, d)]) for r in routers} for d in asked}
        return reading.parse(taken, routes, texts["ospfd"], texts.get("bgpd", {}))

    def show(self, commands: Mapping[str, Sequence[str]]) -> dict[str, str]:
        """`show` lines per daemon on every router (Vty.show)."""
        assert self.vty is not None
        return self.vty.show(self.spec.frr_routers, commands)

    def running_config(self) -> dict[tuple[str, str], str]:
        """{(router, daemon): its running configuration}."""
        assert self.vty is not None
        asked = {(r, d): ["show running-config"] for r in self.spec.frr_routers
                 for d in self.spec.daemons()}  # fmt: skip
        return {key: out[0][1] for key, out in self.vty.ask(asked).items()}

    def probe(self, flows: Sequence[Flow] | None = None) -> dict[Flow, bool]:
        return self.emu.probe(self.flows if flows is None else flows)

    def problems(self) -> list[str]:
        """What keeps the lab from being the healthy network now: the intended state's
        gaps (`check`, read first: cheap) and the required flows that fail."""
        found = list(self._check(self) if self._check is not None else ())
        if not found:
            results = self.probe()
            failing = [f for f, ok in results.items() if not ok]
            found += [f"{len(failing)} required flows fail, e.g. {failing[:2]}"] if failing else []
        return found

    # -- convergence ---------------------------------------------------------------------
    def settle(
        self,
        window_s: float,
        *,
        retried: Mapping[tuple[str, str], BgpPeer] | None = None,
        start: Quiet | None = None,
        refreshed: bool = False,
        grace_s: float | None = None,
        limit_s: float = SETTLE_MAX_S,
    ) -> Quiet:
        """Wait for a quiet routing state (see the module docstring); `start`: a quiet
        period already begun (it goes on if nothing changed since); `grace_s`: once quiet
        this long, an adjacency or session not seen refreshed no longer holds the wait (a
        timer longer than the lab's own, set by an agent: judged as a window would)."""
        deadline = time.monotonic() + limit_s
        waiting = dict(retried or {})
        quiet = start
        while time.monotonic() < deadline:
            now = self.read()
            waiting = {
                key: was
                for key, was in waiting.items()
                if key in now.peers and now.peers[key].idle and now.peers[key].sent == was.sent
            }
            if quiet is None or now.digest != quiet.digest or now.moving or waiting:
                quiet = Quiet(now.digest, now.taken)
            else:
                baseline = quiet.baseline
                if baseline is None and now.taken - quiet.since >= BGP_BASELINE_S:
                    baseline = now
                quiet = Quiet(quiet.digest, quiet.since, quiet.samples + 1, baseline)
                done = now.taken - quiet.since >= window_s
                done &= quiet.samples >= MIN_QUIET_SAMPLES
                if done and refreshed:
                    patient = grace_s is not None and now.taken - quiet.since >= grace_s
                    done = patient or not now.unrefreshed(baseline, quiet.since)
                if done:
                    return quiet
            time.sleep(POLL_S)
        raise EnvironmentFailure(
            f"{self.spec.name}: the routing state kept changing for {limit_s:g} s"
        )

    def converge(self) -> None:
        """After a (re)start: quiet, then the intended state and every flow, or a failure."""
        deadline = time.monotonic() + CONVERGE_S
        while True:
            self.settle(START_QUIET_S, limit_s=CONVERGE_S)
            found = self.problems()
            if not found:
                return
            if time.monotonic() > deadline:
                raise EnvironmentFailure(
                    f"{self.spec.name}: the healthy FRR network did not converge within "
                    f"{CONVERGE_S:g} s: {found[:3]}"
                )
            time.sleep(POLL_S)

    def reach_target(self, timeout_s: float) -> bool:
        """Poll until the routing state equals the healthy one (True) or the time is up."""
        assert self.target is not None
        deadline = time.monotonic() + timeout_s
        while True:
            now = self.read()
            if now.digest == self.target.digest and not now.moving:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_S)

    def retry_idle_sessions(
        self, routers: Sequence[str] | None = None
    ) -> dict[tuple[str, str], BgpPeer]:
        """Retry now every BGP session that is down, idle and not shut down: FRR doubles a
        peer's idle-hold timer after every failed attempt (up to 120 s), so a fixed
        session would come up long after its fix: {(router, peer): the peer before}."""
        if "bgpd" not in self.spec.daemons():
            return {}
        assert self.vty is not None
        chosen = tuple(routers or self.spec.frr_routers)
        outs = self.vty.show(chosen, {"bgpd": list(reading.BGP_READS)})
        idle = {
            key: peer
            for router, out in outs.items()
            for key, peer in reading.bgp_peers(router, out).items()
            if peer.idle
        }
        asked: dict[tuple[str, str], list[str]] = {}
        for router, address in idle:
            asked.setdefault((router, "bgpd"), []).append(f"clear bgp {address}")
        self.vty.ask(asked)
        return idle

    # -- restore -------------------------------------------------------------------------
    def restore(self) -> float:
        """Back to the healthy network, proven (see the module docstring): seconds."""
        started = time.perf_counter()
        try:
            restore_configs(self)
            self.emu.reset(also=self.spec.frr_routers, owned=OWNED)
            self.retry_idle_sessions()
            if not self.reach_target(RESTORE_S):
                raise EnvironmentFailure(
                    f"{self.spec.name}: the routing state did not return to the healthy one "
                    f"within {RESTORE_S:g} s"
                )
            found = self.problems()
            if found:
                raise EnvironmentFailure(f"{self.spec.name}: restored, but {found[:3]}")
        except EnvironmentFailure as err:
            log.warning("restore of %s failed, restarting its daemons: %s", self.spec.name, err)
            self.restart()
        self.used = False
        self.restores.append(time.perf_counter() - started)
        return self.restores[-1]

    def restart(self) -> None:
        """The cold path: daemons killed, FRR's routes flushed, the kernel reset, the
        daemons started on their files and the healthy state reached again, proven."""
        self.restarts += 1
        restart(self)

    # -- trusted changes -----------------------------------------------------------------
    def vtysh(self, router: str, lines: Sequence[str]) -> str:
        """Trusted vtysh on `router` (a fault's injection): its output. vtysh itself sends
        each line to the daemons that know it."""
        assert self.daemons is not None
        self.used = True
        return self.daemons.vtysh(router, lines)

    def run(self, machine: str, argv: Sequence[str]) -> Any:
        """A trusted command on a device (a fault's injection)."""
        self.used = True
        return self.emu.run(machine, argv, timeout_s=10.0, output_bytes=4096)
