"""The data plane: pods as network namespaces with real listeners, a DNS stand-in, enforced
policies, and probes made of real packets.

Every TCP container port, and every port a pod probe names (emulators/k8s/probes.py), has
a listening socket inside its pod's namespace (UDP ones echo what they get); the DNS pod
has a UDP socket on port 53 answering A queries for `<svc>.<ns>.svc.cluster.local`. A
probe of all pairs runs in this process with non-blocking sockets opened inside each
source pod's namespace: first every DNS lookup of the Service probes at once (UDP through
the kube-dns ClusterIP), then every connection at once (TCP connects to the Service's
address or the pod's; UDP datagrams to the pod's echo). The DNS and echo sockets are
served by the same poll loop and the TCP listeners' accept queues are drained after it,
so nothing runs between probes.

Verdicts never rest on a timeout. A blocked probe gets an answer at once (policies end
in REJECT: a TCP reset, an ICMP port-unreachable, or EPERM at the source; ICMP errors are
not rate-limited in pod namespaces), so a probe that got no answer in its time is asked
again, with the time doubled, up to ATTEMPTS times; answers that arrived while this
process was not scheduled are read before any time is judged over. A probe still
unanswered after that is an EnvironmentFailure, not a verdict.
"""

from __future__ import annotations

import contextlib
import errno
import resource
import select
import socket
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

from emulators.k8s import enforce
from emulators.k8s.netns import Topology
from emulators.k8s.policy import DNS_PORT, Pair, View
from emulators.k8s.probes import listening
from pipeline.errors import EnvironmentFailure

DNS_TIMEOUT_S = 0.3  # the first attempt's; doubled on each further attempt
CONNECT_TIMEOUT_S = 2.0
ATTEMPTS = 5  # 0.3 + 0.6 + 1.2 + 2.4 + 4.8 s of DNS, 2 + ... + 32 s of connects at most
UNANSWERED = ("dns: no answer", "no answer")  # reasons that are not verdicts
ECHO = b"netgauge-probe"
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)  # root may pass net.core.rmem_max
UDP_BUFFER = 4 << 20
_LINGER_RESET = struct.pack("ii", 1, 0)

Reason = str  # "" (connected) | "dns" | "refused" | one of UNANSWERED
Results = dict[str, tuple[bool, Reason]]


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
    return _first_answer(data)


def dns_no_such_name(data: bytes) -> bool:
    """Whether a DNS reply says NXDOMAIN (the name does not exist)."""
    return len(data) >= 12 and struct.unpack("!H", data[2:4])[0] & 0xF == 3


def _first_answer(data: bytes) -> str | None:
    if struct.unpack("!H", data[6:8])[0] < 1 or len(data) < 4:
        return None
    return socket.inet_ntoa(data[-4:])


class DataPlane:
    """Pod namespaces for the pods of a View, their listeners, rules and probes."""

    def __init__(self, view: View) -> None:
        self.order = sorted(view.pods)  # pod names; index = position
        self.index = {name: i for i, name in enumerate(self.order)}
        self.ips = {name: view.pods[name].ip for name in self.order}
        self.topology = Topology([view.pods[n].ip for n in self.order])
        self._tcp: list[socket.socket] = []  # listening; drained after each phase
        self._dns: list[socket.socket] = []  # answered during each phase
        self._echo: list[socket.socket] = []  # UDP, echoed during each phase
        self._scripts: dict[str, str] = {}
        self._dns_table: dict[str, str] = {}
        self._dns_ip = ""
        self.attempts: list[int] = []  # probes asked per attempt, of the last probe()

    def start(self, view: View, probes: Sequence[Pair] = ()) -> None:
        # A probe holds a socket per pair at once (over a thousand in a large cluster) and
        # the listeners stay open: raise this process's soft open-file limit to its hard one.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self.topology.build()
        try:
            for name in self.order:
                # A blocked UDP probe is answered by an ICMP error from the pod that
                # refuses it; the kernel's rate limits would turn the 7th such answer to
                # one peer within a second into silence. The knob is per namespace.
                with (
                    self.topology.inside(self.index[name]),
                    open("/proc/sys/net/ipv4/icmp_ratemask", "w") as knob,
                ):
                    knob.write("0")
            wanted = listening(view, probes)
            for name in self.order:
                for port, proto in sorted(wanted[name]):
                    self._listen(name, port, proto)
            self.apply(view)
        except OSError as err:
            self.close()
            raise EnvironmentFailure(f"the data plane could not start: {err}") from err
        except BaseException:
            self.close()
            raise

    def _listen(self, name: str, port: int, proto: str) -> None:
        kind = socket.SOCK_STREAM if proto == "TCP" else socket.SOCK_DGRAM
        sock = self.topology.socket_in(self.index[name], kind)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if proto != "TCP":
            # Every source's lookup reaches the DNS socket at once (hundreds in a large
            # cluster): the default receive buffer holds about a hundred datagrams and
            # drops the rest, which then cost a second attempt. A per-socket setting.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, UDP_BUFFER)
        sock.setblocking(False)
        sock.bind(("0.0.0.0", port))
        if proto == "TCP":
            sock.listen(256)
            self._tcp.append(sock)
        elif port == DNS_PORT:
            self._dns.append(sock)
        else:
            self._echo.append(sock)

    def apply(self, view: View) -> int:
        """Recompile rules and reload the pods whose script changed; return how many."""
        scripts = enforce.compile_all(view)
        changed = {
            self.index[name]: text
            for name, text in scripts.items()
            if name in self.index and self._scripts.get(name) != text
        }
        try:
            self.topology.restore(changed)
        except BaseException:
            for i in changed:  # loaded or not: reload them on the next apply
                self._scripts.pop(self.order[i], None)
            raise
        self._scripts.update({self.order[i]: t for i, t in changed.items()})
        self._dns_table = {
            f"{svc.name}.{svc.namespace}.svc.cluster.local": svc.cluster_ip
            for svc in view.services.values()
        }
        dns = view.services.get(("kube-system", "kube-dns"))
        self._dns_ip = dns.cluster_ip if dns else ""
        return len(changed)

    def probe(self, pairs: Sequence[Pair]) -> Results:
        """Pair key -> (connected, why not: "" | "dns" | "refused"); see the module
        docstring for the attempts. Raises EnvironmentFailure for a probe never answered."""
        results: Results = {}
        todo = list(pairs)
        self.attempts = []
        for attempt in range(ATTEMPTS):
            self.attempts.append(len(todo))
            got = self._once(todo, 2**attempt)
            results.update(got)
            todo = [p for p in todo if got[p.key][1] in UNANSWERED]
            if not todo:
                return results
        shown = ", ".join(f"{p.key} ({results[p.key][1]})" for p in todo[:5])
        raise EnvironmentFailure(
            f"{len(todo)} probes got no answer in {ATTEMPTS} attempts (the last waited "
            f"{CONNECT_TIMEOUT_S * 2 ** (ATTEMPTS - 1):g} s): {shown}; a blocked probe is "
            "refused at once, so the machine is too loaded to measure connectivity"
        )

    def _once(self, pairs: Sequence[Pair], scale: float) -> Results:
        results: Results = {}
        service = [p for p in pairs if not p.target]
        resolved = self._resolve(service, results, DNS_TIMEOUT_S * scale)
        direct = [(p, self.ips.get(p.target, "")) for p in pairs if p.target]
        self._connect([*resolved, *direct], results, CONNECT_TIMEOUT_S * scale)
        return results

    def _serve(self, readable: set[int]) -> None:
        for sock in self._tcp:
            if sock.fileno() in readable:
                while True:
                    try:
                        conn, _ = sock.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
                    conn.close()
        for sock in (*self._dns, *self._echo):
            if sock.fileno() in readable:
                while True:
                    try:
                        data, addr = sock.recvfrom(512)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:  # an ICMP error of an earlier echo; not a datagram
                        continue
                    # The DNS pod's socket answers queries, and echoes a pod probe of
                    # port 53 as any UDP listener does.
                    is_query = sock in self._dns and data != ECHO
                    reply = dns_answer(data, self._dns_table) if is_query else data
                    if reply is not None:
                        # OSError: the answer was refused on its way; the source waits.
                        with contextlib.suppress(OSError):
                            sock.sendto(reply, addr)

    def probe_flow(
        self, source: str, name: str | None, ip: str | None, port: int, protocol: str
    ) -> tuple[str | None, str]:
        """One flow from pod `source`: a lookup of `name` through the cluster's DNS (when
        given), then a connection to the address it gave (else to `ip`) on port/protocol,
        asked again like `probe`'s unanswered ones. Returns (the address, or None when the
        lookup failed; what happened: "connected", "answered", "connection refused", "no
        answer (port unreachable)", or why the lookup failed)."""
        pair = Pair(source, "", "", "", port, protocol)
        for attempt in range(ATTEMPTS):
            scale = 2**attempt
            results: Results = {}
            address = ip
            if name is not None:
                resolved = self._resolve([pair], results, DNS_TIMEOUT_S * scale, {pair.key: name})
                if not resolved:
                    reason = results[pair.key][1]
                    if reason in UNANSWERED:
                        continue
                    if reason == "dns: no such name":
                        return None, "no such name (NXDOMAIN)"
                    return None, f"no answer from the cluster DNS {self._dns_ip} (refused)"
                address = resolved[0][1]
            self._connect([(pair, address or "")], results, CONNECT_TIMEOUT_S * scale)
            ok, reason = results[pair.key]
            if reason in UNANSWERED:
                continue
            if ok:
                return address, "connected" if protocol == "TCP" else "answered"
            return address, (
                "connection refused" if protocol == "TCP" else "no answer (port unreachable)"
            )
        raise EnvironmentFailure(
            f"a probe from {source} got no answer in {ATTEMPTS} attempts; a blocked probe is "
            "refused at once, so the machine is too loaded to measure connectivity"
        )

    def _resolve(
        self,
        pairs: Sequence[Pair],
        results: Results,
        timeout: float,
        names: dict[str, str] | None = None,
    ):
        """Send each Service pair's lookup (`names`: pair key -> the name to ask, else the
        pair's Service name) and collect the answers: (pair, address) of those resolved."""
        pending: dict[int, tuple[socket.socket, Pair, int]] = {}
        resolved: list[tuple[Pair, str]] = []
        for source, group in _by_source(pairs).items():
            with self.topology.inside(self.index[source]):
                socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in group]
            for sock, pair in zip(socks, group, strict=True):
                sock.setblocking(False)
                name = (names or {}).get(pair.key) or (
                    f"{pair.service}.{pair.namespace}.svc.cluster.local"
                )
                try:
                    sock.sendto(dns_query(len(pending) & 0xFFFF, name), (self._dns_ip, DNS_PORT))
                except OSError:  # EPERM: an egress rule refused the query at the source
                    sock.close()
                    results[pair.key] = (False, "dns")
                    continue
                pending[sock.fileno()] = (sock, pair, select.POLLIN)

        def answered(sock: socket.socket, pair: Pair) -> None:
            missing = False
            try:
                data = sock.recv(512)
                ip, missing = dns_reply_ip(data), dns_no_such_name(data)
            except OSError:  # ECONNREFUSED: the DNS pod's rules refused the query
                ip = None
            sock.close()
            if ip is None:
                results[pair.key] = (False, "dns: no such name" if missing else "dns")
            else:
                resolved.append((pair, ip))

        self._poll(pending, timeout, answered)
        for sock, pair, _ in pending.values():
            sock.close()
            results[pair.key] = (False, "dns: no answer")
        return resolved

    def _connect(self, targets: list[tuple[Pair, str]], results: Results, timeout: float) -> None:
        pending: dict[int, tuple[socket.socket, Pair, int]] = {}
        for source, group in _by_source(targets).items():
            with self.topology.inside(self.index[source]):
                socks = [
                    socket.socket(
                        socket.AF_INET,
                        socket.SOCK_DGRAM if pair.protocol == "UDP" else socket.SOCK_STREAM,
                    )
                    for pair, _ in group
                ]
            for sock, (pair, ip) in zip(socks, group, strict=True):
                sock.setblocking(False)
                if pair.protocol == "UDP":
                    try:
                        sock.connect((ip, pair.port))
                        sock.send(ECHO)
                    except OSError:  # EPERM: an egress rule refused it at the source
                        sock.close()
                        results[pair.key] = (False, "refused")
                        continue
                    pending[sock.fileno()] = (sock, pair, select.POLLIN)
                    continue
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
                code = sock.connect_ex((ip, pair.port))
                if code in (errno.EINPROGRESS, 0):
                    pending[sock.fileno()] = (sock, pair, select.POLLOUT)
                else:  # refused at the source (EPERM, ECONNREFUSED, unreachable)
                    sock.close()
                    results[pair.key] = (False, "refused")

        def done(sock: socket.socket, pair: Pair) -> None:
            if pair.protocol == "UDP":
                try:
                    ok = sock.recv(512) == ECHO
                except OSError:  # ECONNREFUSED: the ICMP error of a rule that refused it
                    ok = False
            else:
                ok = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
            sock.close()
            results[pair.key] = (True, "") if ok else (False, "refused")

        self._poll(pending, timeout, done)
        for sock, pair, _ in pending.values():
            sock.close()
            results[pair.key] = (False, "no answer")

    def _poll(
        self,
        pending: dict[int, tuple[socket.socket, Pair, int]],
        timeout: float,
        on_ready: Callable[[socket.socket, Pair], None],
    ) -> None:
        """Wait for the pending sockets (fd -> socket, pair, event) until `timeout`, then
        read whatever is ready without waiting, until nothing more is: an answer that
        arrived while this process was not scheduled counts."""
        poller = select.poll()
        for fd, (_, _, event) in pending.items():
            poller.register(fd, event)
        # Only DNS and echoes are answered during a phase: accepting (and resetting) a TCP
        # connection before its client saw it complete would turn a success into a reset.
        served = {s.fileno() for s in (*self._dns, *self._echo)}
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
                    sock, pair, _ = pending.pop(fd)
                    poller.unregister(fd)
                    on_ready(sock, pair)
            if left <= 0 and not ready:
                break
        self._serve({s.fileno() for s in self._tcp})

    def close(self) -> None:
        for sock in (*self._tcp, *self._dns, *self._echo):
            sock.close()
        self._tcp, self._dns, self._echo = [], [], []
        self.topology.close()


def _by_source(items: Sequence[Any]) -> dict[str, list[Any]]:
    """Pairs (or (pair, address) tuples) grouped by source pod, in order."""
    out: dict[str, list[Any]] = {}
    for item in items:
        pair = item[0] if isinstance(item, tuple) else item
        out.setdefault(pair.source, []).append(item)
    return out
