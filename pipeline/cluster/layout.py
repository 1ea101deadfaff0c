"""Where a local SLURM cluster keeps its files, and the configs NetGauge writes for it.

A state directory (default /var/lib/netgauge/slurm/local) holds:

    lock               flock held by the cluster's keeper for as long as it runs
    keeper.pid/.log    the keeper (pipeline/cluster/keeper.py) and what it printed
    ready.json         written once every daemon answers: ports, nodes, daemon pids
    etc/               slurm.conf, slurmdbd.conf (0600: it holds the database password)
    bin/               wrappers of the client commands that set SLURM_CONF (put first on
                       PATH: the executor's job step drops SLURM_* before its nested srun)
    munge/             munged's key (made per start), socket and pid file
    db/                MariaDB's data directory and socket
    ctld/ spool/<node>/ run/ log/   slurmctld state, each slurmd's spool, pids, every log

Everything but `lock` is rebuilt at each start, and the database removed at each stop
(the logs stay until the next start). Nodes are `ng1`..`ngN` in partition `local`
(the default partition), cluster `netgauge`.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.config import ROOT
from pipeline.slurm_executor import POLL_MAX_ENV

STATE_ROOT = Path("/var/lib/netgauge/slurm")
DEFAULT_STATE_DIR = STATE_ROOT / "local"
CLUSTER = "netgauge"
PARTITION = "local"
# What the keeper rebuilds at each start (never anything else under a state directory).
REBUILT = ("etc", "bin", "munge", "db", "ctld", "spool", "run", "log", "ready.json")
CLIENT_TOOLS = (
    "sbatch",
    "srun",
    "salloc",
    "squeue",
    "scancel",
    "sinfo",
    "scontrol",
    "sacct",
    "sacctmgr",
    "sshare",
    "sstat",
    "sattach",
)
# What a local cluster wants from the executor: its first status check after 2 s, not 40
# (every level of the DAG waits for one; sacct answers in milliseconds here).
SNAKEMAKE_FLAGS = ("--slurm-init-seconds-before-status-checks", "2")
# ... and every later one within 2 s, not after a wait the executor grows by 10 s per check
# that saw no job end (pipeline/slurm_executor.py): every client of the cluster gets it.
POLL_MAX_S = "2"
_SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes with the terminating NUL


@dataclass(frozen=True)
class Spec:
    """The cluster's shape: `nodes` slurmd daemons of `cpus` CPUs each."""

    nodes: int = 2
    cpus: int = 1

    def node_names(self) -> list[str]:
        return [f"ng{i}" for i in range(1, self.nodes + 1)]


@dataclass(frozen=True)
class Ports:
    """TCP ports on 127.0.0.1, picked free at each start."""

    slurmctld: int
    slurmdbd: int
    mariadb: int
    slurmd: dict[str, int] = field(default_factory=dict)


def _under(*parts: str) -> property:
    """A Layout property: the path `parts` under the state directory."""
    return property(lambda self: self.root.joinpath(*parts))


@dataclass(frozen=True)
class Layout:
    """Paths under one state directory (see the module docstring)."""

    root: Path

    def __post_init__(self) -> None:
        longest = max(self.munge_socket, self.db_socket, key=lambda p: len(str(p)))
        if len(str(longest)) > _SOCKET_PATH_MAX:
            raise ValueError(f"state directory {self.root} is too long for the socket {longest}")

    lock = _under("lock")
    keeper_pid = _under("keeper.pid")
    keeper_log = _under("keeper.log")
    ready = _under("ready.json")
    etc = _under("etc")
    bin = _under("bin")
    slurm_conf = _under("etc", "slurm.conf")
    slurmdbd_conf = _under("etc", "slurmdbd.conf")
    munge_key = _under("munge", "munge.key")
    munge_socket = _under("munge", "munge.sock")
    db_data = _under("db", "data")
    db_socket = _under("db", "mysqld.sock")
    ctld = _under("ctld")
    run = _under("run")
    log = _under("log")

    def spool(self, node: str) -> Path:
        return self.root / "spool" / node

    def client_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (default: this process's environment) set up as a client of the cluster."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.slurm_conf)
        env["PATH"] = f"{self.bin}:{env.get('PATH', '/usr/bin:/bin')}"
        env[POLL_MAX_ENV] = POLL_MAX_S
        return env

    def wipe(self) -> None:
        """Remove what a previous start left (REBUILT only), keeping `lock`."""
        for name in REBUILT:
            path = self.root / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()


def private_state_dir(purpose: str) -> Path:
    """A state directory of this checkout's own for `purpose` (tests, benchmarks), so
    checkouts side by side never share a cluster, and a run killed before it could stop
    its cluster is cleaned by the next run of the same checkout."""

    return STATE_ROOT / f"{purpose}-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]}"


def short_hostname() -> str:
    """The name slurmctld and slurmd compare with their config (`hostname -s`)."""
    return socket.gethostname().split(".")[0]


def memory_mb() -> int:
    """This machine's memory, in MB, from /proc/meminfo."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise OSError("no MemTotal in /proc/meminfo")


def slurm_conf(layout: Layout, spec: Spec, ports: Ports) -> str:
    """slurm.conf: why each choice, where it is not SLURM's default, is said beside it."""
    host = short_hostname()
    nodes = "\n".join(
        f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={ports.slurmd[name]} "
        f"CPUs={spec.cpus} RealMemory={memory_mb()} State=UNKNOWN"
        for name in spec.node_names()
    )
    return f"""\
# Written by NetGauge (pipeline/cluster/layout.py) for a throwaway local cluster.
ClusterName={CLUSTER}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports.slurmctld}
# Jobs run as the submitting user; NetGauge's run stage needs root (namespaces).
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={layout.munge_socket}
CredType=cred/munge
StateSaveLocation={layout.ctld}
SlurmdSpoolDir={layout.root}/spool/%n
SlurmctldPidFile={layout.run}/slurmctld.pid
SlurmdPidFile={layout.run}/slurmd-%n.pid
SlurmctldLogFile={layout.log}/slurmctld.log
SlurmdLogFile={layout.log}/slurmd-%n.log
# Processes are tracked through /proc and not confined: cgroup plugins would write to the
# machine's cgroup hierarchy, shared with other users of this host.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
# Nodes are what this file says (slurmd would otherwise see every core on each of them).
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
InactiveLimit=0
# Accounting: sacct is how the executor plugin follows jobs. AccountingStoragePass names
# the munge socket slurmctld uses to reach slurmdbd.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={ports.slurmdbd}
AccountingStoragePass={layout.munge_socket}
AccountingStoreFlags=job_comment
{nodes}
PartitionName={PARTITION} Nodes={",".join(spec.node_names())} Default=YES MaxTime=INFINITE State=UP
"""


def slurmdbd_conf(layout: Layout, ports: Ports, password: str) -> str:
    return f"""\
# Written by NetGauge (pipeline/cluster/layout.py) for a throwaway local cluster.
AuthType=auth/munge
AuthInfo=socket={layout.munge_socket}
DbdAddr=127.0.0.1
DbdHost=localhost
DbdPort={ports.slurmdbd}
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports.mariadb}
StorageUser=slurm
StoragePass={password}
StorageLoc=slurm_acct_db
PidFile={layout.run}/slurmdbd.pid
LogFile={layout.log}/slurmdbd.log
"""


def write_files(layout: Layout, spec: Spec, ports: Ports) -> str:
    """Create the state directory's folders, configs, wrappers and munge key; return the
    database password slurmdbd.conf holds (for the keeper to create that user)."""
    for folder in (
        layout.etc,
        layout.bin,
        layout.ctld,
        layout.run,
        layout.log,
        layout.db_data.parent,
    ):
        folder.mkdir(parents=True, exist_ok=True)
    for node in spec.node_names():
        layout.spool(node).mkdir(parents=True, exist_ok=True)
    # munged wants its socket's folder searchable by all and its key readable by it alone.
    layout.munge_key.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    layout.munge_key.parent.chmod(0o755)
    fd = os.open(layout.munge_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, "wb") as key:
        key.write(secrets.token_bytes(128))
    layout.slurm_conf.write_text(slurm_conf(layout, spec, ports))
    password = secrets.token_hex(16)
    fd = os.open(layout.slurmdbd_conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as conf:
        conf.write(slurmdbd_conf(layout, ports, password))
    for tool in CLIENT_TOOLS:
        wrapper = layout.bin / tool
        wrapper.write_text(
            f'#!/bin/sh\nexport SLURM_CONF="{layout.slurm_conf}"\nexec /usr/bin/{tool} "$@"\n'
        )
        wrapper.chmod(0o755)
    return password
