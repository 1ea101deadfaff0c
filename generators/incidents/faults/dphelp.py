"""What the data-plane, L2 and services kinds share: where hosts route, and how a fault reads.

`gateway(spec, host)` is the router (and its interface) a host's traffic leaves through;
`host_lans` the LANs with hosts (not the server LAN); `single_area` the labs whose paths
generators/netlab/intents.py computes (one OSPF area, no BGP). `argv`, `evidence` and
`fault` build the catalogue's records (kinds.py) with this family's conventions: trusted
injections are argv run in the device's namespace (`how="argv"`), evidence patterns are
searched with Python's `re.search` over the command's whole output (so `(?m)` where a
line must match whole).
"""

from __future__ import annotations

import ipaddress
import random
import re
import shlex
from collections.abc import Sequence

from generators.incidents.edge import gateway_port
from generators.incidents.faults.kinds import Cause, Evidence, Fault, Injection, Taken
from generators.netlab.spec import Host, Lan, NetSpec

ALL = frozenset({"chain", "ring", "mesh", "leafspine", "campus", "isp"})
OSPF_ONLY = frozenset({"chain", "ring", "mesh", "campus"})  # where the internet edge can be


def host_lans(spec: NetSpec) -> list[Lan]:
    return [lan for lan in spec.lans if lan.kind == "hosts" and lan.hosts]


def gateway(spec: NetSpec, lan: Lan) -> tuple[str, str, str]:
    """(router, interface, address) of the LAN's gateway, as its hosts route."""
    return gateway_port(spec, lan.id)


def host(spec: NetSpec, name: str) -> Host:
    return spec.host(name)


def addr(address: str) -> str:
    return address.split("/")[0]


def single_area(spec: NetSpec) -> bool:
    return spec.ospf and not spec.bgp and {x.area for x in spec.adjacencies} <= {"0.0.0.0"}


def unused_address(subnet: str, used: Sequence[str], rng: random.Random) -> str:
    """An address of `subnet` that no device holds (from .200 up: hosts start at .11)."""
    net = ipaddress.IPv4Network(subnet)
    taken = {addr(a) for a in used}
    free = [str(net.network_address + i) for i in range(200, 250)]
    free = [a for a in free if a not in taken]
    return rng.choice(free)


def lan_addresses(spec: NetSpec, lan: Lan) -> list[str]:
    out = [a.address for a in lan.routers] + [spec.host(h).address for h in lan.hosts]
    out += [g.vip for g in spec.vrrp if g.lan == lan.id]
    return out


def pick(rng: random.Random, items: Sequence, what: str = "") -> object | None:
    return rng.choice(list(items)) if items else None


def argv(device: str, command: str) -> Injection:
    return Injection(device, "argv", tuple(shlex.split(command)))


def evidence(machine: str, command: str, text: str, *, line: bool = False) -> Evidence:
    """Evidence whose output contains `text` literally (a whole line when `line`)."""
    pattern = re.escape(text)
    return Evidence(machine, command, f"(?m)^\\s*{pattern}\\s*$" if line else pattern)


def fault(
    kind: str,
    device: str,
    component: str,
    *,
    placement: str,
    summary: str,
    inject: Sequence[Injection],
    fix: Sequence[tuple[str, str]],
    evidence: Sequence[Evidence],
    elements: Sequence[str],
    benign: bool = False,
) -> Fault:
    return Fault(
        kind=kind,
        cause=Cause(device, component, kind),
        placement=placement,
        summary=summary,
        inject=tuple(inject),
        fix=tuple(fix),
        evidence=tuple(evidence),
        elements=frozenset(elements),
        benign=benign,
    )


def free(taken: Taken, *elements: str) -> bool:
    return taken.free(*elements)
