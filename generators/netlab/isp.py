"""The isp family: provider ASes (OSPF + iBGP to a route reflector) and customer ASes.

Shape: P providers (small 1, medium 2, larger 3), AS 65000 + a, routers p<a>r1..p<a>r<m>
in a ring (a single link when m = 2), OSPF area 0 inside with their loopbacks; p<a>r1 is
the AS's route reflector and every other router its client over loopbacks (update-source
lo, next-hop-self both ways). Providers peer eBGP in a chain a - a+1 over their ASBRs
(odd variants of 3 providers close the triangle). Customers: CE routers ce<i> with their
own AS (64512 + customer) announcing their LAN, single-homed to a PE or dual-homed to two
PEs of the same provider; from 3 customers on, one customer has two sites (two CEs in one
AS, each accepting its own AS once: `allowas-in 1`). Provider routers other than the RR
carry a provider LAN 10.<a>.<i>.0/24 (LAN id 10 a + i, in OSPF and announced in BGP);
customer i's LAN is 10.<100 + customer>.<site>.0/24 (LAN id 100 + i).
"""

from __future__ import annotations

import random

from generators.netlab import addressing as ip
from generators.netlab.builder import Builder, host_counts

PROVIDER_AS, CUSTOMER_AS = 65000, 64512
PROVIDERS = {"small": 1, "medium": 2, "large": 3, "xlarge": 3}
MAX_PER_PROVIDER = 9  # LAN ids 10 a + i stay unique


def _split(rng: random.Random, n: int, providers: int) -> tuple[list[int], int]:
    """(routers per provider, customer edges): about a third customers, every provider
    2..9 routers, at least 2 customers."""
    customers = max(2, n // 3 + rng.choice((-1, 0, 1)))
    customers = min(customers, n - 2 * providers)
    while (n - customers) > MAX_PER_PROVIDER * providers:
        customers += 1
    inside = n - customers
    sizes = [inside // providers + (1 if a < inside % providers else 0) for a in range(providers)]
    return sizes, customers


def isp(b: Builder, rng: random.Random, n: int) -> None:
    providers = PROVIDERS[b.size]
    sizes, customers = _split(rng, n, providers)
    groups: list[list[str]] = []
    for a, m in enumerate(sizes, 1):
        asn = PROVIDER_AS + a
        members = [
            b.router(f"p{a}r{i}", "rr" if i == 1 else "p", asn=asn, group=f"AS {asn}")
            for i in range(1, m + 1)
        ]
        groups.append(members)
        for i in range(m if m > 2 else 1):
            b.link(members[i], members[(i + 1) % m], cost=rng.choice((10, 20)))
        for client in members[1:]:
            b.ibgp(members[0], client)
            b.next_hop_self(members[0], client)
            b.next_hop_self(client, members[0])
    edge = [g[1:] or g for g in groups]  # where eBGP may land: not on the RR when possible
    pairs = [(a, a + 1) for a in range(providers - 1)]
    if providers == 3 and b.variant % 2 == 1:
        pairs.append((0, 2))
    for x, y in pairs:
        left, right = rng.choice(edge[x]), rng.choice(edge[y])
        b.link(left, right, area=None)
        for r in (left, right):
            b._by_name[r].role = "asbr"
    ces = []
    multi = rng.randrange(customers - 1) if customers >= 3 else None
    customer = 0
    for i in range(1, customers + 1):
        if multi is None or i != multi + 2:
            customer += 1
        asn = CUSTOMER_AS + customer
        ce = b.router(f"ce{i}", "ce", asn=asn, group=f"customer {customer}", ospf=False)
        site = 2 if multi is not None and i == multi + 2 else 1
        ces.append((ce, customer, site))
        a = rng.randrange(providers)
        homes = (
            rng.sample(edge[a], 2)
            if len(edge[a]) >= 2 and rng.random() < 0.35
            else [rng.choice(edge[a])]
        )
        for pe in homes:
            b.link(pe, ce, area=None)
            if b._by_name[pe].role == "p":
                b._by_name[pe].role = "pe"
            if multi is not None and i in (multi + 1, multi + 2):
                b.allowas_in(ce, pe)
    provider_lans = [
        (a, i, r)
        for a, g in enumerate(groups, 1)
        for i, r in enumerate(g, 1)
        if i > 1 or len(g) == 1
    ]
    counts = host_counts(rng, b.size, len(provider_lans) + len(ces))
    for (a, i, r), hosts in zip(provider_lans, counts, strict=False):
        subnet = ip.lan_subnet(a, i)
        b.lan(10 * a + i, subnet, [r], hosts)
        b.announce(r, subnet)
    for (ce, cust, site), hosts in zip(ces, counts[len(provider_lans) :], strict=True):
        subnet = ip.lan_subnet(100 + cust, site)
        b.lan(100 + int(ce[2:]), subnet, [ce], hosts, area=None)
        b.announce(ce, subnet)
    server = rng.choice(edge[0])
    b.servers(server, 1)
    b.announce(server, ip.lan_subnet(1, ip.SERVER_LAN))
