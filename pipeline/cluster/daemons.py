"""Start, check and stop the daemons of a local SLURM cluster; find what one left behind.

Every daemon is started with `NETGAUGE_SLURM_CLUSTER=<state dir>` in its environment (and
slurmstepd inherits it from slurmd), so the processes of a cluster are found in /proc even
after its keeper was killed; job processes are found by the `SLURM_CONF` they inherit from
the submitting client together with a `SLURM_JOB_ID`. Nothing is found by name: processes
of other clusters and other users are never touched.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pipeline.cluster.layout import CLUSTER, Layout, Ports, Spec
from pipeline.errors import EnvironmentFailure
from pipeline.procs import alive, all_pids, ancestors, command_line, die_with_parent, environ

TAG = "NETGAUGE_SLURM_CLUSTER"
SETUP_HINT = "run make setup (scripts/setup.d/80-slurm.sh)"
BINARIES = {
    "munged": "/usr/sbin/munged",
    "mariadbd": "/usr/sbin/mariadbd",
    "mariadb-install-db": "/usr/bin/mariadb-install-db",
    "mariadb": "/usr/bin/mariadb",
    "slurmdbd": "/usr/sbin/slurmdbd",
    "slurmctld": "/usr/sbin/slurmctld",
    "slurmd": "/usr/sbin/slurmd",
    "sbatch": "/usr/bin/sbatch",
}
READY_TIMEOUT_S = 90.0  # per daemon; a loaded 2-core machine takes its time
STOP_TIMEOUT_S = 20.0
JOBS_DRAIN_S = 30.0  # scancel'ed jobs get KillWait (5 s) between SIGTERM and SIGKILL
Daemons = dict[str, subprocess.Popen[bytes]]


def check_installed() -> None:
    missing = [path for path in BINARIES.values() if not Path(path).exists()]
    if missing:
        raise EnvironmentFailure(f"SLURM is not installed: no {', '.join(missing)}; {SETUP_HINT}")
    if os.geteuid() != 0:
        raise EnvironmentFailure("a local SLURM cluster runs as root (SlurmUser=root); run as root")


def _run(layout: Layout, *argv: str, timeout: float = 30, input_: str | None = None):
    return subprocess.run(
        argv,
        env=layout.client_env(),
        input=input_,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _spawn(layout: Layout, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
    """Start one daemon in the foreground: tagged, in a session of its own, logging to
    log/<name>.out, and sent SIGTERM if the keeper dies."""
    env = {**layout.client_env(), TAG: str(layout.root)}
    with (layout.log / f"{name}.out").open("ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=layout.root,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )


def _wait(what: str, layout: Layout, proc: subprocess.Popen[bytes], ready: Callable[[], bool]):
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready():
        if proc.poll() is not None:
            raise EnvironmentFailure(f"{what} exited with {proc.returncode}: {_tail(layout, what)}")
        if time.monotonic() > deadline:
            raise EnvironmentFailure(
                f"{what} did not answer in {READY_TIMEOUT_S:.0f} s: {_tail(layout, what)}"
            )
        time.sleep(0.2)


def _tail(layout: Layout, name: str, chars: int = 800) -> str:
    texts = []
    for path in sorted(layout.log.glob(f"{name.split()[0]}*")):
        texts.append(f"[{path.name}] " + path.read_text(errors="replace")[-chars:])
    return " ".join(texts) or "(no log)"


def _port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def start(layout: Layout, spec: Spec, ports: Ports, db_password: str) -> Daemons:
    """Start munge, MariaDB, slurmdbd, slurmctld and the slurmd nodes, each once the one
    before it answers; return the daemons by name. On any failure the caller stops them."""
    daemons: Daemons = {}
    try:
        _start_all(layout, spec, ports, db_password, daemons)
    except BaseException:
        stop(layout, daemons)
        raise
    return daemons


def _start_all(layout: Layout, spec: Spec, ports: Ports, password: str, daemons: Daemons):
    sock = str(layout.munge_socket)
    daemons["munged"] = _spawn(
        layout,
        "munged",
        [BINARIES["munged"], "-F", f"--socket={sock}", f"--key-file={layout.munge_key}",
         f"--pid-file={layout.run}/munged.pid", f"--seed-file={layout.run}/munged.seed",
         "--num-threads=10"],
    )  # fmt: skip
    _wait("munged", layout, daemons["munged"], lambda: _munge_ok(layout))

    installed = _run(
        layout,
        BINARIES["mariadb-install-db"], "--no-defaults", f"--datadir={layout.db_data}",
        "--auth-root-authentication-method=socket", "--skip-test-db", "--user=root",
        timeout=120,
    )  # fmt: skip
    if installed.returncode != 0:
        raise EnvironmentFailure(f"mariadb-install-db failed: {installed.stderr[-600:]}")
    daemons["mariadbd"] = _spawn(
        layout,
        "mariadbd",
        [BINARIES["mariadbd"], "--no-defaults", f"--datadir={layout.db_data}",
         f"--socket={layout.db_socket}", f"--pid-file={layout.run}/mariadbd.pid",
         f"--port={ports.mariadb}", "--bind-address=127.0.0.1", "--user=root",
         "--skip-name-resolve", f"--log-error={layout.log}/mariadbd.log",
         # what slurmdbd checks for (it logs an error on smaller values)
         "--innodb-buffer-pool-size=128M", "--innodb-log-file-size=64M",
         "--innodb-lock-wait-timeout=900"],
    )  # fmt: skip
    _wait("mariadbd", layout, daemons["mariadbd"], lambda: _sql(layout, "SELECT 1").returncode == 0)
    created = _sql(
        layout,
        f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}'; "
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';",
    )
    if created.returncode != 0:
        raise EnvironmentFailure(f"cannot create slurmdbd's database user: {created.stderr}")

    daemons["slurmdbd"] = _spawn(layout, "slurmdbd", [BINARIES["slurmdbd"], "-D"])
    _wait("slurmdbd", layout, daemons["slurmdbd"], lambda: _port_open(ports.slurmdbd))
    conf = str(layout.slurm_conf)
    daemons["slurmctld"] = _spawn(layout, "slurmctld", [BINARIES["slurmctld"], "-D", "-f", conf])
    _wait("slurmctld", layout, daemons["slurmctld"], lambda: _controller_up(layout))
    for node in spec.node_names():
        daemons[f"slurmd {node}"] = _spawn(
            layout, f"slurmd-{node}", [BINARIES["slurmd"], "-D", "-N", node, "-f", conf]
        )
    first = daemons[f"slurmd {spec.node_names()[0]}"]
    _wait("slurmd", layout, first, lambda: _nodes_idle(layout, spec))
    _wait("slurmctld", layout, daemons["slurmctld"], lambda: _registered(layout))


def _munge_ok(layout: Layout) -> bool:
    if not layout.munge_socket.exists():
        return False
    sock = str(layout.munge_socket)
    cred = _run(layout, "munge", "-n", "-S", sock)
    return (
        cred.returncode == 0
        and _run(layout, "unmunge", "-S", sock, input_=cred.stdout).returncode == 0
    )


def _sql(layout: Layout, statement: str) -> subprocess.CompletedProcess[str]:
    mariadb = [BINARIES["mariadb"], "--no-defaults", "-S", str(layout.db_socket), "-u", "root"]
    return _run(layout, *mariadb, "-e", statement)


def _controller_up(layout: Layout) -> bool:
    return "is UP" in _run(layout, "scontrol", "ping").stdout


def _nodes_idle(layout: Layout, spec: Spec) -> bool:
    states = _run(layout, "sinfo", "-h", "-N", "-o", "%N %T").stdout.split()
    return states.count("idle") == spec.nodes


def _registered(layout: Layout) -> bool:
    """slurmdbd knows the cluster (else sacct, and so the executor, sees no jobs)."""
    listed = _run(layout, "sacctmgr", "-n", "-P", "show", "cluster", "format=cluster")
    return CLUSTER in listed.stdout.split()


def cancel_jobs(layout: Layout) -> list[str]:
    """scancel every job of the cluster and wait until slurmctld has none left."""
    if not layout.slurm_conf.exists():
        return []
    listed = _run(layout, "squeue", "-h", "-o", "%A", timeout=15)
    jobs = listed.stdout.split() if listed.returncode == 0 else []
    if not jobs:
        return []
    _run(layout, "scancel", *jobs, timeout=15)
    deadline = time.monotonic() + JOBS_DRAIN_S
    while time.monotonic() < deadline:
        if not _run(layout, "squeue", "-h", "-o", "%A", timeout=15).stdout.split():
            break
        time.sleep(0.5)
    return [f"job {job}" for job in jobs]


# Stopped in this order: nodes first (no node left to run a job), the database last but one.
_STOP_ORDER = ("slurmd ", "slurmctld", "slurmdbd", "mariadbd", "munged")


def stop(layout: Layout, daemons: Daemons | None = None) -> list[str]:
    """Stop the cluster in `layout`: cancel its jobs, stop `daemons` (SIGTERM, then
    SIGKILL), then whatever else `leftovers` finds. Returns what was stopped."""
    gone = cancel_jobs(layout) if daemons and daemons.get("slurmctld") else []
    for prefix in _STOP_ORDER:
        for name, proc in (daemons or {}).items():
            if name.startswith(prefix) and proc.poll() is None:
                _terminate(proc.pid, waiter=proc)
                gone.append(f"{name} {proc.pid}")
    gone += sweep(layout)
    return gone


def _terminate(pid: int, waiter: subprocess.Popen[bytes] | None = None) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if waiter is not None and waiter.poll() is not None:
            return
        if waiter is None and not alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if waiter is not None:
        waiter.wait()


def leftovers(layout: Layout) -> dict[int, str]:
    """Processes of the cluster in `layout` still alive (daemons, job steps, job
    processes), by pid, with their command lines; never this process or its ancestors."""
    mine = ancestors()
    conf = str(layout.slurm_conf)
    found = {}
    for pid in all_pids():
        if pid in mine:
            continue
        env = environ(pid)
        daemon = env.get(TAG) == str(layout.root)
        job = env.get("SLURM_CONF") == conf and "SLURM_JOB_ID" in env
        if (daemon or job) and alive(pid):
            found[pid] = command_line(pid)
    return found


def sweep(layout: Layout) -> list[str]:
    """Stop every process `leftovers` finds: SIGTERM, then SIGKILL after a grace period."""
    found = leftovers(layout)
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5.0
    while any(alive(pid) for pid in found) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in found:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return [f"{cmd.split(' ')[0] or '?'} {pid} (left behind)" for pid, cmd in found.items()]
