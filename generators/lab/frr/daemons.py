"""FRR daemons of one lab: per router zebra, ospfd (and bgpd), each in a bubblewrap jail.

Agents reach the daemons through vtysh, and FRR can be told to write files (`log file`,
`write memory`, `dump bgp`): the kernel, not a command filter, decides what they can
touch. Each daemon runs in its router's network namespace inside a jail holding only
/usr/lib (code and libraries), the YANG models, /etc/passwd and /etc/group, read-only,
and two folders of its own router, writable:

  <base>/<router>/etc  ->  /etc/frr          its configuration (`write memory` lands here)
  <base>/<router>/run  ->  /var/run/frr      pid files, zserv.api, logs
  <base>/<router>/vty  ->  /var/run/frr/vty  the vty sockets vtysh connects to

with new pid, IPC and UTS namespaces and a read-only root, no other host file. FRR starts
as root holding only the capabilities it asks for (NET_ADMIN, NET_RAW, NET_BIND_SERVICE,
SYS_ADMIN, and SETUID/SETGID to drop them) and runs as the `frr` user. The agent's vtysh
(emulators/netcmd/vtysh.py) sees only its router's vty folder.

The environment's own reads go over kept-open vty sessions (generators/lab/frr/vty.py),
one per daemon, owned here: `answer` sends each line to the one daemon that answers it
(`owner`), no vtysh process per router per poll. Anything it cannot answer as vtysh
would (a line whose daemon it does not know, an answer other than success or a warning,
a session that fails) is asked again of a trusted vtysh, whose output or failure stands.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from emulators.jail import bwrap_path
from emulators.netcmd.vtysh import VTYSH_CONF
from generators.lab.frr.vty import CMD_SUCCESS, CMD_WARNING, Vty
from pipeline.api import EnvironmentFailure

FRR_LIB = Path("/usr/lib/frr")
CAPS = ("CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_SYS_ADMIN",
        "CAP_SETUID", "CAP_SETGID")  # fmt: skip
BASE = Path("/run/netgauge-frr")
# The trusted vtysh: no history file (vtysh appends its -c lines to ~/.history_frr).
HOST_VTYSH = ("vtysh", "-H", "/dev/null", "--vty_socket")
START_S = 10.0  # how long a daemon may take to open its vty socket
# vtysh's output, decoded with replacement: FRR keeps whatever bytes it was told (a
# `neighbor ... description` holding 0xFF), and no such byte may break a later read.
READ_BACK: dict[str, Any] = {"encoding": "utf-8", "errors": "replace"}
# The daemon that alone answers a line starting so (vtysh sends it there and nowhere else).
OWNERS = (("show ip ospf ", "ospfd"), ("show bgp ", "bgpd"), ("show ip bgp ", "bgpd"),
          ("clear bgp ", "bgpd"), ("clear ip bgp ", "bgpd"))  # fmt: skip
VTYSH_OK = (CMD_SUCCESS, CMD_WARNING)  # vtysh -c goes on (exit 0) after these codes


def owner(line: str) -> str | None:
    """The daemon that alone answers `line` (OWNERS), or None."""
    return next((daemon for start, daemon in OWNERS if line.startswith(start)), None)


def installed() -> str | None:
    """Why FRR cannot run here, or None."""
    for daemon in ("zebra", "ospfd", "bgpd"):
        if not (FRR_LIB / daemon).exists():
            return f"FRR is not installed ({FRR_LIB / daemon} missing): run scripts/setup.sh"
    if shutil.which("vtysh") is None:
        return "vtysh is not installed: run scripts/setup.sh (apt package frr)"
    try:
        pwd.getpwnam("frr")
        grp.getgrnam("frrvty")
    except KeyError:
        return "the frr user or the frrvty group is missing: reinstall the frr package"
    return None


def cleanup_stale(alive: Callable[[str], bool]) -> list[str]:
    """Remove the folders of labs whose emulator instance is gone (a killed run's); the
    daemons went with their instance's namespaces."""
    removed = []
    if BASE.is_dir():
        for folder in BASE.iterdir():
            if folder.is_dir() and not alive(folder.name):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(str(folder))
    return removed


def _empty(folder: Path, keep: Sequence[str] = ()) -> None:
    """Remove what `folder` holds but the folders named in `keep` (a stale socket, pid
    file or log, a file a `write memory` left): the folder as freshly made."""
    for path in folder.iterdir():
        if path.name in keep and path.is_dir() and not path.is_symlink():
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def frr_ids() -> tuple[int, int, int]:
    """(uid of frr, gid of frr, gid of frrvty)."""
    user = pwd.getpwnam("frr")
    return user.pw_uid, user.pw_gid, grp.getgrnam("frrvty").gr_gid


def jail_argv(root: Path, daemon: str) -> list[str]:
    args = [bwrap_path(), "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv",
            "--cap-drop", "ALL"]  # fmt: skip
    for cap in CAPS:
        args += ["--cap-add", cap]
    for name in ("bin", "sbin", "lib", "lib64"):
        args += ["--symlink", f"usr/{name}", f"/{name}"]
    # bwrap makes the parents of a bind 0700; the daemons, once `frr`, must cross them.
    for folder in ("/etc", "/var", "/var/run", "/usr", "/usr/share"):
        args += ["--perms", "0755", "--dir", folder]
    args += ["--ro-bind", "/usr/lib", "/usr/lib", "--ro-bind-try", "/usr/lib64", "/usr/lib64",
             "--ro-bind", "/usr/share/yang", "/usr/share/yang",
             "--ro-bind", "/etc/passwd", "/etc/passwd", "--ro-bind", "/etc/group", "/etc/group",
             "--bind", str(root / "etc"), "/etc/frr", "--bind", str(root / "run"), "/var/run/frr",
             "--bind", str(root / "vty"), "/var/run/frr/vty",
             "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
             "--perms", "01777", "--tmpfs", "/var/tmp", "--remount-ro", "/", "--",
             str(FRR_LIB / daemon), "-f", f"/etc/frr/{daemon}.conf",
             "-i", f"/var/run/frr/{daemon}.pid", "-z", "/var/run/frr/zserv.api",
             "--vty_socket", "/var/run/frr/vty", "-A", "127.0.0.1",
             "--log", f"file:/var/run/frr/{daemon}.log"]  # fmt: skip
    return args


class RouterDaemons:
    """The FRR daemons of every router of one lab; see the module docstring."""

    def __init__(
        self, prefix: str, routers: Sequence[str], daemons: Sequence[str],
        netns: Callable[[str], str],
    ) -> None:  # fmt: skip
        self.base = BASE / prefix
        self.routers = tuple(routers)
        self.daemons = tuple(daemons)
        self._netns = netns
        self._procs: dict[tuple[str, str], subprocess.Popen] = {}
        self.vty = Vty({r: self.vty_dir(r) for r in self.routers}, self.daemons)

    def root(self, router: str) -> Path:
        return self.base / router

    def vty_dir(self, router: str) -> Path:
        return self.root(router) / "vty"

    def write_configs(self, configs: dict[str, dict[str, str]]) -> None:
        """Every router's folders emptied (made where missing), holding its configuration
        once per daemon (configs[router][daemon]; without an integrated configuration,
        `write memory` makes each daemon write its own file). The folders themselves are
        kept, never made anew: the lab's persistent vtysh jail holds each router's folder
        as it was when the jail started (emulators/zygote), and restarts when it is
        another folder; emptied, a restored lab's is still the one the jail holds."""
        self.base.mkdir(parents=True, exist_ok=True)
        os.chmod(self.base, 0o755)
        uid, gid, vty_gid = frr_ids()
        for router in self.routers:
            root = self.root(router)
            root.mkdir(exist_ok=True)
            _empty(root, keep=("etc", "run", "vty"))
            for sub in ("etc", "run", "vty"):
                (root / sub).mkdir(exist_ok=True)
                _empty(root / sub)
                os.chown(root / sub, uid, vty_gid if sub == "vty" else gid)
                os.chmod(root / sub, 0o770 if sub == "vty" else 0o750)
            os.chmod(root, 0o755)
            (root / "vtysh.conf").write_text(VTYSH_CONF)
            self.write_files(router, configs[router])

    def write_files(self, router: str, configs: dict[str, str]) -> None:
        """The router's configuration folder holding exactly its daemons' files (what a
        `write memory` left there, `.sav` copies included, goes)."""
        uid, gid, _ = frr_ids()
        etc = self.root(router) / "etc"
        wanted = {f"{daemon}.conf" for daemon in self.daemons}
        for path in etc.iterdir():
            if path.name not in wanted:
                path.unlink()
        for daemon in self.daemons:
            path = etc / f"{daemon}.conf"
            path.write_text(configs[daemon])
            os.chown(path, uid, gid)
            os.chmod(path, 0o640)

    def files_differ(self, router: str, configs: dict[str, str]) -> bool:
        """Whether the router's configuration folder holds anything but its files."""
        etc = self.root(router) / "etc"
        try:
            found = {p.name: p.read_text(errors="replace") for p in etc.iterdir()}
        except OSError:
            return True
        return found != {f"{d}.conf": configs[d] for d in self.daemons}

    def start(self, routers: Sequence[str] | None = None) -> None:
        """Start the daemons of `routers` (every router by default), zebra first on each
        (the others connect to zebra's socket when they start)."""
        chosen = self.routers if routers is None else tuple(routers)
        for router in chosen:
            for daemon in self.daemons:
                log = open(self.root(router) / f"{daemon}.out", "wb")  # noqa: SIM115
                argv = [
                    "nsenter",
                    f"--net={self._netns(router)}",
                    *jail_argv(self.root(router), daemon),
                ]
                self._procs[(router, daemon)] = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
                log.close()
                if daemon == "zebra":
                    self._wait_socket(router, "zebra")
        for router in chosen:
            for daemon in self.daemons:
                self._wait_socket(router, daemon)

    def _wait_socket(self, router: str, daemon: str) -> None:
        path = self.vty_dir(router) / f"{daemon}.vty"
        deadline = time.monotonic() + START_S
        while not path.exists():
            proc = self._procs[(router, daemon)]
            if proc.poll() is not None or time.monotonic() > deadline:
                out = (self.root(router) / f"{daemon}.out").read_text(errors="replace")
                raise EnvironmentFailure(
                    f"FRR {daemon} on {router} did not start (exit {proc.poll()}): {out[-300:]}"
                )
            time.sleep(0.02)

    def stop(self, routers: Sequence[str] | None = None) -> None:
        """Kill the daemons of `routers` (every router by default; the jail's pid
        namespace takes everything in it along)."""
        chosen = set(self.routers if routers is None else routers)
        self.vty.close(chosen)
        procs = {key: p for key, p in self._procs.items() if key[0] in chosen}
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        for key, proc in procs.items():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            del self._procs[key]
        for router in chosen:  # a restarted daemon makes its socket anew
            for daemon in self.daemons:
                (self.vty_dir(router) / f"{daemon}.vty").unlink(missing_ok=True)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def alive(self) -> list[str]:
        return [f"{r}/{d}" for (r, d), p in self._procs.items() if p.poll() is None]

    def answer(
        self, commands: Mapping[str, Sequence[str]], timeout_s: float = 10.0
    ) -> dict[str, str]:
        """Trusted lines per router ({router: [lines]}), answered over the kept-open vty
        sessions as vtysh with the same -c lines prints them: {router: output}. A router
        whose lines cannot all be answered so goes to vtysh (module docstring)."""
        deadline = time.monotonic() + timeout_s
        requests: dict[tuple[str, str], list[str]] = {}
        order: dict[str, list[tuple[str, int]]] = {}  # router -> (daemon, index) per line
        by_vtysh = set()
        for router, lines in commands.items():
            owners = [owner(line) for line in lines]
            if router not in self.routers or not all(d in self.daemons for d in owners):
                by_vtysh.add(router)
                continue
            for line, daemon in zip(lines, owners, strict=True):
                asked = requests.setdefault((router, daemon), [])
                order.setdefault(router, []).append((daemon, len(asked)))
                asked.append(line)
        outs: dict[str, str] = {}
        try:
            answers = self.vty.ask(requests, max(0.1, deadline - time.monotonic()))
        except EnvironmentFailure:
            by_vtysh |= set(order)
        else:
            for router, where in order.items():
                got = [answers[(router, daemon)][n] for daemon, n in where]
                if all(code in VTYSH_OK for code, _ in got):
                    outs[router] = "".join(text for _, text in got)
                else:
                    by_vtysh.add(router)
        for cmds in {tuple(commands[r]) for r in by_vtysh}:
            same = [r for r in by_vtysh if tuple(commands[r]) == cmds]
            left = max(0.1, deadline - time.monotonic())
            outs.update(self.vtysh_all(same, list(cmds), timeout_s=left))
        return outs

    def vtysh_all(
        self, routers: Sequence[str], commands: Sequence[str], timeout_s: float = 10.0
    ) -> dict[str, str]:
        """Trusted vtysh on several routers at once: {router: output}."""
        procs = {}
        for router in routers:
            argv = [*HOST_VTYSH, str(self.vty_dir(router))]
            for command in commands:
                argv += ["-c", command]
            procs[router] = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **READ_BACK
            )
        deadline = time.monotonic() + timeout_s
        outs = {}
        for router, proc in procs.items():
            try:
                out, _ = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as err:
                for other in procs.values():
                    other.kill()
                    other.wait()
                raise EnvironmentFailure(f"vtysh on {router} timed out: {commands}") from err
            if proc.returncode != 0:
                raise EnvironmentFailure(
                    f"vtysh on {router} exited {proc.returncode} for {commands}: {out[:300]}"
                )
            outs[router] = out
        return outs

    def vtysh(self, router: str, commands: Sequence[str], timeout_s: float = 10.0) -> str:
        """Trusted vtysh on `router` (injections, state polls): its output; raises
        EnvironmentFailure when it fails."""
        argv = [*HOST_VTYSH, str(self.vty_dir(router))]
        for command in commands:
            argv += ["-c", command]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=timeout_s, **READ_BACK)
        except subprocess.TimeoutExpired as err:
            raise EnvironmentFailure(f"vtysh on {router} timed out: {commands}") from err
        if done.returncode != 0:
            raise EnvironmentFailure(
                f"vtysh on {router} exited {done.returncode} for {commands}: "
                f"{(done.stdout + done.stderr).strip()[:300]}"
            )
        return done.stdout
