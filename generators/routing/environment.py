"""Running routing labs: fault injection and the episode.

`RoutingEnvironment` is the app's Environment: one pool of live labs (generators/lab/pool.py),
one thread, its own instance prefixes, so several environments run side by side. `RoutingEpisode`
(generators/routing/episode.py) turns each reply into one sandboxed command and records the
intended state as probed before and after it (generators/routing/checks.py: ICMP between
every pair, TCP and UDP between representative pairs) as the step's evidence; its
diagnostic `show` only looks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from emulators.base import Emulator
from emulators.netcmd.sandbox import CommandSandbox
from generators.lab.pool import PooledEnvironment
from generators.lab.step import CommandStep
from generators.routing import checks
from generators.routing.checks import Connectivity
from generators.routing.config import RoutingConfig
from generators.routing.episode import ProbedEpisode
from generators.routing.faults import Fault, InjectionFailed
from generators.routing.frr.episode import FrrEpisode, frr_episode
from generators.routing.frr.generator import FRR_LEVELS, FrrPool
from generators.routing.topology import RoutingTopology
from pipeline.api import EnvironmentFailure, Query

log = logging.getLogger(__name__)


def inject(emu: Emulator, faults: list[Fault]) -> None:
    """Run the faults' injection commands. One that exits non-zero raises InjectionFailed;
    one that is killed (time limit, output cap) is an EnvironmentFailure."""
    for fault in faults:
        for machine, argv in fault.inject:
            result = emu.run(machine, argv, timeout_s=10.0, output_bytes=4096)
            if result.exit_code is None:
                raise EnvironmentFailure(
                    f"injecting {fault.type}/{fault.variant}: `{' '.join(argv)}` on {machine} "
                    "did not finish (killed at its time limit)"
                )
            if result.exit_code != 0:
                raise InjectionFailed(
                    f"injecting {fault.type}/{fault.variant}: `{' '.join(argv)}` on {machine} "
                    f"exited {result.exit_code}: {result.output.strip()[:200]}"
                )


class RoutingEpisode(ProbedEpisode):
    """A level 1-3 query being played: after a command that may change the network, the
    pairs are probed again (generators/routing/checks.py)."""

    def __init__(
        self,
        query: Query,
        emu: Emulator,
        sandbox: CommandSandbox,
        first: Connectivity,
        max_turns: int,
        protocols: tuple[str, ...] = ("icmp",),
    ) -> None:
        super().__init__(query, sandbox, first, max_turns)
        self._emu = emu
        self._topo = RoutingTopology.from_name(query.env_key)
        self._protocols = protocols

    def _probe_after(self, played: CommandStep) -> Connectivity | None:
        if not played.changed_network:
            return None
        return checks.observe(self._emu, self._topo, self._protocols)


class RoutingEnvironment(PooledEnvironment):
    """The app's Environment: live topologies for one thread, from enter to exit."""

    cfg: RoutingConfig

    def __init__(self, cfg: RoutingConfig) -> None:
        super().__init__(cfg)
        self.frr_pool: FrrPool | None = None  # levels 4-5: FRR labs, made when first needed

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        frr_pool, self.frr_pool = self.frr_pool, None
        try:
            if frr_pool is not None:
                frr_pool.close()
        finally:
            super().__exit__(exc_type, exc, tb)

    @contextmanager
    def episode(self, query: Query) -> Iterator[RoutingEpisode | FrrEpisode]:
        if query.level in FRR_LEVELS:
            self.live_pool()  # inside the `with` block
            if self.frr_pool is None:
                self.frr_pool = FrrPool(self.cfg, max_live=min(2, self.cfg.max_live_topologies))
            with frr_episode(self.frr_pool, query, self.cfg.max_turns) as played:
                yield played
            return
        topo = RoutingTopology.from_name(query.env_key)
        with self.live_pool().use(topo) as (emu, sandbox):
            faults = [Fault.from_json(f) for f in query.ground_truth["faults"]]
            inject(emu, faults)
            protocols = tuple(self.cfg.probe.protocols)
            first = checks.observe(emu, topo, protocols)
            if first.full:
                raise EnvironmentFailure(
                    f"{query.query_id}: the injected faults left every pair reachable; they "
                    "were validated when generated, so this network behaves differently"
                )
            yield RoutingEpisode(query, emu, sandbox, first, self.cfg.max_turns, protocols)
