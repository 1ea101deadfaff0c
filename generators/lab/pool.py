"""`LabPool`: live labs by name, each with its command sandbox, used from one thread.

Apps whose episodes run on emulated labs (routing, netllmbench) keep a few labs running
between episodes instead of rebuilding them: `get` returns a lab in its snapshot state,
reset (and verified) if it was used, rebuilt if the reset fails. At most `max_live` labs
live at once; the least recently used one is stopped first. A lab is built, checked
(every addressed pair must answer ICMP echo, silent pairs asked again with longer waits: a
lab with no addresses yet passes trivially) and snapshotted once.

    with open_pool(cfg) as pool:          # cfg.emulator, cfg.probe.*, cfg.command.*, ...
        emu, sandbox = pool.get(topology) # anything with .name, .lab(), .machines, .switches

`PooledEnvironment` is the base of such apps' Environments: one pool from enter to exit.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, Self

from emulators.base import EMULATORS, Emulator, Lab
from emulators.netcmd.sandbox import CommandSandbox
from emulators.probe import PROTOCOLS
from pipeline.api import ConfigError, EnvironmentFailure

log = logging.getLogger(__name__)


# -- the config keys a pool reads (shared by the apps' schemas) ----------------------------
@dataclass
class ProbeConfig:
    timeout_ms: int = 250  # the first round's wait for an answer (emulators/probe.py)
    retries: int = 3  # further rounds for silent flows, each waiting twice as long (1-5)
    protocols: list[str] = field(  # traffic the intended-state check sends
        default_factory=lambda: ["icmp", "tcp", "udp"]
    )


@dataclass
class CommandConfig:
    timeout_s: float = 5.0  # wall-clock limit of one agent command
    output_bytes: int = 8192  # output kept and shown; the command is stopped past it


def int_in(value: Any, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{key} must be an integer from {low} to {high}, got {value!r}")
    return value


def validate_pool_config(cfg: Any, prefix: str = "app") -> None:
    """Check the keys `LabPool.from_config` reads; raise ConfigError naming the first
    wrong one."""
    if cfg.emulator not in EMULATORS.names():
        raise ConfigError(
            f"{prefix}.emulator must be one of {EMULATORS.names()}, got {cfg.emulator!r}"
        )
    int_in(cfg.probe.timeout_ms, f"{prefix}.probe.timeout_ms", 20, 5000)
    int_in(cfg.probe.retries, f"{prefix}.probe.retries", 1, 5)
    protocols = list(cfg.probe.protocols)
    if any(p not in PROTOCOLS for p in protocols) or len(set(protocols)) != len(protocols):
        raise ConfigError(
            f"{prefix}.probe.protocols must list distinct protocols of {list(PROTOCOLS)}, "
            f"got {protocols!r}"
        )
    timeout = cfg.command.timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 60:
        raise ConfigError(f"{prefix}.command.timeout_s must be in (0, 60], got {timeout!r}")
    int_in(cfg.command.output_bytes, f"{prefix}.command.output_bytes", 256, 1 << 20)
    int_in(cfg.max_live_topologies, f"{prefix}.max_live_topologies", 1, 16)


class Topology(Protocol):
    """What a pool needs of an app's topology."""

    @property
    def name(self) -> str: ...  # the pool's key: equal names must give equal labs

    @property
    def machines(self) -> tuple[str, ...]: ...  # devices the agent may run commands on

    @property
    def switches(self) -> tuple[str, ...]: ...  # domains, named in refusals

    def lab(self) -> Lab: ...


class LabPool:
    """See the module docstring."""

    def __init__(
        self,
        factory: Callable[[], Emulator],
        *,
        max_live: int,
        command_timeout_s: float,
        output_bytes: int,
    ) -> None:
        self._factory = factory
        self.max_live = max_live
        self.command_timeout_s = command_timeout_s
        self.output_bytes = output_bytes
        self._live: OrderedDict[str, tuple[Emulator, CommandSandbox]] = OrderedDict()
        self.builds = 0
        self.resets: list[float] = []

    @classmethod
    def from_config(cls, cfg: Any, factory: Callable[[], Emulator] | None = None) -> LabPool:
        """A pool for an app config with `emulator`, `probe.timeout_ms`, `probe.retries`,
        `command.timeout_s`, `command.output_bytes` and `max_live_topologies`."""

        def make() -> Emulator:
            backend = EMULATORS.load(cfg.emulator)
            return backend(probe_timeout_ms=cfg.probe.timeout_ms, probe_retries=cfg.probe.retries)

        return cls(
            factory or make,
            max_live=cfg.max_live_topologies,
            command_timeout_s=cfg.command.timeout_s,
            output_bytes=cfg.command.output_bytes,
        )

    def get(self, topo: Topology) -> tuple[Emulator, CommandSandbox]:
        """The lab of `topo`, in its snapshot state and verified. A lab whose reset raised
        anything is stopped and built again, never reused."""
        live = self._live.pop(topo.name, None)
        if live is not None:
            try:
                self.resets.append(live[0].reset())
            except BaseException as err:
                live[0].stop()
                if not isinstance(err, Exception):  # Ctrl-C: stopped, and on its way
                    raise
                log.warning("rebuilding %s: %s: %s", topo.name, type(err).__name__, err)
                live = None
        if live is None:
            while len(self._live) >= self.max_live:
                _, (old, _) = self._live.popitem(last=False)
                old.stop()
            live = self._build(topo)
        self._live[topo.name] = live
        return live

    def _build(self, topo: Topology) -> tuple[Emulator, CommandSandbox]:
        emu = self._factory()
        emu.__enter__()
        try:
            emu.build(topo.lab())
            emu.snapshot()
            healthy = emu.reachability()
            if not healthy.full:
                raise EnvironmentFailure(
                    f"{topo.name} is not fully reachable right after it was built: "
                    f"{len(healthy.failed)} pairs fail, e.g. {healthy.failed[:3]}"
                )
        except BaseException:
            emu.stop()
            raise
        self.builds += 1
        sandbox = CommandSandbox(
            emu,
            topo.machines,
            timeout_s=self.command_timeout_s,
            output_bytes=self.output_bytes,
            switches=topo.switches,
        )
        return emu, sandbox

    @contextmanager
    def use(self, topo: Topology) -> Iterator[tuple[Emulator, CommandSandbox]]:
        """`get` for one episode: a lab whose episode raised anything (the play loop raises
        a failed step's error here too) is stopped and dropped, never reused."""
        live = self.get(topo)
        try:
            yield live
        except BaseException:
            self.discard(topo.name)
            raise

    def discard(self, name: str) -> None:
        """Stop the live lab `name`, if there is one; the next `get` builds it again."""
        live = self._live.pop(name, None)
        if live is not None:
            live[0].stop()

    def close(self) -> None:
        """Stop every live lab, each even when stopping another raised (the first error is
        raised once all are stopped)."""
        errors = []
        while self._live:
            _, (emu, _) = self._live.popitem()
            try:
                emu.stop()
            except Exception as err:  # raised below, after the others
                errors.append(err)
        if errors:
            raise errors[0]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_pool(cfg: Any) -> LabPool:
    """A pool for `cfg` (see LabPool.from_config), once what dead runs of its backend left
    behind (kill -9) is removed."""
    removed = EMULATORS.load(cfg.emulator).cleanup_stale()
    if removed:
        log.warning("removed leftovers of dead runs: %s", "; ".join(removed))
    return LabPool.from_config(cfg)


class PooledEnvironment:
    """Base of an app's Environment whose episodes run on pooled labs: the pool lives from
    enter to exit, used from one thread; subclasses add `episode`."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self.pool: LabPool | None = None

    def __enter__(self) -> Self:
        self.pool = open_pool(self.cfg)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.close()

    def live_pool(self) -> LabPool:
        if self.pool is None:
            raise EnvironmentFailure(
                f"{type(self).__name__}.episode() called outside its `with` block"
            )
        return self.pool
