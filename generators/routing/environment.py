"""Running routing labs: fault injection and the episode.

`RoutingEnvironment` is the app's Environment: one pool of live labs (generators/lab/pool.py),
one thread, its own instance prefixes, so several environments run side by side. `RoutingEpisode`
turns each reply into one sandboxed command and records the intended state as probed before
and after it (generators/routing/checks.py: ICMP between every pair, TCP and UDP between
representative pairs) as the step's evidence; its diagnostic `show` only looks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from emulators.base import Emulator
from emulators.netcmd.sandbox import CommandSandbox
from generators.lab.diagnostics import diagnose
from generators.lab.pool import PooledEnvironment
from generators.lab.reply import REPLY_FORMAT
from generators.lab.step import play_command
from generators.routing import checks
from generators.routing.checks import Connectivity
from generators.routing.config import RoutingConfig
from generators.routing.faults import Fault
from generators.routing.frr.episode import FrrEpisode, frr_episode
from generators.routing.frr.generator import FRR_LEVELS, FrrPool
from generators.routing.topology import RoutingTopology
from pipeline.core import Query, StepResult, StepStatus
from pipeline.errors import EnvironmentFailure

log = logging.getLogger(__name__)


class InjectionFailed(EnvironmentFailure):
    """An injection command ran and exited non-zero: the fault cannot be made on this lab
    (when generating, the draw is invalid; when playing a validated query, the lab differs
    from the one it was validated on)."""


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


class RoutingEpisode:
    """One query being played; see the module docstring."""

    def __init__(
        self,
        query: Query,
        emu: Emulator,
        sandbox: CommandSandbox,
        first: Connectivity,
        max_turns: int,
        protocols: tuple[str, ...] = ("icmp",),
    ) -> None:
        self.query = query
        self.max_turns = max_turns
        self._emu = emu
        self._sandbox = sandbox
        self._topo = RoutingTopology.from_name(query.env_key)
        self._protocols = protocols
        self._now = first
        self._turn = 0

    def observe(self) -> str:
        return (
            f"{self.query.prompt}\n\nReachability now (turn 1 of {self.max_turns}):\n"
            f"{self._now.render()}"
        )

    def _evidence(self, before: Connectivity, **facts: Any) -> dict[str, Any]:
        """The facts, and the probes before and after: ICMP rows as `before` / `after`,
        the other protocols' under `traffic`."""
        after = self._now.evidence()
        traffic = {
            p: {"before": rows, "after": after[p]}
            for p, rows in before.evidence().items()
            if p != "icmp"
        }
        return {
            **facts,
            "devices": list(before.icmp.devices),
            "before": before.icmp.rows(),
            "after": self._now.icmp.rows(),
            **({"traffic": traffic} if traffic else {}),
        }

    def diagnose(self, name: str, arguments: dict[str, Any]) -> str:
        """A read-only look (generators/lab/diagnostics.py): no step, no turn."""
        return diagnose(self._sandbox, name, arguments)

    def step(self, reply: str) -> StepResult:
        self._turn += 1
        last = self._turn >= self.max_turns
        before = self._now
        started = time.perf_counter()
        played = play_command(self._sandbox, reply)
        if played.result is None:
            output = f"{played.shown}\n\n{self._status_text(remind=False)}"
            evidence = self._evidence(before, parsed=False)
            return StepResult("", StepStatus.PARSE_ERROR, output, evidence, last, played.error)
        probe_s = 0.0
        if played.changed_network:
            probe_started = time.perf_counter()
            self._now = checks.observe(self._emu, self._topo, self._protocols)
            probe_s = time.perf_counter() - probe_started
        evidence = self._evidence(
            before,
            **played.facts,
            reason=played.result.reason,
            cmd_s=round(played.result.exec_s, 4),
            probe_s=round(probe_s, 4),
        )
        return StepResult(
            action=played.action,
            status=played.status,
            output=f"{played.shown}\n\n{self._status_text()}",
            evidence=evidence,
            done=self._now.full or last,
            error=played.error if played.status is not StepStatus.OK else None,
            exec_s=time.perf_counter() - started,
        )

    def _status_text(self, remind: bool = True) -> str:
        if self._now.full:
            return f"{self._now.render()}\nEverything checked works: the network is repaired."
        left = self.max_turns - self._turn
        return (
            f"Reachability now (turn {self._turn + 1} of {self.max_turns}, {left} left):\n"
            f"{self._now.render()}" + (f"\n{REPLY_FORMAT}" if remind else "")
        )


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
        pool = self.live_pool()
        topo = RoutingTopology.from_name(query.env_key)
        emu, sandbox = pool.get(topo)
        faults = [Fault.from_json(f) for f in query.ground_truth["faults"]]
        inject(emu, faults)
        protocols = tuple(self.cfg.probe.protocols)
        first = checks.observe(emu, topo, protocols)
        if first.full:
            raise EnvironmentFailure(
                f"{query.query_id}: the injected faults left every pair reachable; they were "
                "validated when generated, so this network behaves differently"
            )
        yield RoutingEpisode(query, emu, sandbox, first, self.cfg.max_turns, protocols)
