"""NetLab.state waits for the stated ECMP next hops and paths, not only a route to every
LAN: OSPF installs a prefix's first next hop before SPF finds its equal-cost twin, and a
test reading the FIB right after convergence once saw one next hop of two."""

from __future__ import annotations

import ipaddress

from generators.netlab import FAMILIES, build
from generators.netlab.live import _intents_pending, kernel_devices

MULTIPATH = """\
10.0.1.0/24 proto ospf metric 20
\tnexthop via 10.255.0.1 dev r1-eth1 weight 1
\tnexthop via 10.255.0.5 dev r1-eth2 weight 1
10.0.2.0/24 via 10.255.0.1 dev r1-eth1 proto ospf metric 20
10.0.3.0/24 dev r1-eth0 proto kernel scope link src 10.0.3.1
"""


def test_a_multipath_route_lists_every_next_hops_device():
    assert kernel_devices(MULTIPATH) == {
        "10.0.1.0/24": ["r1-eth1", "r1-eth2"],
        "10.0.2.0/24": ["r1-eth1"],
        "10.0.3.0/24": ["r1-eth0"],
    }


def _intended(spec) -> dict[str, dict[str, list[str]]]:
    """Kernel routes as a converged lab of `spec` shows them, where its intents speak."""
    tables: dict[str, dict[str, list[str]]] = {r.name: {} for r in spec.routers}
    for e in spec.ecmp:
        tables[e.router][e.prefix] = sorted(e.via)
    for p in spec.paths:
        prefix = str(ipaddress.ip_interface(spec.host(p.target).address).network)
        for router, link in zip(p.routers[:-1], p.links, strict=True):
            tables[router].setdefault(prefix, []).append(spec.link(link).end(router)[0])
    return tables


def test_an_ecmp_twin_or_a_path_hop_not_yet_installed_is_pending():
    specs = [build(f, "medium", 0) for f in FAMILIES]
    with_ecmp = [s for s in specs if s.ecmp]
    with_paths = [s for s in specs if s.paths]
    assert with_ecmp and with_paths
    for spec in specs:
        assert _intents_pending(spec, _intended(spec)) == [], spec.name
    spec = with_ecmp[0]
    e = spec.ecmp[0]
    tables = _intended(spec)
    tables[e.router][e.prefix] = sorted(e.via)[:1]  # the first next hop only
    [pending] = _intents_pending(spec, tables)
    assert pending.startswith(f"{e.router} {e.prefix} via ") and "intended" in pending
    spec = with_paths[0]
    p = spec.paths[0]
    tables = _intended(spec)
    prefix = str(ipaddress.ip_interface(spec.host(p.target).address).network)
    tables[p.routers[0]][prefix] = ["elsewhere"]
    assert [x for x in _intents_pending(spec, tables) if x.startswith(p.routers[0])]
