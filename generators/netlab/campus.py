"""The campus family: core, distribution pairs (L3 switches), access switches with VLANs.

Shape: C cores core<i> (2 up to 12 routers, then 2-4; a ring when 3 or more) and D
distribution blocks, each a pair dist<b>a / dist<b>b, so N = C + 2D. Both routers of a
block uplink to two cores (area 0) and to each other (area 0.0.0.<b>: normal, stub or
NSSA, seeded): they are the block's ABRs. Each block has 1-2 access switches acc<i> (L2
only), each carrying 2-3 VLANs of its own (1-3 hosts each; 1-2 in large and xlarge
labs, which have many VLANs); every VLAN lives on one access switch, with a
trunk member to each router of its block, whose bridge v<vid> holds the SVI (.2 on
dist<b>a, the hosts' gateway; .3 on dist<b>b), passive in the block's area. VLAN ids
are 10 x (the switch's number) + j, so acc3 carries VLANs 30, 31, (32); the VLAN's
subnet is 10.<b>.<vid>.0/24. The server LAN (srv1) hangs off core1: 10.0.250.0/24.
"""

from __future__ import annotations

import random

from generators.netlab.builder import Builder, host_counts

MAX_SWITCHES = 24  # VLAN ids 10 x i + j stay below 255


def _cores(rng: random.Random, n: int) -> int:
    options = [c for c in (2, 3, 4) if (n - c) % 2 == 0 and n - c >= 2]
    if n <= 12 and 2 in options:
        return 2
    if n <= 12:
        return min(options)
    return rng.choice(options)


def campus(b: Builder, rng: random.Random, n: int) -> None:
    cores = _cores(rng, n)
    blocks = (n - cores) // 2
    core = [b.router(f"core{i}", "core", group="core") for i in range(1, cores + 1)]
    for i in range(cores if cores > 2 else 1):
        b.link(core[i], core[(i + 1) % cores], cost=10)
    per_block = 1 if blocks > MAX_SWITCHES // 2 else None
    vlans = []  # (block, switch, vid)
    switch_no = 0
    for blk in range(1, blocks + 1):
        area = f"0.0.0.{blk}"
        b.areas[area] = rng.choice(("normal", "stub", "nssa"))
        pair = tuple(b.router(f"dist{blk}{s}", "dist", group=f"block {blk}") for s in "ab")
        ups = [core[(blk - 1) % cores], core[blk % cores]]
        for dist in pair:
            for up in ups:
                b.link(dist, up, cost=rng.choice((10, 20)))
        b.link(pair[0], pair[1], cost=10, area=area)
        for _ in range(per_block or rng.randint(1, 2)):
            switch_no += 1
            sw = b.switch(f"acc{switch_no}", blk)
            for j in range(rng.randint(2, 3)):
                vlans.append((blk, sw, 10 * switch_no + j, pair, area))
    counts = host_counts(rng, b.size, len(vlans), 1, 2 if b.size in ("large", "xlarge") else 3)
    for (blk, sw, vid, pair, area), hosts in zip(vlans, counts, strict=True):
        b.vlan(vid, blk, sw, pair, hosts, area)
    b.servers(core[0], 0)
