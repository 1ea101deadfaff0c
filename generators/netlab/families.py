"""The families chain, ring, mesh and leafspine (campus.py and isp.py hold the other two).

Each fills a Builder from the lab's own stream (catalogue.py: `build`). Structural options
alternate with the variant so that any 4 consecutive variants hold each of them:

  chain      r1..rN. Even variants: one OSPF area 0. Odd: two ASes (65001 | 65002), OSPF
             inside each, eBGP between the borders, which announce their AS's LANs and
             redistribute BGP into OSPF (routing level 5's shape, any length).
  ring       r1..rN in a cycle; mesh adds ceil(N/3) seeded chords. Seeded costs, one BACKUP
             link (cost 1000 by design). Variants 2, 3 (mod 4): two OSPF areas (area 1 an
             arc of the ring, normal, stub or NSSA); odd variants: a SPARE link kept down.
  leafspine  S = max(2, N // 6) spines sp<i> (AS 65000) and N - S leaves lf<i> (AS
             65100 + i), every leaf to every spine, eBGP per RFC 7938 on the link
             addresses, ECMP over every spine; a rack LAN per leaf.
  campus     campus.py; isp: isp.py.
Every family has a server LAN (10.<site>.250.0/24, srv1 .53: the DNS/DHCP place) on a
seeded router; xlarge labs have >= 48 hosts.
"""

from __future__ import annotations

import random

from generators.netlab import addressing as ip
from generators.netlab.builder import Builder, host_counts

SITES = {"chain": 1, "ring": 2, "mesh": 3, "leafspine": 4}  # the second octet of their LANs
SPINE_AS, LEAF_AS = 65000, 65100
CHAIN_AS = (65001, 65002)


def chain(b: Builder, rng: random.Random, n: int) -> None:
    names = [b.router(f"r{i}", "router") for i in range(1, n + 1)]
    if b.variant % 2 == 1:
        split = rng.randint(2, n - 2) if n >= 4 else 1
        groups = (names[:split], names[split:])
        for asn, members in zip(CHAIN_AS, groups, strict=True):
            for r in members:
                b._by_name[r].group = f"AS {asn}"
        for asn, border in zip(CHAIN_AS, (names[split - 1], names[split]), strict=True):
            router = b._by_name[border]
            router.role, router.asn = "border", asn
            router.daemons = ("zebra", "ospfd", "bgpd")
            b.redistribute(border, "bgp")
    for i in range(n - 1):
        crosses = b._by_name[names[i]].group != b._by_name[names[i + 1]].group
        b.link(names[i], names[i + 1], area=None if crosses else "0.0.0.0")
    counts = host_counts(rng, b.size, n)
    for i, (r, hosts) in enumerate(zip(names, counts, strict=True), 1):
        b.lan(i, ip.lan_subnet(SITES["chain"], i), [r], hosts)
        group = b._by_name[r].group
        for border in names:
            if b._by_name[border].asn and b._by_name[border].group == group and group:
                b.announce(border, ip.lan_subnet(SITES["chain"], i))
    server = rng.choice(names)
    b.servers(server, SITES["chain"])
    for border in names:
        router = b._by_name[border]
        if router.asn and router.group == b._by_name[server].group:
            b.announce(border, ip.lan_subnet(SITES["chain"], ip.SERVER_LAN))


def ring(b: Builder, rng: random.Random, n: int) -> None:
    site = SITES[b.family]
    names = [b.router(f"r{i}", "router") for i in range(1, n + 1)]
    two_areas = b.variant % 4 in (2, 3)
    home = dict.fromkeys(names, "0.0.0.0")
    if two_areas:
        length = rng.randint(2, n - 2)
        start = rng.randrange(n)
        for k in range(length):
            home[names[(start + k) % n]] = "0.0.0.1"
        b.areas["0.0.0.1"] = rng.choice(("normal", "stub", "nssa"))
    edges = [(names[i], names[(i + 1) % n]) for i in range(n)]
    if b.family == "mesh":
        have = {frozenset(e) for e in edges}
        want = -(-n // 3)
        while len(edges) < n + want:
            a, c = sorted(rng.sample(names, 2), key=names.index)
            if frozenset((a, c)) not in have:
                have.add(frozenset((a, c)))
                edges.append((a, c))
    costs = (10, 20) if b.family == "mesh" else (10, 20, 30)
    backup = rng.randrange(len(edges))
    for k, (a, c) in enumerate(edges):
        area = "0.0.0.1" if home[a] == home[c] == "0.0.0.1" else "0.0.0.0"
        role = "backup" if k == backup else "primary"
        b.link(a, c, cost=rng.choice(costs), area=area, role=role)
    for r in names:
        areas = {x.area for x in b._links if r in (x.a, x.b)}
        if len(areas) > 1:
            b._by_name[r].role = "abr"
    if b.variant % 2 == 1 and n >= 4:
        linked = {frozenset(e) for e in edges}
        spares = [
            (a, c)
            for i, a in enumerate(names)
            for c in names[i + 1 :]
            if frozenset((a, c)) not in linked
        ]
        if spares:
            a, c = rng.choice(spares)
            b.link(a, c, area=None, role="spare")
    counts = host_counts(rng, b.size, n)
    for i, (r, hosts) in enumerate(zip(names, counts, strict=True), 1):
        b.lan(i, ip.lan_subnet(site, i), [r], hosts, area=home[r])
    b.servers(rng.choice(names), site)


def leafspine(b: Builder, rng: random.Random, n: int) -> None:
    site = SITES["leafspine"]
    spines = max(2, n // 6)
    sp = [b.router(f"sp{i}", "spine", asn=SPINE_AS, ospf=False) for i in range(1, spines + 1)]
    leaves = [
        b.router(f"lf{i}", "leaf", asn=LEAF_AS + i, ospf=False) for i in range(1, n - spines + 1)
    ]
    for leaf in leaves:
        for spine in sp:
            b.link(spine, leaf, area=None)
    counts = host_counts(rng, b.size, len(leaves), 2, 3)
    for i, (leaf, hosts) in enumerate(zip(leaves, counts, strict=True), 1):
        b.lan(i, ip.lan_subnet(site, i), [leaf], hosts, area=None)
        b.announce(leaf, ip.lan_subnet(site, i))
    service = rng.choice(leaves)
    b._by_name[service].role = "border"
    b.servers(service, site)
    b.announce(service, ip.lan_subnet(site, ip.SERVER_LAN))
    b.ecmp_width = spines
