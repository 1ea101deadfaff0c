"""A lab's service daemons: dnsmasq (DNS) and keepalived (VRRP), each in a bubblewrap jail.

Like FRR's (generators/lab/frr/daemons.py), each daemon runs in its device's network
namespace (`nsenter --net`) inside a jail holding /usr read-only, /etc/passwd and
/etc/group, and one writable folder of its own device, <BASE>/<prefix>/<device>-<service>,
mounted at /run/svc: its configuration, pid file and log. New pid, IPC and UTS
namespaces, a read-only root, only the capabilities the daemon needs. Nothing else on
the host is reachable, whatever a configuration says.

A service's configuration is a model (svcconf.py): `svcctl` (emulators/netcmd/svcctl.py)
edits it line by line, and `apply` writes the file and restarts the daemon, waiting until
it runs again. `Services` is the lab's ServiceControl (emulators/netcmd/servicegate.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from emulators.jail import bwrap_path
from emulators.netcmd import svcctl
from emulators.netcmd.svcctl import SvcCommand, SvcctlError
from generators.incidents.svcconf import Config
from pipeline.api import EnvironmentFailure

BASE = Path("/run/netgauge-svc")
START_S = 10.0
PROGRAMS = {"dns": "/usr/sbin/dnsmasq", "relay": "/usr/sbin/dnsmasq",
            "vrrp": "/usr/sbin/keepalived"}  # fmt: skip
CAPS = {
    "dns": ("CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_SETUID", "CAP_SETGID"),
    "relay": ("CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_SETUID", "CAP_SETGID"),
    "vrrp": ("CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE"),
}  # fmt: skip
# The service svcctl names -> the daemon that holds its configuration (one dnsmasq on the
# server does DNS and DHCP; the routers' DHCP relays are dnsmasq too, not svcctl's).
DAEMON_OF = {"dns": "dns", "dhcp": "dns", "vrrp": "vrrp"}


def installed() -> str | None:
    """Why the services cannot run here, or None."""
    for program in PROGRAMS.values():
        if not Path(program).exists():
            return f"{program} is missing: run scripts/setup.sh (scripts/setup.d/26-incidents.sh)"
    return None


def _argv(service: str) -> list[str]:
    if service in ("dns", "relay"):
        return [PROGRAMS["dns"], "--keep-in-foreground", "--conf-file=/run/svc/daemon.conf",
                "--user=nobody", "--group=nogroup",
                "--log-facility=/run/svc/daemon.log"]  # fmt: skip
    return [PROGRAMS["vrrp"], "--dont-fork", "--vrrp", "--log-console", "--no-syslog",
            "--use-file=/run/svc/daemon.conf", "--pid=/run/svc/main.pid",
            "--vrrp_pid=/run/svc/vrrp.pid"]  # fmt: skip


def jail_argv(folder: Path, service: str) -> list[str]:
    args = [bwrap_path(), "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv",
            "--cap-drop", "ALL"]  # fmt: skip
    for cap in CAPS[service]:
        args += ["--cap-add", cap]
    for name in ("bin", "sbin", "lib", "lib64"):
        args += ["--symlink", f"usr/{name}", f"/{name}"]
    args += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc/passwd", "/etc/passwd",
             "--ro-bind", "/etc/group", "/etc/group", "--bind", str(folder), "/run/svc",
             "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var",
             "--remount-ro", "/", "--", *_argv(service)]  # fmt: skip
    return args


def refused_by_daemon(said: str) -> bool:
    """Whether a daemon that exited at start said why itself (its configuration's fault),
    rather than its jail failing around it (bwrap or nsenter speaking, or silence)."""
    lines = [line for line in said.splitlines() if line.strip()]
    return bool(lines) and not any(line.startswith(("bwrap:", "nsenter:")) for line in lines)


def _clear(path: Path) -> None:
    """Remove what is at `path` unless it is a regular file: a jailed daemon may have left
    a symlink, a FIFO (which would block the host's open) or a folder there."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    elif not stat.S_ISREG(mode):
        path.unlink()


@dataclass
class Daemon:
    """One service daemon on one device."""

    device: str
    service: str  # dns | vrrp
    folder: Path
    netns: str
    config: Config
    proc: subprocess.Popen | None = None
    restarts: int = 0
    log_from: int = 0  # where in daemon.out the latest start's words begin
    running: Config | None = None  # the configuration it was started with

    # The daemon is root in its jail and its folder is writable there: every file of the
    # folder the host opens is opened without following a symlink the daemon may have left
    # (towards a host file the host would write, or read back to the agent).
    def write(self) -> None:
        path = self.folder / "daemon.conf"
        _clear(path)
        path.unlink(missing_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with os.fdopen(os.open(path, flags, 0o644), "w") as out:
            out.write(self.config.render())

    def open_log(self) -> BinaryIO:
        """daemon.out for appending (a symlink there is replaced by a file)."""
        path = self.folder / "daemon.out"
        _clear(path)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
        return os.fdopen(os.open(path, flags, 0o644), "ab")

    def start(self) -> None:
        for stale in self.folder.glob("*.pid"):  # readiness is a fresh pid file
            stale.unlink()
        self.write()
        self.running = self.config.copy()
        log = self.open_log()
        self.log_from = os.fstat(log.fileno()).st_size
        self.proc = subprocess.Popen(
            ["nsenter", f"--net={self.netns}", *jail_argv(self.folder, self.service)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()

    def stop(self) -> None:
        """Kill the jail (its pid namespace goes with it). keepalived killed so leaves the
        addresses it held: they are removed here, so a restarted daemon starts clean."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self.proc = None
        if self.service == "vrrp" and self.running is not None:
            intfs = dict(group.split() for group in self.running.fixed)
            for directive, value in self.running.lines:
                vrid, _, address = value.partition(" ")
                if directive == "virtual_ipaddress" and vrid in intfs:
                    subprocess.run(
                        ["nsenter", f"--net={self.netns}", "ip", "addr", "del", address,
                         "dev", intfs[vrid]],
                        capture_output=True, timeout=10, check=False,
                    )  # fmt: skip

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self, latest: bool = False) -> str:
        """The log's last 400 characters (`latest`: of the latest start only)."""
        try:
            fd = os.open(self.folder / "daemon.out", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:  # none yet, or a symlink
            return ""
        with os.fdopen(fd, "rb") as log:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            log.seek(max(self.log_from if latest else 0, os.fstat(fd).st_size - 400))
            return log.read().decode(errors="replace")


@dataclass
class Services:
    """Every service daemon of one lab; the lab's ServiceControl for svcctl."""

    prefix: str
    netns: Callable[[str], str]
    ready: Callable[[Daemon], bool]  # whether a (re)started daemon serves again
    daemons: dict[tuple[str, str], Daemon] = field(default_factory=dict)

    @property
    def base(self) -> Path:
        return BASE / self.prefix

    def add(self, device: str, service: str, config: Config) -> Daemon:
        folder = self.base / f"{device}-{service}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        os.chmod(self.base, 0o755)
        daemon = Daemon(device, service, folder, self.netns(device), config)
        self.daemons[(device, service)] = daemon
        return daemon

    def start(self) -> None:
        for daemon in self.daemons.values():
            daemon.start()
        for daemon in self.daemons.values():
            self._await(daemon)

    def _await(self, daemon: Daemon) -> None:
        deadline = time.monotonic() + START_S
        while not self.ready(daemon):
            if not daemon.alive() or time.monotonic() > deadline:
                raise EnvironmentFailure(
                    f"{daemon.service} on {daemon.device} did not start: {daemon.output()}"
                )
            time.sleep(0.05)

    def restart(self, daemon: Daemon) -> None:
        daemon.stop()
        daemon.restarts += 1
        daemon.start()
        self._await(daemon)

    def remove(self) -> None:
        for daemon in self.daemons.values():
            daemon.stop()
        self.daemons.clear()
        shutil.rmtree(self.base, ignore_errors=True)

    # -- the lab side of svcctl -----------------------------------------------------------
    def daemon(self, machine: str, service: str) -> Daemon:
        found = self.daemons.get((machine, DAEMON_OF.get(service, service)))
        if found is None:
            here = sorted(s for d, s in self.daemons if d == machine)
            runs = f"it runs {', '.join(here)}" if here else "it runs no service"
            raise SvcctlError(f"{machine} runs no {service} service ({runs})")
        return found

    def apply(self, machine: str, command: SvcCommand) -> str:
        daemon = self.daemon(machine, command.service)
        if command.verb == "show":
            state = "running" if daemon.alive() else "stopped"
            return (
                f"# {command.service} on {machine} ({state})\n{daemon.config.show(command.service)}"
            )
        if command.verb == "set":
            changed = daemon.config.set(command.directive, command.value)
        else:
            changed = daemon.config.unset(command.directive, command.value)
        if not changed and daemon.alive():
            return f"{command.service} on {machine}: nothing changed"
        try:
            self.restart(daemon)
        except EnvironmentFailure:
            said = daemon.output(latest=True).strip()
            if daemon.alive() or not refused_by_daemon(said):
                raise  # it runs but did not serve in time, or its jail failed: the machine's
            # The daemon read the agent's configuration and exited on it: the service is
            # down, as after a real restart, and that is the agent's step (the lab's reset
            # restores it), not a failure of the lab that ends the episode.
            raise SvcctlError(
                f"configuration written, but {PROGRAMS[daemon.service].rsplit('/', 1)[1]} "
                f"exits on it: {command.service} on {machine} is stopped; it said: {said}"
            ) from None
        return f"{command.service} on {machine}: configuration written, daemon restarted"

    def set_trusted(self, machine: str, lines: tuple[str, ...]) -> None:
        """An injection: each line is an svcctl command's words after `svcctl` (`dns set
        host-record ...`); every daemon touched restarts once."""
        touched = []
        for line in lines:
            command = svcctl.parse(line.split())
            daemon = self.daemon(machine, command.service)
            if command.verb == "set":
                daemon.config.set(command.directive, command.value)
            elif command.verb == "unset":
                daemon.config.unset(command.directive, command.value)
            if all(d is not daemon for d in touched):
                touched.append(daemon)
        for daemon in touched:
            self.restart(daemon)

    def restore(self, healthy: dict[tuple[str, str], Config]) -> list[str]:
        """Back to the healthy configurations: the daemons that had to be restarted."""
        restarted = []
        for key, daemon in self.daemons.items():
            if daemon.config.canonical() != healthy[key].canonical() or not daemon.alive():
                daemon.config = healthy[key].copy()
                self.restart(daemon)
                restarted.append(f"{key[0]}/{key[1]}")
        return restarted
