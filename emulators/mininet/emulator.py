"""`MininetEmulator`: labs on Debian's Mininet 2.3 with Linux bridges and no controller.

Every device and every switch is a Mininet node in namespaces of its own (switches too:
`inNamespace=True`), so nothing lands in the root namespace and the root firewall never
sees the lab's traffic. A direct domain (Lab.direct) is one veth pair between its two
devices' nodes, with no switch node. Node names are `<prefix><device>` / `<prefix><domain>` (see
instances.py); interface names are the lab's (`r0-eth1`) on devices and `p<k>` on
switches.

Configuration, reachability, snapshot and reset are NamespaceEmulator's
(emulators/namespaced.py); here they run as scripts in the node shells, all nodes at once
(nodes.run_scripts). Agent commands run through `mnexec`, never a shell
(process.run_capped).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emulators.base import CommandResult, Lab
from emulators.mininet import instances, process
from emulators.mininet.nodes import load_mininet, run_scripts, shell_status, terminate
from emulators.namespaced import SCRIPT_TIMEOUT_S, NamespaceEmulator
from pipeline.errors import EnvironmentFailure

log = logging.getLogger(__name__)


class MininetEmulator(NamespaceEmulator):
    """One lab on Mininet; see the module docstring. Use as a context manager."""

    backend = "mininet"

    def __init__(
        self,
        *,
        probe_timeout_ms: int = 250,
        probe_retries: int = 3,
        state_dir: os.PathLike[str] | str = instances.STATE_DIR,
    ) -> None:
        super().__init__(
            probe_timeout_ms=probe_timeout_ms, probe_retries=probe_retries, state_dir=state_dir
        )
        # A descriptor of every node's namespace, held from build to the end of stop():
        # what stop() sweeps (by a held namespace, never by a number; instances.py).
        self._pins: list[int] = []

    @classmethod
    def cleanup_stale(cls, state_dir: os.PathLike[str] | str = instances.STATE_DIR) -> list[str]:
        return instances.cleanup_stale(Path(state_dir))

    @classmethod
    def leftovers(
        cls, prefix: str, state_dir: os.PathLike[str] | str = instances.STATE_DIR
    ) -> list[str]:
        return instances.leftovers(prefix, Path(state_dir))

    def build(self, lab: Lab) -> None:
        self._may_build(lab)
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
                if domain not in lab.direct
            }
            ports = dict.fromkeys(switches, 0)
            first_end: dict[str, tuple[object, str]] = {}  # direct domain -> its first end
            for device in lab.devices:
                node = self._nodes[device.name] = net.addHost(self.prefix + device.name, ip=None)
                for intf in device.interfaces:
                    if intf.domain in lab.direct:  # one veth pair, made at its second end
                        if intf.domain not in first_end:
                            first_end[intf.domain] = (node, intf.name)
                            continue
                        peer, name = first_end.pop(intf.domain)
                        net.addLink(peer, node, intfName1=name, intfName2=intf.name)
                        continue
                    ports[intf.domain] += 1
                    port = f"p{ports[intf.domain]}"
                    net.addLink(switches[intf.domain], node, intfName1=port, intfName2=intf.name)
            net.build()
            self._pin([*net.hosts, *net.switches])
            net.start()
            self._configure(lab)
        except EnvironmentFailure:
            self.stop()
            raise
        except Exception as err:  # Mininet raises bare Exceptions; they are backend failures
            self.stop()
            raise EnvironmentFailure(f"building lab {lab.name} on Mininet failed: {err}") from err

    def _pin(self, nodes: list[Any]) -> None:
        """Hold every node's namespace. A node shell is our child and reaped only through
        its Popen, so while `poll()` says it runs, its pid is its own."""
        for node in nodes:
            fd = instances.pin(node.pid) if node.shell.poll() is None else None
            if fd is None:
                raise EnvironmentFailure(f"the shell of {node.name} {shell_status(node)}")
            self._pins.append(fd)

    def _check_alive(self) -> None:
        """Raise EnvironmentFailure naming a node (device or switch) whose shell is gone: its
        namespace, or its links, went with it, so the lab no longer is the lab."""
        net = self._net
        for node in [*net.switches, *net.hosts] if net is not None else []:
            if node.shell is None or node.shell.poll() is not None:
                raise EnvironmentFailure(
                    f"the shell of {node.name} {shell_status(node)}; the lab is unusable"
                )

    def _shell(
        self, scripts: dict[str, str], timeout_s: float = SCRIPT_TIMEOUT_S
    ) -> dict[str, tuple[int, str]]:
        return run_scripts(self._nodes, scripts, self._scripts, timeout_s)

    def _pid(self, device: str) -> int:
        return int(self._nodes[device].pid)

    def _run_capped(
        self,
        device: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        output_bytes: int,
        host_prefix: Sequence[str] = (),
    ) -> CommandResult:
        node = self._nodes[device]
        self._check_alive()
        result = process.run_capped(
            node.pid, argv, timeout_s=timeout_s, output_bytes=output_bytes, host_prefix=host_prefix
        )
        self._check_alive()  # a node that died meanwhile makes the result meaningless
        return result

    def netns_path(self, device: str) -> str:
        """The network namespace of `device` (a lab device's node shell's)."""
        return f"/proc/{self._nodes[device].pid}/ns/net"

    def stop(self) -> None:
        """Kill every node shell (their namespaces, veths and bridges go with them), then
        whatever else runs in the lab's namespaces, still held, so no number is reused."""
        net, self._net = self._net, None
        try:
            for node in [*net.switches, *net.hosts] if net is not None else []:
                try:
                    terminate(node)
                except EnvironmentFailure as err:  # its pty; the others still go, then the sweep
                    log.warning("stopping %s: %s", node.name, err)
            if self.prefix:
                instances.kill_prefix(self.prefix)  # shells a failed build did not pin
            instances.kill_in(self._pins)  # stragglers: anything left in our namespaces
        finally:
            for fd in self._pins:
                os.close(fd)
            self._pins.clear()
            self._forget()
