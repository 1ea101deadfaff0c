"""`MininetEmulator`: labs on Debian's Mininet 2.3 with Linux bridges and no controller.

Every device and every switch is a Mininet node in namespaces of its own (switches too:
`inNamespace=True`), so nothing lands in the root namespace and the root firewall never
sees the lab's traffic. Node names are `<prefix><device>` / `<prefix><domain>` (see
instances.py); interface names are the lab's (`r0-eth1`) on devices and `p<k>` on
switches. IPv6 is disabled in every node: the lab is IPv4 and IPv6 chatter is noise.

Reachability is one `fping` per source device, all sources at once (nodes.run_scripts).
Agent commands run through `mnexec`, never a shell (process.run_capped), and mark their
device dirty. Reset flushes neighbour tables and route caches everywhere, restores the
dirty devices that differ from the snapshot and verifies them by dumping them again; a
reset that cannot be verified raises EnvironmentFailure.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from emulators.base import CommandResult, Lab, Reachability
from emulators.mininet import instances, process, state
from emulators.mininet.nodes import load_mininet, run_scripts
from pipeline.errors import EnvironmentFailure

log = logging.getLogger(__name__)
BASE_SYSCTLS = ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
SCRIPT_TIMEOUT_S = 30.0


class MininetEmulator:
    """One lab on Mininet; see the module docstring. Use as a context manager."""

    backend = "mininet"

    def __init__(
        self,
        *,
        probe_timeout_ms: int = 250,
        probe_retries: int = 1,
        state_dir: os.PathLike[str] | str = instances.STATE_DIR,
    ) -> None:
        self.probe_timeout_ms = probe_timeout_ms
        self.probe_retries = probe_retries
        self._state_dir = Path(state_dir)
        self._instance: instances.Instance | None = None
        self.prefix = ""
        self.lab: Lab | None = None
        self._net: Any = None
        self._nodes: dict[str, Any] = {}  # lab device name -> its Mininet node
        self._netns: set[int] = set()
        self._healthy: dict[str, state.State] = {}
        self._dirty: set[str] = set()
        self._scripts = self._state_dir

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> Self:
        self._instance = instances.Instance(self._state_dir)
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

    @classmethod
    def cleanup_stale(cls, state_dir: os.PathLike[str] | str = instances.STATE_DIR) -> list[str]:
        return instances.cleanup_stale(Path(state_dir))

    @classmethod
    def leftovers(
        cls, prefix: str, state_dir: os.PathLike[str] | str = instances.STATE_DIR
    ) -> list[str]:
        return instances.leftovers(prefix, Path(state_dir))

    def build(self, lab: Lab) -> None:
        if self._instance is None:
            raise EnvironmentFailure("MininetEmulator.build() called outside its `with` block")
        if self._net is not None:
            raise EnvironmentFailure(f"{self.prefix} already runs a lab; stop() it first")
        lab.validate()
        mn = load_mininet()
        self.lab = lab
        try:
            self._net = net = mn["Mininet"](
                topo=None,
                build=False,
                controller=None,
                switch=mn["Bridge"],
                host=mn["Host"],
                link=mn["Link"],
                waitConnected=False,
            )
            switches = {
                domain: net.addSwitch(self.prefix + domain, dpid=f"{k:x}", inNamespace=True)
                for k, domain in enumerate(lab.domains, 1)
            }
            ports = dict.fromkeys(switches, 0)
            for device in lab.devices:
                node = self._nodes[device.name] = net.addHost(self.prefix + device.name, ip=None)
                for intf in device.interfaces:
                    ports[intf.domain] += 1
                    port = f"p{ports[intf.domain]}"
                    net.addLink(switches[intf.domain], node, intfName1=port, intfName2=intf.name)
            net.build()
            net.start()
            inodes = (instances.netns_inode(n.pid) for n in [*net.hosts, *net.switches])
            self._netns = {ino for ino in inodes if ino}
            self._configure(lab)
        except EnvironmentFailure:
            self.stop()
            raise
        except Exception as err:  # Mininet raises bare Exceptions; they are backend failures
            self.stop()
            raise EnvironmentFailure(f"building lab {lab.name} on Mininet failed: {err}") from err

    def _configure(self, lab: Lab) -> None:
        scripts = {}
        for device in lab.devices:
            cmds = [f"sysctl -qw {kv}" for kv in BASE_SYSCTLS] + ["ip link set lo up"]
            for intf in device.interfaces:
                name = shlex.quote(intf.name)
                cmds.append(f"ip link set dev {name} up")
                cmds += [f"ip addr add {shlex.quote(a)} brd + dev {name}" for a in intf.addresses]
            cmds += [f"sysctl -qw {shlex.quote(f'{k}={v}')}" for k, v in device.sysctls]
            cmds += [shlex.join(argv) for argv in device.startup]
            scripts[device.name] = " && ".join(cmds)
        for device, (code, out) in self._shell(scripts).items():
            if code != 0:
                raise EnvironmentFailure(
                    f"configuring {device} of {lab.name} failed (exit {code}): {out.strip()[:300]}"
                )

    def _shell(
        self, scripts: dict[str, str], timeout_s: float = SCRIPT_TIMEOUT_S
    ) -> dict[str, tuple[int, str]]:
        return run_scripts(self._nodes, scripts, self._scripts, timeout_s)

    def stop(self) -> None:
        """Kill every node shell (their namespaces, veths and bridges go with them)."""
        net, self._net = self._net, None
        if net is not None:
            for node in [*net.switches, *net.hosts]:
                try:
                    node.terminate()
                except OSError as err:
                    log.warning("terminating %s: %s", node.name, err)
        if self.prefix:
            instances.kill_prefix(self.prefix)  # stragglers: anything left in our namespaces
            for pid in instances.pids_in_netns(self._netns):
                os.kill(pid, signal.SIGKILL)
        self._nodes.clear()
        self._netns.clear()
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
        self, device: str, argv: Sequence[str], *, timeout_s: float = 5.0, output_bytes: int = 65536
    ) -> CommandResult:
        lab = self._running()
        if device not in self._nodes:
            raise EnvironmentFailure(f"lab {lab.name} has no device {device!r}")
        if not argv:
            raise ValueError("run() needs a non-empty argv")
        self._dirty.add(device)
        pid = self._nodes[device].pid
        return process.run_capped(pid, argv, timeout_s=timeout_s, output_bytes=output_bytes)

    def reachability(self) -> Reachability:
        lab = self._running()
        devices = lab.probed
        scripts, targets = {}, {}
        for src in devices:
            by_addr: dict[str, list[str]] = {}
            for dst in devices:
                if dst != src:
                    by_addr.setdefault(lab.probe_address(src, dst), []).append(dst)
            argv = ["fping", "-a", "-i", "1", "-B", "1"]
            argv += ["-t", str(self.probe_timeout_ms), "-r", str(self.probe_retries), *by_addr]
            scripts[src] = f"{shlex.join(argv)} 2>/dev/null"
            targets[src] = by_addr
        budget = 5.0 + len(devices) * self.probe_timeout_ms * (self.probe_retries + 1) / 1000
        ok = set()
        for src, (code, out) in self._shell(scripts, budget).items():
            if code not in (0, 1, 2):  # 1: some unreachable, 2: some address unknown
                raise EnvironmentFailure(f"fping on {src} failed (exit {code}): {out[:200]}")
            for addr in out.split():
                ok.update((src, dst) for dst in targets[src].get(addr, ()))
        return Reachability(devices, frozenset(ok))

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
                except ValueError as exc:
                    raise EnvironmentFailure(f"reading the state of {device}: {exc}") from exc
        return dumps

    def snapshot(self) -> None:
        lab = self._running()
        self._healthy = {}
        self._healthy = self._dump(lab.probed, {})
        self._dirty.clear()

    def reset(self) -> float:
        """Flush every device; dump the dirty ones; restore and re-dump those that differ
        (two passes at most)."""
        lab = self._running()
        if not self._healthy:
            raise EnvironmentFailure("reset() needs a snapshot() first")
        started = time.perf_counter()
        dirty = sorted(self._dirty)
        flush = {d: state.FLUSH_SCRIPT for d in lab.probed}
        dumps = self._dump(dirty, flush, also={d: s for d, s in flush.items() if d not in dirty})
        pending = {d: now for d, now in dumps.items() if now != self._healthy[d]}
        for attempt in range(2):
            if not pending:
                break
            scripts = {
                d: f"{state.restore_script(self._healthy[d], now)}; {state.FLUSH_SCRIPT}"
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
