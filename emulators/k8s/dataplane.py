"""The data plane: pods as network namespaces with real listeners, a DNS stand-in, enforced
policies, and probes made of real packets.

Every TCP container port has a listening socket inside its pod's namespace; the DNS pod
has a UDP socket on port 53 answering A queries for `<svc>.<ns>.svc.cluster.local`. A
probe of all pairs runs in this process with non-blocking sockets opened inside each
source pod's namespace: first every DNS lookup at once (UDP through the kube-dns
ClusterIP), then every TCP connect at once; the DNS socket is served by the same poll
loop and the listeners' accept queues are drained after it, so nothing runs between probes.
"""

from __future__ import annotations

import errno
import select
import socket
import struct
import time
from collections.abc import Sequence
from typing import Any

from emulators.k8s import enforce
from emulators.k8s.netns import Topology
from emulators.k8s.policy import DNS_PORT, Pair, View

DNS_TIMEOUT_S = 0.3
# Blocked connects are rejected (enforce.py), so they fail at once; a connect that is
# still pending after this long is a lost packet on a busy machine, not a verdict.
CONNECT_TIMEOUT_S = 2.0
_LINGER_RESET = struct.pack("ii", 1, 0)


def dns_query(qid: int, name: str) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split("."))
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + labels + b"\0" + b"\0\1\0\1"


def dns_answer(query: bytes, table: dict[str, str]) -> bytes | None:
    """The response to an A query, from `table` (name -> IPv4); None for garbage."""
    if len(query) < 17:
        return None
    qid = struct.unpack("!H", query[:2])[0]
    pos, labels = 12, []
    while pos < len(query) and query[pos]:
        size = query[pos]
        labels.append(query[pos + 1 : pos + 1 + size].decode(errors="replace"))
        pos += 1 + size
    question = query[12 : pos + 5]
    ip = table.get(".".join(labels).lower())
    if ip is None:
        return struct.pack("!HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question
    answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 30, 4) + socket.inet_aton(ip)
    return struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + answer


def dns_reply_ip(data: bytes) -> str | None:
    if len(data) < 12 or struct.unpack("!H", data[2:4])[0] & 0xF != 0:
        return None
    if struct.unpack("!H", data[6:8])[0] < 1 or len(data) < 4:
        return None
    return socket.inet_ntoa(data[-4:])


class DataPlane:
    """Pod namespaces for the pods of a View, their listeners, rules and probes."""

    def __init__(self, view: View) -> None:
        self.order = sorted(view.pods)  # pod names; index = position
        self.index = {name: i for i, name in enumerate(self.order)}
        self.topology = Topology([view.pods[n].ip for n in self.order])
        self._listeners: list[socket.socket] = []
        self._dns: list[socket.socket] = []
        self._scripts: dict[str, str] = {}
        self._dns_table: dict[str, str] = {}
        self._dns_ip = ""

    def start(self, view: View) -> None:
        self.topology.build()
        try:
            for name in self.order:
                pod = view.pods[name]
                for _, port, proto in pod.ports:
                    kind = socket.SOCK_STREAM if proto == "TCP" else socket.SOCK_DGRAM
                    if proto not in ("TCP", "UDP"):
                        continue
                    sock = self.topology.socket_in(self.index[name], kind)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.setblocking(False)
                    sock.bind(("0.0.0.0", port))
                    if proto == "TCP":
                        sock.listen(256)
                        self._listeners.append(sock)
                    elif port == DNS_PORT:
                        self._dns.append(sock)
                    else:
                        self._listeners.append(sock)
            self.apply(view)
        except BaseException:
            self.close()
            raise

    def apply(self, view: View) -> int:
        """Recompile rules and reload the pods whose script changed; return how many."""
        scripts = enforce.compile_all(view)
        changed = {
            self.index[name]: text
            for name, text in scripts.items()
            if name in self.index and self._scripts.get(name) != text
        }
        self.topology.restore(changed)
        self._scripts.update({self.order[i]: t for i, t in changed.items()})
        self._dns_table = {
            f"{svc.name}.{svc.namespace}.svc.cluster.local": svc.cluster_ip
            for svc in view.services.values()
        }
        dns = view.services.get(("kube-system", "kube-dns"))
        self._dns_ip = dns.cluster_ip if dns else ""
        return len(changed)

    def probe(self, pairs: Sequence[Pair]) -> dict[str, tuple[bool, str]]:
        """Pair key -> (connected, why not: "" | "dns" | "refused" | "timeout")."""
        results: dict[str, tuple[bool, str]] = {}
        resolved = self._resolve(pairs, results)
        self._connect(resolved, results)
        return results

    def _serve(self, readable: set[int]) -> None:
        for sock in self._listeners:
            if sock.fileno() in readable and sock.type == socket.SOCK_STREAM:
                while True:
                    try:
                        conn, _ = sock.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
                    conn.close()
        for sock in self._dns:
            if sock.fileno() in readable:
                while True:
                    try:
                        data, addr = sock.recvfrom(512)
                    except (BlockingIOError, InterruptedError):
                        break
                    reply = dns_answer(data, self._dns_table)
                    if reply is not None:
                        sock.sendto(reply, addr)

    def _resolve(self, pairs: Sequence[Pair], results: dict[str, tuple[bool, str]]):
        pending: dict[int, tuple[socket.socket, Pair]] = {}
        resolved: list[tuple[Pair, str]] = []
        by_source: dict[str, list[Pair]] = {}
        for pair in pairs:
            by_source.setdefault(pair.source, []).append(pair)
        for source, group in by_source.items():
            with self.topology.inside(self.index[source]):
                socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in group]
            for sock, pair in zip(socks, group, strict=True):
                sock.setblocking(False)
                name = f"{pair.service}.{pair.namespace}.svc.cluster.local"
                try:
                    sock.sendto(dns_query(len(pending) & 0xFFFF, name), (self._dns_ip, DNS_PORT))
                except OSError:  # EPERM: an egress rule dropped the query at the source
                    sock.close()
                    results[pair.key] = (False, "dns")
                    continue
                pending[sock.fileno()] = (sock, pair)
        self._poll(
            pending,
            DNS_TIMEOUT_S,
            lambda fd, sock, pair: self._dns_reply(sock, pair, resolved, results),
            select.POLLIN,
        )
        for sock, pair in pending.values():
            sock.close()
            results[pair.key] = (False, "dns")
        return resolved

    @staticmethod
    def _dns_reply(sock: socket.socket, pair: Pair, resolved: list, results: dict) -> None:
        try:
            ip = dns_reply_ip(sock.recv(512))
        except OSError:
            ip = None
        sock.close()
        if ip is None:
            results[pair.key] = (False, "dns")
        else:
            resolved.append((pair, ip))

    def _connect(self, resolved: list[tuple[Pair, str]], results: dict) -> None:
        pending: dict[int, tuple[socket.socket, Pair]] = {}
        by_source: dict[str, list[tuple[Pair, str]]] = {}
        for pair, ip in resolved:
            by_source.setdefault(pair.source, []).append((pair, ip))
        for source, group in by_source.items():
            with self.topology.inside(self.index[source]):
                socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in group]
            for sock, (pair, ip) in zip(socks, group, strict=True):
                sock.setblocking(False)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
                code = sock.connect_ex((ip, pair.port))
                if code in (errno.EINPROGRESS, 0):
                    pending[sock.fileno()] = (sock, pair)
                else:
                    sock.close()
                    results[pair.key] = (
                        False,
                        "refused" if code == errno.ECONNREFUSED else "timeout",
                    )

        def done(fd: int, sock: socket.socket, pair: Pair) -> None:
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            sock.close()
            results[pair.key] = (True, "") if code == 0 else (False, "refused")

        self._poll(pending, CONNECT_TIMEOUT_S, done, select.POLLOUT)
        for sock, pair in pending.values():
            sock.close()
            results[pair.key] = (False, "timeout")

    def _poll(self, pending: dict[int, Any], timeout: float, on_ready: Any, event: int) -> None:
        poller = select.poll()
        for fd in pending:
            poller.register(fd, event)
        # Only DNS is answered during a phase: accepting (and resetting) a connection before
        # its client saw it complete would turn a success into ECONNRESET.
        served = {s.fileno() for s in self._dns}
        for fd in served:
            poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout
        while pending:
            left = max(0.0, deadline - time.monotonic())
            ready = poller.poll(left * 1000)
            readable = {fd for fd, _ in ready if fd in served}
            if readable:
                self._serve(readable)
            for fd, _ in ready:
                if fd in pending:
                    sock, pair = pending.pop(fd)
                    poller.unregister(fd)
                    on_ready(fd, sock, pair)
            if left <= 0:
                break
        for sock in self._listeners:
            self._serve({sock.fileno()})

    def close(self) -> None:
        for sock in (*self._listeners, *self._dns):
            sock.close()
        self._listeners, self._dns = [], []
        self.topology.close()
