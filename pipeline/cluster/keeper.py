"""The process that owns a running local cluster, and the context manager tests use.

`serve` (run as `python -m pipeline.cluster serve`) takes the state directory's lock,
stops whatever a killed earlier cluster of that directory left, starts the daemons,
writes ready.json, then waits. It stops the cluster on SIGTERM/SIGINT/SIGHUP, or, given
`--owner-fd`, as soon as that pipe closes: the kernel closes it when the owner dies, so a
test killed by `kill -9` still leaves nothing running. Its daemons are sent SIGTERM by the
kernel if the keeper itself is killed, and the next start sweeps what remains.

`LocalCluster` starts a keeper tied to the calling process and stops it on exit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Self

from pipeline.cluster import daemons
from pipeline.cluster.layout import DEFAULT_STATE_DIR, Layout, Ports, Spec, write_files
from pipeline.config import ROOT
from pipeline.errors import EnvironmentFailure
from pipeline.files import write_whole
from pipeline.procs import alive, command_line, free_port

START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 120.0
IN_USE_EXIT = 3


class _Stop(Exception):
    """Raised by the keeper's signal handlers to leave its wait."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def serve(layout: Layout, spec: Spec, owner_fd: int | None = None) -> int:
    """Run a cluster until told to stop (see the module docstring); the exit status."""
    layout.root.mkdir(parents=True, exist_ok=True)
    lock = os.open(layout.lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(
            f"a local SLURM cluster already runs in {layout.root} ({_keeper_text(layout)}); "
            "stop it first: scripts/local-slurm.sh stop",
            file=sys.stderr,
        )
        return IN_USE_EXIT
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _raise_stop)
    running: daemons.Daemons = {}
    try:
        stale = daemons.sweep(layout)
        if stale:
            print(f"stopped what an earlier cluster left: {', '.join(stale)}", flush=True)
        layout.wipe()
        layout.keeper_pid.write_text(f"{os.getpid()}\n")
        nodes = spec.node_names()
        ports = Ports(free_port(), free_port(), free_port(), {n: free_port() for n in nodes})
        password = write_files(layout, spec, ports)
        started = time.monotonic()
        running = daemons.start(layout, spec, ports, password)
        ready = {
            "keeper": os.getpid(),
            "slurm_conf": str(layout.slurm_conf),
            "bin": str(layout.bin),
            "nodes": nodes,
            "ports": {
                "slurmctld": ports.slurmctld,
                "slurmdbd": ports.slurmdbd,
                "mariadb": ports.mariadb,
                **{f"slurmd {n}": p for n, p in ports.slurmd.items()},
            },
            "daemons": {name: proc.pid for name, proc in running.items()},
            "start_s": round(time.monotonic() - started, 2),
        }
        write_whole(layout.ready, json.dumps(ready, indent=1) + "\n")
        print(f"ready in {ready['start_s']} s: {', '.join(running)}", flush=True)
        _wait_for_stop(owner_fd)
    except _Stop as why:
        print(f"stopping ({why})", flush=True)
    except EnvironmentFailure as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let nothing cut the stop short
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        gone = daemons.stop(layout, running)
        shutil.rmtree(layout.db_data, ignore_errors=True)  # 150 MB nobody can query now
        with contextlib.suppress(FileNotFoundError):
            layout.ready.unlink()
        with contextlib.suppress(FileNotFoundError):
            layout.keeper_pid.unlink()
        print(f"stopped: {', '.join(gone) or 'nothing'}", flush=True)
    return 0


def _wait_for_stop(owner_fd: int | None) -> None:
    if owner_fd is None:
        while True:
            signal.pause()
    while os.read(owner_fd, 1):  # b"" once every writer has closed its end
        pass
    raise _Stop("owner gone")


def _keeper_pid(layout: Layout) -> int | None:
    """The live keeper of `layout`, checked by its command line (a pid can be reused)."""
    try:
        pid = int(layout.keeper_pid.read_text().strip())
    except (OSError, ValueError):
        return None
    cmd = command_line(pid)
    return (
        pid if alive(pid) and "pipeline.cluster serve" in cmd and str(layout.root) in cmd else None
    )


def _keeper_text(layout: Layout) -> str:
    pid = _keeper_pid(layout)
    return f"keeper pid {pid}" if pid else "its keeper is starting or stopping"


def keeper_argv(layout: Layout, spec: Spec, owner_fd: int | None = None) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "pipeline.cluster",
        "serve",
        "--state-dir",
        str(layout.root),
        "--nodes",
        str(spec.nodes),
        "--cpus",
        str(spec.cpus),
    ]
    return argv + (["--owner-fd", str(owner_fd)] if owner_fd is not None else [])


def launch(
    layout: Layout, spec: Spec, owner_fd: int | None = None
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Start a keeper in a session of its own and wait until its cluster is ready; return
    it and ready.json. EnvironmentFailure, with the keeper's last words, if it gives up."""
    daemons.check_installed()
    layout.root.mkdir(parents=True, exist_ok=True)
    with layout.keeper_log.open("ab") as log:
        keeper = subprocess.Popen(
            keeper_argv(layout, spec, owner_fd),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(owner_fd,) if owner_fd is not None else (),
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while (ready := _ready(layout)).get("keeper") != keeper.pid:  # not a killed one's
        if keeper.poll() is not None or time.monotonic() > deadline:
            if keeper.poll() is None:
                keeper.terminate()
                keeper.wait(STOP_TIMEOUT_S)
            tail = layout.keeper_log.read_text(errors="replace")[-1500:]
            raise EnvironmentFailure(
                f"the local SLURM cluster in {layout.root} did not start: {tail}"
            )
        time.sleep(0.2)
    return keeper, ready


def _ready(layout: Layout) -> dict[str, Any]:
    try:
        return json.loads(layout.ready.read_text())
    except (OSError, ValueError):
        return {}


def shutdown(layout: Layout) -> list[str]:
    """Stop the cluster in `layout`: SIGTERM its keeper and wait; with no live keeper, stop
    what a killed one left (under the lock, so never a cluster that is starting)."""
    pid = _keeper_pid(layout)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while alive(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.1)
    if not layout.root.exists():
        return []
    lock = os.open(layout.lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        gone = daemons.sweep(layout)
        with contextlib.suppress(FileNotFoundError):
            layout.ready.unlink()
    finally:
        os.close(lock)
    return ([f"keeper {pid}"] if pid else []) + gone


class LocalCluster:
    """A local SLURM cluster for the life of a `with` block (tests, benchmarks).

    The keeper is tied to this process by a pipe: if this process dies, however it dies,
    the cluster stops.
    """

    def __init__(self, state_dir: Path = DEFAULT_STATE_DIR, spec: Spec | None = None) -> None:
        self.layout = Layout(Path(state_dir))
        self.spec = spec or Spec()
        self.ready: dict[str, Any] = {}
        self._owner: int | None = None
        self._keeper: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        read_end, self._owner = os.pipe()
        try:
            self._keeper, self.ready = launch(self.layout, self.spec, owner_fd=read_end)
        except BaseException:
            self.close()
            raise
        finally:
            os.close(read_end)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the owner pipe (the keeper then stops the cluster) and wait for it."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        os.close(owner)
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            try:
                keeper.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                keeper.kill()
                keeper.wait()
        if daemons.leftovers(self.layout):
            shutdown(self.layout)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment for SLURM clients (snakemake --profile profiles/slurm, sbatch)."""
        return self.layout.client_env(base)

    @property
    def daemon_pids(self) -> dict[str, int]:
        return dict(self.ready.get("daemons", {}))
