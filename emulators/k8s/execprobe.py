"""The one program an agent may run in a pod: a connection probe, answered by the data plane.

    kubectl exec [-n NAMESPACE] POD [-c CONTAINER] [-q] -- probe HOST:PORT[/tcp|/udp]

POD is a pod's name (or `pod/NAME`, `deploy/NAME`, `deployment/NAME`: the deployment's
pod); HOST a DNS name, looked up as the pod's resolver would (its search list:
`<namespace>.svc.cluster.local`, `svc.cluster.local`, `cluster.local`, then the name
itself), or an IPv4 address. Pods run no process an agent could reach: the cluster
answers this form itself by sending the lookup and the connection from inside the pod's
network namespace with real packets (emulators/k8s/dataplane.py: `DataPlane.probe_flow`),
so every policy, Service translation and missing listener acts on it as on any other
traffic. Anything else after `--` is refused with the form above: there is no shell.

The argv is read by flags.read as kubectl reads it (pflag's rules, `--` ends the flags);
this module checks what the words mean. Only clusters built with `exec_probe` accept it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from emulators.k8s.flags import Parsed, Refused

FORM = "kubectl exec [-n NAMESPACE] POD -- probe HOST:PORT[/tcp|/udp]"
MAX_HOST = 253
_NAME = re.compile(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\.?$"
)
_POD = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_TARGET = re.compile(r"^(?P<host>[^:/\s]+):(?P<port>[0-9]{1,5})(?:/(?P<proto>[A-Za-z]+))?$")
_IPV4 = re.compile(
    r"^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$"
)
_WORKLOAD_KINDS = {"pod": "pod", "pods": "pod", "po": "pod", "deploy": "deployment",
                   "deployment": "deployment", "deployments": "deployment"}  # fmt: skip


@dataclass(frozen=True)
class ProbeRequest:
    """A checked probe: from `pod` (a name, or a deployment's when `kind` says so) in
    `namespace` (None: the context's), to `host` (`is_ip`: an address) on port/protocol."""

    kind: str  # "pod" or "deployment"
    name: str
    namespace: str | None
    container: str | None
    host: str
    is_ip: bool
    port: int
    protocol: str  # "TCP" or "UDP"

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}/{self.protocol.lower()}"


def request(parsed: Parsed) -> ProbeRequest:
    """The probe `kubectl exec` asks for (flags already read and allowed); raises Refused
    naming what is wrong and the form that works."""
    if parsed.verb != "exec":
        raise Refused(f"not an exec command: kubectl {parsed.verb}")
    if parsed.dash is None:
        raise Refused(f"put `--` before the command, as kubectl requires: {FORM}")
    before, after = parsed.args[: parsed.dash], parsed.args[parsed.dash :]
    if len(before) != 1:
        raise Refused(f"name exactly one pod before `--`: {FORM}")
    kind, name = _workload(before[0])
    if not after or after[0] != "probe":
        shown = after[0][:40] if after else "nothing"
        raise Refused(
            f"the pods here run no shell or other program you can start ({shown!r} was "
            f"asked); the one command is a connection probe: {FORM}"
        )
    if len(after) != 2:
        raise Refused(f"probe takes one target, HOST:PORT[/tcp|/udp]: {FORM}")
    host, is_ip, port, protocol = target(after[1])
    values = dict(parsed.flags)
    namespace = values.get("namespace")
    if namespace is not None and not _POD.match(namespace):
        raise Refused(f"{namespace[:60]!r} is not a namespace name")
    container = values.get("container")
    if container is not None and not _POD.match(container):
        raise Refused(f"{container[:60]!r} is not a container name")
    return ProbeRequest(kind, name, namespace, container, host, is_ip, port, protocol)


def _workload(text: str) -> tuple[str, str]:
    kind, slash, name = text.partition("/")
    if not slash:
        kind, name = "pod", text
    elif kind.lower() not in _WORKLOAD_KINDS:
        raise Refused(f"exec runs in a pod or a deployment's pod, not in {kind[:30]!r}: {FORM}")
    if not _POD.match(name):
        raise Refused(f"{name[:60]!r} is not a pod or deployment name")
    return _WORKLOAD_KINDS.get(kind.lower(), "pod"), name


def target(text: str) -> tuple[str, bool, int, str]:
    """(host, is an address, port, protocol) of HOST:PORT[/tcp|/udp]; raises Refused."""
    m = _TARGET.match(text)
    if m is None or len(text) > MAX_HOST + 12:
        raise Refused(f"the target must be HOST:PORT or HOST:PORT/tcp|udp, not {text[:80]!r}")
    host, port, proto = m.group("host"), int(m.group("port")), (m.group("proto") or "tcp")
    if not 1 <= port <= 65535:
        raise Refused(f"port {port} is not between 1 and 65535")
    if proto.lower() not in ("tcp", "udp"):
        raise Refused(f"the probe speaks tcp or udp, not {proto[:10]!r}")
    if _IPV4.match(host):
        ipaddress.IPv4Address(host)  # the pattern admits only canonical dotted quads
        return host, True, port, proto.upper()
    numeric = re.fullmatch(r"[0-9.]+", host) is not None  # an address, but not a valid one
    if numeric or len(host) > MAX_HOST or not _NAME.match(host.lower()):
        raise Refused(f"{host[:80]!r} is neither an IPv4 address nor a DNS name")
    return host.lower().rstrip("."), False, port, proto.upper()


def candidates(host: str, namespace: str) -> list[str]:
    """The names a pod's resolver asks for `host` in order (ndots 5: every name here has
    fewer dots, so the search list comes first, then the name as it is)."""
    search = [f"{namespace}.svc.cluster.local", "svc.cluster.local", "cluster.local"]
    return [f"{host}.{domain}" for domain in search] + [host]


def report(
    source: str,
    namespace: str,
    req: ProbeRequest,
    looked_up: str | None,
    address: str | None,
    outcome: str,
) -> tuple[str, int]:
    """(what the probe prints, its exit code): 0 when the connection was made or the
    datagram answered, 1 otherwise, as kubectl relays a failed command's status."""
    lines = [f"probe {req.target} from pod {source} (namespace {namespace})"]
    if looked_up is not None:
        if address is None:
            lines.append(f"lookup {req.host}: {outcome}")
            lines.append("command terminated with exit code 1")
            return "\n".join(lines), 1
        lines.append(f"lookup {req.host}: {looked_up} has address {address}")
    proto = req.protocol.lower()
    lines.append(f"{proto} {address}:{req.port}: {outcome}")
    ok = outcome in ("connected", "answered")
    if not ok:
        lines.append("command terminated with exit code 1")
    return "\n".join(lines), 0 if ok else 1
