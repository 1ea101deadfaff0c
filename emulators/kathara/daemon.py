"""NetGauge's own dockerd for Kathará: private paths, no firewall, started on demand.

Paths: the daemon's socket, pidfile, exec-root and config live in `/run/netgauge/kathara/`,
its data-root (images, the plugin) in `/var/lib/netgauge/kathara/docker`. It runs with
`--iptables=false --ip-forward=false --ip-masq=false --bridge=none`, so it never touches
the root firewall and has no default bridge. The system's docker (if any) is not used.

`Daemon` is a context manager: entering reuses a daemon that answers on our socket or
starts one, and takes a shared lock on `users.lock`; leaving stops the daemon when no
other user holds that lock (the kernel drops the lock of a user killed by `kill -9`).
On first start it imports the base image and creates and enables the network plugin
`kathara/katharanp:amd64` from the rootfs that scripts/setup.d/50-kathara.sh built.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from pipeline.errors import EnvironmentFailure

RUN_DIR = Path("/run/netgauge/kathara")
DATA_ROOT = Path("/var/lib/netgauge/kathara/docker")
ROOTFS = Path("/var/lib/netgauge/kathara/rootfs")
SOCKET = RUN_DIR / "docker.sock"
DOCKERD = "/usr/sbin/dockerd"
DOCKER = "/usr/bin/docker"  # Debian's client, matching the daemon's API
IMAGE = "netgauge/kathara-base:bookworm"
PLUGIN = "kathara/katharanp:amd64"
PLUGIN_SOURCE = Path(__file__).with_name("netplugin.py")
PLUGIN_SOCKETS = Path("/run/docker/plugins")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


def url() -> str:
    return f"unix://{SOCKET}"


def docker(*argv: str, check: bool = True, input_: bytes | None = None, timeout: float = 300):
    """Run Debian's docker client against our daemon."""
    proc = subprocess.run(
        [DOCKER, "-H", url(), *argv], input=input_, capture_output=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise EnvironmentFailure(
            f"docker {' '.join(argv[:3])} on our dockerd failed: {proc.stderr.decode()[-400:]}"
        )
    return proc


def answering() -> bool:
    if not SOCKET.exists():
        return False
    proc = subprocess.run(
        [DOCKER, "-H", url(), "version", "-f", "{{.Server.Version}}"],
        capture_output=True,
        timeout=10,
    )
    return proc.returncode == 0


def _pid() -> int | None:
    try:
        return int((RUN_DIR / "docker.pid").read_text().strip())
    except (OSError, ValueError):
        return None


class Daemon:
    """A use of our dockerd; see the module docstring."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self.started = False

    def __enter__(self) -> Self:
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(RUN_DIR / "users.lock", os.O_RDWR | os.O_CREAT, 0o644)
        with _start_lock():
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            if not answering():
                self._start()
            _ensure_assets()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release our use; stop the daemon if nobody else uses it."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            with _start_lock():
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # another user still holds its shared lock
                stop()
        finally:
            os.close(fd)

    def _start(self) -> None:
        stop()  # a dead daemon's pidfile or socket would make dockerd refuse to start
        DATA_ROOT.mkdir(parents=True, exist_ok=True)
        config = RUN_DIR / "daemon.json"
        config.write_text("{}\n")
        log = open(RUN_DIR / "dockerd.log", "ab")  # noqa: SIM115 (handed to the child)
        argv = [
            DOCKERD,
            f"--host={url()}",
            f"--data-root={DATA_ROOT}",
            f"--exec-root={RUN_DIR / 'exec'}",
            f"--pidfile={RUN_DIR / 'docker.pid'}",
            f"--config-file={config}",
            "--iptables=false",
            "--ip-forward=false",
            "--ip-masq=false",
            "--bridge=none",
            "--userland-proxy=false",
            "--log-level=warn",
        ]
        try:
            subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        except OSError as err:
            raise EnvironmentFailure(
                f"cannot start {DOCKERD}: {err} (scripts/setup.d/50-kathara.sh)"
            ) from err
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not answering():
            if time.monotonic() > deadline:
                tail = (RUN_DIR / "dockerd.log").read_text(errors="replace")[-600:]
                stop()
                raise EnvironmentFailure(f"our dockerd did not answer in time: {tail}")
            time.sleep(0.1)
        self.started = True


@contextlib.contextmanager
def _start_lock():
    fd = os.open(RUN_DIR / "start.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def stop() -> list[str]:
    """Stop our dockerd (SIGTERM, then SIGKILL); say what went."""
    gone = []
    pid = _pid()
    if pid is not None and _is_dockerd(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _is_dockerd(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _is_dockerd(pid):
            os.kill(pid, signal.SIGKILL)
        gone.append(f"dockerd {pid}")
    for name in ("docker.sock", "docker.pid"):
        with contextlib.suppress(FileNotFoundError):
            (RUN_DIR / name).unlink()
    # dockerd puts managed plugins' sockets in /run/docker/plugins/<id>/ whatever the
    # exec-root; remove those folders (and the parents, if that leaves them empty).
    for path in (PLUGIN_SOCKETS, PLUGIN_SOCKETS.parent):
        with contextlib.suppress(OSError):
            path.rmdir()
    return gone


def _is_dockerd(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return (
        bool(cmdline) and cmdline[0] == DOCKERD.encode() and f"--host={url()}".encode() in cmdline
    )


def _ensure_assets() -> None:
    """Import the base image and create + enable the plugin, if missing."""
    done = ROOTFS.with_name("rootfs.done")
    if not (ROOTFS / "bin").exists() or not done.exists():
        raise EnvironmentFailure(f"{ROOTFS} is missing: run scripts/setup.d/50-kathara.sh")
    # A new rootfs or plugin source replaces the image and the plugin made from the old.
    stamp = DATA_ROOT / "assets.stamp"
    want = done.read_text() + hashlib.sha256(PLUGIN_SOURCE.read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text() != want:
        docker("plugin", "rm", "-f", PLUGIN, check=False)
        docker("rmi", "-f", IMAGE, check=False)
    if docker("image", "inspect", IMAGE, check=False).returncode != 0:
        tar = subprocess.Popen(["tar", "-C", str(ROOTFS), "-c", "."], stdout=subprocess.PIPE)
        proc = subprocess.run(
            [DOCKER, "-H", url(), "import", "--change", 'CMD ["/bin/bash"]', "-", IMAGE],
            stdin=tar.stdout,
            capture_output=True,
        )
        tar.wait()
        if proc.returncode != 0 or tar.returncode != 0:
            raise EnvironmentFailure(f"importing {IMAGE}: {proc.stderr.decode()[-300:]}")
    info = docker("plugin", "inspect", "-f", "{{.Enabled}}", PLUGIN, check=False)
    if info.returncode != 0:
        _create_plugin()
        info = docker("plugin", "inspect", "-f", "{{.Enabled}}", PLUGIN)
    if info.stdout.decode().strip() != "true":
        docker("plugin", "enable", PLUGIN)
    stamp.write_text(want)


def _create_plugin() -> None:
    with tempfile.TemporaryDirectory(prefix="katharanp-", dir="/var/lib/netgauge/kathara") as d:
        root = Path(d) / "rootfs"
        subprocess.run(["cp", "-a", str(ROOTFS), str(root)], check=True)
        shutil.copy(PLUGIN_SOURCE, root / "netplugin.py")
        config = {
            "description": "NetGauge's local katharanp: a bridge per collision domain",
            "documentation": "emulators/kathara/netplugin.py",
            "entrypoint": ["/usr/bin/python3", "/netplugin.py"],
            "interface": {"types": ["docker.networkdriver/1.0"], "socket": "katharanp.sock"},
            "network": {"type": "host"},
            "linux": {"capabilities": ["CAP_NET_ADMIN"]},
        }
        (Path(d) / "config.json").write_text(json.dumps(config))
        docker("plugin", "create", PLUGIN, d)
