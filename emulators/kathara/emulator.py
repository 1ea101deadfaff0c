"""`KatharaEmulator`: labs on Kathará (the `kathara` package's Docker manager) through
NetGauge's own dockerd (daemon.py) and the local network plugin (netplugin.py).

Kathará deploys and undeploys the lab: one container per device from the locally built
base image, one Docker network (a Linux bridge) per collision domain. Kathará names the
interfaces `eth<k>`; build renames them to the lab's names (`r0-eth1`). The Kathará lab
is named after the instance prefix (`ngr` + 5 hex digits), so its containers and
networks carry the label `lab_hash=<hash of the prefix>`: that is how leftovers of a
dead instance are found.

Commands, configuration, state dumps and probes run in the device's network namespace
from the host (`nsenter --net`), as Mininet's do in its nodes: a non-privileged
container may not write /proc/sys (sysctl faults are injected this way), and a host
process can be killed at a timeout or output cap, which `docker exec` cannot.
Configuration, reachability, snapshot and reset are NamespaceEmulator's
(emulators/namespaced.py), as for Mininet; build, the script runner (nsexec.py) and the
teardown are Kathará's.
"""

from __future__ import annotations

import logging
import os
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from emulators.base import CommandResult, Lab
from emulators.instances import dead_prefixes
from emulators.kathara import daemon, nsexec
from emulators.namespaced import SCRIPT_TIMEOUT_S, NamespaceEmulator
from pipeline.errors import EnvironmentFailure

log = logging.getLogger(__name__)
STATE_DIR = Path("/run/netgauge/kathara/instances")
TEN_YEARS_S = 10 * 365 * 86400


def configure_kathara() -> Any:
    """Kathará settings for our daemon: never pull, never phone home, nothing mounted
    from the host, no privileged devices. Returns the `Kathara` manager."""
    from Kathara.manager.Kathara import Kathara
    from Kathara.setting.Setting import Setting

    setting = Setting.get_instance()
    values = {
        "image": daemon.IMAGE,
        "manager_type": "docker",
        "device_prefix": "netgauge",
        "net_prefix": "netgauge",
        "open_terminals": False,
        "print_startup_log": False,
        "enable_ipv6": False,
        "debug_level": "ERROR",
        "last_checked": time.time() + TEN_YEARS_S,  # the weekly release check never runs
        "image_update_policy": "Never",
        "remote_url": daemon.url(),  # our daemon; Kathará then never installs its plugin
        "network_plugin": "kathara/katharanp",  # the Linux-bridge one (default: VDE)
        "hosthome_mount": False,
        "shared_mount": False,
    }
    for key, value in values.items():
        setattr(setting, key, value)
    return Kathara.get_instance()


def lab_hash(prefix: str) -> str:
    from Kathara import utils

    return utils.generate_urlsafe_hash(prefix)


class KatharaEmulator(NamespaceEmulator):
    """One lab on Kathará; see the module docstring. Use as a context manager."""

    backend = "kathara"

    def __init__(
        self,
        *,
        probe_timeout_ms: int = 250,
        probe_retries: int = 3,
        state_dir: os.PathLike[str] | str = STATE_DIR,
    ) -> None:
        super().__init__(
            probe_timeout_ms=probe_timeout_ms, probe_retries=probe_retries, state_dir=state_dir
        )
        self._daemon: daemon.Daemon | None = None
        self.timings: dict[str, float] = {}

    def __enter__(self) -> Self:
        super().__enter__()
        try:
            self._daemon = daemon.Daemon().__enter__()
        except BaseException:
            self.stop()
            raise
        return self

    def build(self, lab: Lab) -> None:
        self._may_build(lab)
        self.lab = lab
        started = time.perf_counter()
        try:
            from Kathara.model.Lab import Lab as KLab

            manager = configure_kathara()
            klab = KLab(self.prefix)
            for device in lab.devices:
                klab.new_machine(device.name, image=daemon.IMAGE)
                for k, intf in enumerate(device.interfaces):
                    klab.connect_machine_to_link(device.name, intf.domain, machine_iface_number=k)
            self._net = klab
            manager.deploy_lab(klab)
            for device in lab.devices:
                container = manager.get_machine_api_object(device.name, lab=klab)
                container.reload()
                self._nodes[device.name] = int(container.attrs["State"]["Pid"])
            self.timings["deploy_s"] = time.perf_counter() - started
            self._rename(lab)
            self._configure(lab)
        except EnvironmentFailure:
            self.stop()
            raise
        except Exception as err:  # Kathará's and docker-py's errors are backend failures
            self.stop()
            raise EnvironmentFailure(
                f"building lab {lab.name} on Kathará failed: {type(err).__name__}: {err}"
            ) from err
        self.timings["build_s"] = time.perf_counter() - started

    def _rename(self, lab: Lab) -> None:
        scripts = {
            device.name: " && ".join(
                f"ip link set dev eth{k} down && ip link set dev eth{k} name {shlex.quote(i.name)}"
                for k, i in enumerate(device.interfaces)
            )
            for device in lab.devices
            if device.interfaces
        }
        for device, (code, out) in self._shell(scripts).items():
            if code != 0:
                raise EnvironmentFailure(f"renaming the interfaces of {device}: {out[:300]}")

    def _shell(
        self, scripts: dict[str, str], timeout_s: float = SCRIPT_TIMEOUT_S
    ) -> dict[str, tuple[int, str]]:
        return nsexec.run_scripts(self._nodes, scripts, self._scripts, timeout_s)

    def _pid(self, device: str) -> int:
        return int(self._nodes[device])

    def _run_capped(
        self,
        device: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        output_bytes: int,
        host_prefix: Sequence[str] = (),
    ) -> CommandResult:
        return nsexec.run_capped(
            self._nodes[device],
            argv,
            timeout_s=timeout_s,
            output_bytes=output_bytes,
            host_prefix=host_prefix,
        )

    def _check_alive(self) -> None:
        for device, pid in self._nodes.items():
            if not os.path.exists(f"/proc/{pid}/ns/net"):
                raise EnvironmentFailure(
                    f"the container of {device} is gone (its process {pid}); the lab is unusable"
                )

    def netns_path(self, device: str) -> str:
        """The network namespace of `device` (its container init's)."""
        return f"/proc/{self._nodes[device]}/ns/net"

    def stop(self) -> None:
        """Undeploy the lab, release the prefix and our use of the daemon; idempotent."""
        klab, self._net = self._net, None
        if klab is not None:
            started = time.perf_counter()
            try:
                configure_kathara().undeploy_lab(lab=klab)
            except Exception as err:
                log.warning("undeploying %s: %s; removing by label", self.prefix, err)
            _remove_by_hash(lab_hash(self.prefix))
            self.timings["undeploy_s"] = time.perf_counter() - started
        self._forget()
        dmn, self._daemon = self._daemon, None
        if dmn is not None:
            dmn.close()

    @classmethod
    def cleanup_stale(cls, state_dir: os.PathLike[str] | str = STATE_DIR) -> list[str]:
        """Remove the containers and networks of prefixes whose lock nobody holds, then
        stop our daemon if nobody uses it."""
        removed = []
        for prefix in dead_prefixes(Path(state_dir)):
            gone = _remove_by_hash(lab_hash(prefix)) if daemon.answering() else []
            removed.append(f"{prefix}: {len(gone)} container(s)/network(s)")
        if daemon.RUN_DIR.is_dir() and daemon.answering():
            removed += [f"our {d}" for d in _stop_unused_daemon()]
        return removed

    @classmethod
    def leftovers(cls, prefix: str, state_dir: os.PathLike[str] | str = STATE_DIR) -> list[str]:
        state_dir = Path(state_dir)
        found = [
            f"file {p}" for p in (state_dir / f"{prefix}.lock", state_dir / prefix) if p.exists()
        ]
        if daemon.answering():
            containers, networks = _by_hash(lab_hash(prefix))
            found += [f"container {c}" for c in containers]
            found += [f"network {n}" for n in networks]
            found += [
                f"bridge {b}"
                for b in (f"kt{n[:12]}" for n in networks)
                if Path(f"/sys/class/net/{b}").exists()
            ]
        return found


def _by_hash(hash_: str) -> tuple[list[str], list[str]]:
    label = f"label=lab_hash={hash_}"
    ps = daemon.docker("ps", "-aq", "--no-trunc", "--filter", label, check=False)
    nets = daemon.docker("network", "ls", "-q", "--no-trunc", "--filter", label, check=False)
    return ps.stdout.decode().split(), nets.stdout.decode().split()


def _remove_by_hash(hash_: str) -> list[str]:
    """Force-remove what Kathará left of one lab (after a failed undeploy or a kill -9)."""
    containers, networks = _by_hash(hash_)
    if containers:
        daemon.docker("rm", "-f", *containers, check=False)
    if networks:
        daemon.docker("network", "rm", *networks, check=False)
    return containers + networks


def _stop_unused_daemon() -> list[str]:
    import fcntl

    fd = os.open(daemon.RUN_DIR / "users.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return []
        return daemon.stop()
    finally:
        os.close(fd)
