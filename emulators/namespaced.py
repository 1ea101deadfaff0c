"""`NamespaceEmulator`: the base of the backends whose devices are network namespaces.

Mininet (emulators/mininet/) and Kathará (emulators/kathara/) differ in how they create
a lab and how they enter a device's namespace; what they share is here: the instance
(prefix, lock file and script folder: emulators/instances.py), configuration (addresses,
sysctls, startup commands: one shell script per device), reachability, and snapshot /
reset (state dumps and verified restores: emulators/state.py). A backend implements
`build` (create the devices, then `_configure`), `_shell` (one script per device in its
namespace, all at once), `_run_capped` (an agent's argv in a device, no shell), `stop`
(tear down, then `_forget`), `cleanup_stale` and `leftovers`.

IPv6 is disabled in every device: the lab is IPv4 and IPv6 chatter is noise.
Traffic checks run in this process (emulators/probe.py): sockets opened in each device's
namespace through a descriptor of it kept from build to stop (`_pid` names the process
whose namespace a device is). Reachability is an ICMP echo for every ordered pair; `probe`
sends any flows (ICMP, TCP or UDP echoes). Agent commands mark their device dirty.
Reset flushes neighbour tables and route caches everywhere, restores the dirty devices
that differ from the snapshot and verifies them by dumping them again; a reset that
cannot be verified raises EnvironmentFailure.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

from emulators import state, state_restore
from emulators.base import CommandResult, Device, Lab, Reachability
from emulators.instances import Instance
from emulators.probe import Flow, Prober
from emulators.setns import open_netns
from pipeline.errors import EnvironmentFailure

log = logging.getLogger(__name__)
BASE_SYSCTLS = ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
SCRIPT_TIMEOUT_S = 30.0


def _extras(device: Device) -> list[str]:
    """Commands for a device's bridges (made, ports enslaved, up, addressed), loopback
    addresses and interface descriptions; before its sysctls, which may name a bridge."""
    cmds = []
    for bridge in device.bridges:
        name = shlex.quote(bridge.name)
        cmds.append(f"ip link add name {name} type bridge")
        cmds += [f"ip link set dev {shlex.quote(p)} master {name}" for p in bridge.ports]
        cmds.append(f"ip link set dev {name} up")
        cmds += [f"ip addr add {shlex.quote(a)} brd + dev {name}" for a in bridge.addresses]
    cmds += [f"ip addr add {shlex.quote(a)} dev lo" for a in device.loopbacks]
    for owner in (*device.interfaces, *device.bridges):
        if owner.alias:
            cmds.append(
                f"ip link set dev {shlex.quote(owner.name)} alias {shlex.quote(owner.alias)}"
            )
    return cmds


class NamespaceEmulator(ABC):
    """One lab whose devices are network namespaces; see the module docstring."""

    backend: ClassVar[str]

    def __init__(
        self, *, probe_timeout_ms: int, probe_retries: int, state_dir: os.PathLike[str] | str
    ) -> None:
        self.probe_timeout_ms = probe_timeout_ms
        self.probe_retries = probe_retries
        self._state_dir = Path(state_dir)
        self._instance: Instance | None = None
        self.prefix = ""
        self.lab: Lab | None = None
        self._net: Any = None  # the backend's handle on the running lab; None when none runs
        self._nodes: dict[str, Any] = {}  # lab device name -> how the backend reaches it
        self._healthy: dict[str, state.State] = {}
        self._dirty: set[str] = set()
        self._scripts = self._state_dir
        self._ns_fds: dict[str, int] = {}  # lab device name -> a descriptor of its namespace
        self.prober = Prober(self._ns_fds, timeout_s=probe_timeout_ms / 1000, retries=probe_retries)

    # -- what a backend implements -----------------------------------------------------
    @abstractmethod
    def build(self, lab: Lab) -> None:
        """Create the lab's devices, domains and links, then `_configure` them."""

    @abstractmethod
    def _shell(
        self, scripts: dict[str, str], timeout_s: float = SCRIPT_TIMEOUT_S
    ) -> dict[str, tuple[int, str]]:
        """Run scripts[device] in each device's namespace, all at once:
        {device: (exit code, stdout and stderr)}; not finishing in time is a failure."""

    @abstractmethod
    def _run_capped(
        self,
        device: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        output_bytes: int,
        host_prefix: Sequence[str] = (),
    ) -> CommandResult:
        """Run argv (no shell) on `device` under `host_prefix`; kill it at the timeout or
        the output cap."""

    @abstractmethod
    def _pid(self, device: str) -> int:
        """A process whose network namespace is `device`'s."""

    @abstractmethod
    def stop(self) -> None:
        """Tear down what the backend started, then `_forget`; idempotent."""

    @abstractmethod
    def _check_alive(self) -> None:
        """Raise EnvironmentFailure naming a device whose process is gone (the lab is no
        longer the lab); called around every probe."""

    @classmethod
    @abstractmethod
    def cleanup_stale(cls) -> list[str]:
        """Remove what dead instances of this backend left behind; say what went."""

    @classmethod
    @abstractmethod
    def leftovers(cls, prefix: str) -> list[str]:
        """What of the instance `prefix` still exists; empty once it is gone."""

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> Self:
        self._instance = Instance(self._state_dir)
        self.prefix = self._instance.prefix
        self._scripts = self._state_dir / self.prefix
        self._scripts.mkdir(exist_ok=True)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _may_build(self, lab: Lab) -> None:
        """Raise unless inside the `with` block with no lab running; validate `lab`."""
        if self._instance is None:
            name = type(self).__name__
            raise EnvironmentFailure(f"{name}.build() called outside its `with` block")
        if self._net is not None:
            raise EnvironmentFailure(f"{self.prefix} already runs a lab; stop() it first")
        lab.validate()

    def _configure(self, lab: Lab) -> None:
        for device in lab.devices:
            self._ns_fds[device.name] = open_netns(self._pid(device.name))
        scripts = {}
        for device in lab.devices:
            cmds = [f"sysctl -qw {kv}" for kv in BASE_SYSCTLS] + ["ip link set lo up"]
            for intf in device.interfaces:
                name = shlex.quote(intf.name)
                cmds.append(f"ip link set dev {name} {'up' if intf.up else 'down'}")
                cmds += [f"ip addr add {shlex.quote(a)} brd + dev {name}" for a in intf.addresses]
            cmds += _extras(device)
            cmds += [f"sysctl -qw {shlex.quote(f'{k}={v}')}" for k, v in device.sysctls]
            cmds += [shlex.join(argv) for argv in device.startup]
            scripts[device.name] = " && ".join(cmds)
        for device, (code, out) in self._shell(scripts).items():
            if code != 0:
                raise EnvironmentFailure(
                    f"configuring {device} of {lab.name} failed (exit {code}): {out.strip()[:300]}"
                )

    def _forget(self) -> None:
        """Drop the lab's bookkeeping, the script folder and the prefix (end of stop)."""
        self._net = None
        for fd in self._ns_fds.values():
            os.close(fd)
        self._ns_fds.clear()
        self._nodes.clear()
        self._healthy.clear()
        self._dirty.clear()
        self.lab = None
        if self._instance is not None:
            shutil.rmtree(self._scripts, ignore_errors=True)
            self._instance.release()
            self._instance = None

    # -- commands and observation ------------------------------------------------------
    def _running(self) -> Lab:
        if self._net is None or self.lab is None:
            raise EnvironmentFailure("no lab is running: call build() first")
        return self.lab

    def run(
        self,
        device: str,
        argv: Sequence[str],
        *,
        timeout_s: float = 5.0,
        output_bytes: int = 65536,
        host_prefix: Sequence[str] = (),
    ) -> CommandResult:
        lab = self._running()
        if device not in self._nodes:
            raise EnvironmentFailure(f"lab {lab.name} has no device {device!r}")
        if not argv:
            raise ValueError("run() needs a non-empty argv")
        self._dirty.add(device)
        return self._run_capped(
            device, argv, timeout_s=timeout_s, output_bytes=output_bytes, host_prefix=host_prefix
        )

    def reachability(self) -> Reachability:
        lab = self._running()
        devices = lab.probed
        flows = [
            Flow(src, dst, lab.probe_address(src, dst))
            for src in devices
            for dst in devices
            if dst != src
        ]
        results = self.probe(flows)
        return Reachability(devices, frozenset((f.source, f.target) for f in flows if results[f]))

    def probe(self, flows: Sequence[Flow]) -> dict[Flow, bool]:
        self._running()
        self._check_alive()
        results = self.prober.probe(flows)
        self._check_alive()  # a lab that lost a node meanwhile is judged by no probe
        return results

    # -- snapshot and reset ------------------------------------------------------------
    def _dump(
        self, devices: Sequence[str], before: dict[str, str], also: dict[str, str] | None = None
    ) -> dict[str, state.State]:
        """The state of `devices`, each dumped right after its `before` script ran; the
        scripts in `also` (for other devices) run in the same round, output dropped."""
        scripts = dict(also or {})
        for d in devices:
            healthy = self._healthy.get(d)
            dump = state.dump_script(healthy["sysctl_digest"] if healthy else "")
            first = before.get(d)
            if first and (len(first) > 2000 or "\n" in first):  # a restore: through a file
                path = self._scripts / f"{d}.restore.sh"
                path.write_text(first + "\n")
                first = f"bash {shlex.quote(str(path))}"
            scripts[d] = f"{first}; {dump}" if first else dump
        dumps = {}
        for device, (_, out) in self._shell(scripts).items():
            if device in devices:
                try:
                    dumps[device] = state.parse_dump(out, self._healthy.get(device))
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    # A dump that does not read as one (a tool's output an agent's change
                    # made unexpected): the lab's state is unknown, so it is not reused.
                    raise EnvironmentFailure(
                        f"reading the state of {device}: {type(exc).__name__}: {exc}"
                    ) from exc
        return dumps

    def snapshot(self) -> None:
        lab = self._running()
        self._healthy = {}
        self._healthy = self._dump([d.name for d in lab.devices], {})
        self._dirty.clear()

    def reset(self) -> float:
        """Flush every device; dump the dirty ones; restore and re-dump those that differ
        (two passes at most)."""
        lab = self._running()
        if not self._healthy:
            raise EnvironmentFailure("reset() needs a snapshot() first")
        started = time.perf_counter()
        dirty = sorted(self._dirty)
        flush = {d.name: state.FLUSH_SCRIPT for d in lab.devices}
        dumps = self._dump(dirty, flush, also={d: s for d, s in flush.items() if d not in dirty})
        pending = {d: now for d, now in dumps.items() if now != self._healthy[d]}
        for attempt in range(2):
            if not pending:
                break
            scripts = {
                d: f"{state_restore.restore_script(self._healthy[d], now)}; {state.FLUSH_SCRIPT}"
                for d, now in pending.items()
            }
            after = self._dump(sorted(scripts), scripts)
            pending = {d: now for d, now in after.items() if now != self._healthy[d]}
            if pending and attempt == 0:
                log.warning("reset of %s: a second pass for %s", lab.name, sorted(pending))
        if pending:
            detail = "; ".join(
                f"{d}: {', '.join(state.differences(self._healthy[d], now)[:3])}"
                for d, now in pending.items()
            )
            raise EnvironmentFailure(f"reset of {lab.name} could not restore {detail}")
        self._dirty.clear()
        return time.perf_counter() - started
