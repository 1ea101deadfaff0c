"""What a NetLLMBench lab must do once some of its tasks are done: flows that must work end
to end, derived from the completed tasks and the addressing plan, and probed after every
step (emulators/probe.py: the right device answers, from the right address).

Expected flows of a set of completed tasks, over each protocol of `probe.protocols`:

  - two ports on one switch whose addresses are both done reach each other (a host and
    its router, two hosts, the two routers on the transit switch);
  - two hosts on different switches reach each other once both have their address and
    gateway, the router ports on both switches have theirs, and, when different routers
    serve them, the transit ports along the chain between those routers and every
    route on the way (each router on the path to the target's subnet, and back to the
    source's) are done.

Every flow targets the planned address of the planned device, so a task faked on the
wrong device (the target's address as an alias on the source's loopback, a gateway via
`lo`, a `scope host` address) leaves a flow failing. `FlowKey` is the flow's storable form.
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Iterable, Sequence

from emulators.base import Emulator
from emulators.probe import Flow
from generators.netllmbench.lab import Network, Port
from generators.netllmbench.tasks import Task


def flow_key(flow: Flow) -> str:
    """`source>target@address/protocol`, the storable name of a flow."""
    return f"{flow.source}>{flow.target}@{flow.address}/{flow.protocol}"


def expected_flows(net: Network, done: Iterable[Task], protocols: Sequence[str]) -> list[Flow]:
    """The flows that must work once the tasks in `done` are complete; see the module
    docstring."""
    done = list(done)
    addressed = {(t.device, t.interface) for t in done if t.kind in ("host_ip", "router_ip")}
    gateways = {t.device for t in done if t.kind == "gateway"}
    routes = {(t.device, t.subnet) for t in done if t.kind == "route"}
    ports = [p for p in net.ports if (p.device, p.interface) in addressed]
    pairs: list[tuple[Port, Port]] = [
        (a, b) for a in ports for b in ports if a.device != b.device and a.switch == b.switch
    ]
    for a in net.hosts:
        for b in net.hosts:
            if a != b and _routed(net, a, b, addressed, gateways, routes):
                pairs.append((net.port(a), net.port(b)))
    return [Flow(a.device, b.device, b.ip, p) for p in protocols for a, b in pairs]


def _routed(
    net: Network,
    a: str,
    b: str,
    addressed: set[tuple[str, str]],
    gateways: set[str],
    routes: set[tuple[str, str]],
) -> bool:
    """Whether hosts a and b on different switches must reach each other."""
    pa, pb = net.port(a), net.port(b)
    if pa.switch == pb.switch or not {a, b} <= gateways:
        return False
    ra, rb = net.router_on(pa.switch), net.router_on(pb.switch)
    needed = [pa, pb, ra, rb]
    path = net.router_path(ra.device, rb.device)
    for here, there in itertools.pairwise(path):
        link = net.transit_between(here, there)
        needed += [p for p in net.ports if p.switch == link]
    there_and_back = [(r, _subnet(pb)) for r in path[:-1]] + [(r, _subnet(pa)) for r in path[1:]]
    if not set(there_and_back) <= routes:
        return False
    return all((p.device, p.interface) in addressed for p in needed)


def _subnet(port: Port) -> str:
    return str(ipaddress.ip_interface(port.address).network)


def probe(emu: Emulator, flows: Sequence[Flow]) -> dict[str, bool]:
    """flow_key -> whether it worked."""
    if not flows:
        return {}
    results = emu.probe(flows)
    return {flow_key(f): ok for f, ok in results.items()}
