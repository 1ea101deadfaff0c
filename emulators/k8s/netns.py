"""Linux network namespaces of one emulated cluster: a node namespace holding the bridge, one
namespace per pod wired to it by a veth pair, and nothing in the root namespace.

Names: `ngkk<pid:x>x<instance>-node` and `ngkk<pid:x>x<instance>-<pod index>`; inside the
node namespace the bridge is `br0` and pod i's end of its pair is `v<i>`; inside a pod the
other end is `eth0`, with MAC `pod_mac(i)`, and every pod holds permanent neighbour
entries for the cluster's addresses (the kernel's neighbour table limit is host-wide).
The API server listens in `ngkk<pid:x>x<instance>-api`, a namespace holding only a
loopback, which is where the agent's kubectl runs: it reaches its own cluster's API
server and nothing else. `cleanup_stale()` deletes `ngkk*` namespaces whose
owning pid is gone. Sockets are opened inside a namespace with setns(2) on the calling
thread only.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import socket
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from emulators.setns import entered
from pipeline.cgroup import alive
from pipeline.errors import EnvironmentFailure

PREFIX = "ngkk"  # k8s app; other features use other prefixes
NETNS_DIR = Path("/run/netns")
CLEANUP_LOCK = Path("/run/netgauge/k8s/cleanup.lock")  # serialises cleanup_stale across jobs
GATEWAY = "10.244.0.1"
GATEWAY_MAC = "02:6e:67:ff:ff:01"  # locally administered, fixed: the bridge's
PREFIX_LEN = 24
_NAME = re.compile(rf"^{PREFIX}([0-9a-f]+)x(\d+)-")
_counter = itertools.count(1)


def _run(cmd: Sequence[str], stdin: str = "", timeout: float = 20.0) -> None:
    try:
        proc = subprocess.run(
            list(cmd), input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise EnvironmentFailure(f"{cmd[0]} failed: {err}") from err
    if proc.returncode != 0:
        raise EnvironmentFailure(
            f"`{' '.join(cmd)}` exited {proc.returncode}: {proc.stderr.strip()[:500]}"
        )


def run_parallel(jobs: Sequence[tuple[Sequence[str], str]], timeout: float = 20.0) -> None:
    """Run (argv, stdin) jobs at once; raise EnvironmentFailure naming the first failure."""
    procs = []
    try:
        for cmd, stdin in jobs:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            procs.append((cmd, proc, stdin))
    except OSError as err:
        raise EnvironmentFailure(f"{jobs[len(procs)][0][0]} could not start: {err}") from err
    failures = []
    for cmd, proc, stdin in procs:
        try:
            _, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            failures.append(f"`{' '.join(cmd)}` timed out")
            continue
        if proc.returncode != 0:
            failures.append(f"`{' '.join(cmd)}` exited {proc.returncode}: {err.strip()[:300]}")
    if failures:
        raise EnvironmentFailure(failures[0])


def pod_mac(index: int) -> str:
    """The (locally administered) MAC address of pod `index`'s eth0."""
    return f"02:6e:67:00:{index >> 8 & 0xFF:02x}:{index & 0xFF:02x}"


def cleanup_stale() -> list[str]:
    """Delete `ngkk*` namespaces left by processes that no longer exist; return their names.

    Clusters of several jobs start at once after a killed run and each finds the same dead
    namespaces; the scan and the deletion happen under one lock file so that exactly one of
    them deletes each namespace (`ip -batch` fails on a name another job removed meanwhile).
    """
    if not NETNS_DIR.is_dir():
        return []
    CLEANUP_LOCK.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(CLEANUP_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        stale = []
        for entry in sorted(os.listdir(NETNS_DIR)):
            m = _NAME.match(entry)
            if m and not alive(int(m.group(1), 16)):
                stale.append(entry)
        if stale:
            _run(["ip", "-force", "-batch", "-"], "".join(f"netns del {n}\n" for n in stale))
        return stale
    finally:
        os.close(fd)  # drops the lock


def owned(pid: int | None = None) -> list[str]:
    """The namespaces of process `pid` (default: this one) that exist now."""
    tag = f"{PREFIX}{(pid or os.getpid()):x}x"
    if not NETNS_DIR.is_dir():
        return []
    return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(tag))


class ApiNamespace:
    """A namespace with only a loopback, for one cluster's API server and its kubectl."""

    def __init__(self) -> None:
        self.name = f"{PREFIX}{os.getpid():x}x{next(_counter)}-api"
        self.path = NETNS_DIR / self.name
        _run(["ip", "netns", "add", self.name])
        try:
            _run(["ip", "-n", self.name, "link", "set", "lo", "up"])
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            _run(["ip", "netns", "del", self.name])
            raise

    def listener(self, host: str = "127.0.0.1") -> socket.socket:
        """A TCP socket listening on a free port of the namespace's loopback."""
        with entered(self._fd, self.name):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        sock.listen(64)
        return sock

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.path.exists():
            _run(["ip", "netns", "del", self.name])


class Topology:
    """The namespaces and links of one cluster instance; `close()` deletes them all."""

    def __init__(self, pod_ips: Sequence[str]) -> None:
        self.tag = f"{PREFIX}{os.getpid():x}x{next(_counter)}"
        self.node = f"{self.tag}-node"
        self.pods = [f"{self.tag}-{i}" for i in range(len(pod_ips))]
        self.ips = list(pod_ips)
        self._fds: dict[str, int] = {}
        self._lock = threading.Lock()

    def build(self) -> None:
        names = [self.node, *self.pods]
        try:
            _run(["ip", "-batch", "-"], "".join(f"netns add {n}\n" for n in names))
            node = [
                "link add br0 type bridge",
                f"link set br0 address {GATEWAY_MAC}",
                f"addr add {GATEWAY}/{PREFIX_LEN} dev br0",
                "link set br0 up",
                "link set lo up",
            ]
            for i, ns in enumerate(self.pods):
                node += [
                    f"link add v{i} type veth peer name eth0 address {pod_mac(i)} netns {ns}",
                    f"link set v{i} master br0",
                    f"link set v{i} up",
                ]
            _run(["ip", "-n", self.node, "-batch", "-"], "\n".join(node) + "\n")
            # Every pod knows every address of its cluster by a permanent neighbour entry.
            # The kernel's neighbour table is one for all namespaces, and its limit
            # (net.ipv4.neigh.default.gc_thresh3, 1024 by default: host-wide, not ours to
            # raise) is soon met by clusters of a few dozen pods that all talk to each
            # other: past it, a new connection fails at the source and a probe would read
            # as blocked. Permanent entries do not count against it.
            neighbours = [(GATEWAY, GATEWAY_MAC)]
            neighbours += [(ip, pod_mac(i)) for i, ip in enumerate(self.ips)]
            jobs = []
            for ns, ip in zip(self.pods, self.ips, strict=True):
                cmds = [
                    "link set lo up",
                    f"addr add {ip}/{PREFIX_LEN} dev eth0",
                    "link set eth0 up",
                    f"route add default via {GATEWAY}",
                    *(
                        f"neigh replace {other} lladdr {mac} dev eth0 nud permanent"
                        for other, mac in neighbours
                        if other != ip
                    ),
                ]
                jobs.append((["ip", "-n", ns, "-batch", "-"], "\n".join(cmds) + "\n"))
            run_parallel(jobs)
            for ns in names:
                self._fds[ns] = os.open(NETNS_DIR / ns, os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            self.close()
            raise

    def restore(self, scripts: dict[int, str]) -> None:
        """Load iptables-restore scripts into pod namespaces (by pod index), in parallel."""
        jobs = [
            (["nsenter", f"--net={NETNS_DIR / self.pods[i]}", "iptables-nft-restore"], text)
            for i, text in sorted(scripts.items())
        ]
        if jobs:
            run_parallel(jobs)

    def inside(self, index: int) -> contextlib.AbstractContextManager[None]:
        """Run the block on this thread in pod `index`'s network namespace."""
        return entered(self._fds[self.pods[index]], self.pods[index])

    def socket_in(self, index: int, kind: int) -> socket.socket:
        with entered(self._fds[self.pods[index]], self.pods[index]):
            return socket.socket(socket.AF_INET, kind)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        names = [n for n in [self.node, *self.pods] if (NETNS_DIR / n).exists()]
        if names:
            _run(["ip", "-force", "-batch", "-"], "".join(f"netns del {n}\n" for n in names))
