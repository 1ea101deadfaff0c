"""`build(family, size, variant)`: one seeded NetSpec of the tier catalogue.

`build` is pure: its own stream `random.Random("netlab:<family>:<size>:<variant>")` (as
k8s's `callgraph.generated`) draws the router count within the size's range (unless
`routers` is given), then the family's shape (families.py, campus.py, isp.py), then the
benign-anomaly candidates; the result is checked against every invariant (checks.py).
"""

from __future__ import annotations

import random

from generators.netlab import addressing as ip
from generators.netlab.builder import Builder
from generators.netlab.campus import campus
from generators.netlab.checks import check
from generators.netlab.families import chain, leafspine, ring
from generators.netlab.isp import isp
from generators.netlab.spec import FAMILIES, SIZES, BenignSlot, NetSpec
from pipeline.api import ConfigError

DECOMMISSIONED_PEER = "172.16.255.254"  # in the link plan, never a link's (id 16383)
SHAPES = {"chain": chain, "ring": ring, "mesh": ring, "leafspine": leafspine, "campus": campus,
          "isp": isp}  # fmt: skip


def build(family: str, size: str, variant: int, routers: int | None = None) -> NetSpec:
    """The NetSpec of `family` at `size`, variant `variant` (>= 0); `routers` fixes the
    router count within the size's range (the bench's xlarge labs: 24)."""
    if family not in FAMILIES:
        raise ConfigError(f"netlab family {family!r}: choose one of {', '.join(FAMILIES)}")
    if size not in SIZES:
        raise ConfigError(f"netlab size {size!r}: choose one of {', '.join(SIZES)}")
    if not isinstance(variant, int) or variant < 0:
        raise ConfigError(f"netlab variant {variant!r}: a non-negative integer")
    low, high = SIZES[size]
    if routers is not None and not low <= routers <= high:
        raise ConfigError(f"netlab {size} labs have {low}..{high} routers, not {routers}")
    rng = random.Random(f"netlab:{family}:{size}:{variant}")
    n = rng.randint(low, high) if routers is None else routers
    name = f"{family}-{size}-{variant}" + ("" if routers is None else f"-n{routers}")
    b = Builder(family, size, variant, name)
    SHAPES[family](b, rng, n)
    candidates(b, rng)
    spec = b.finish()
    check(spec)
    return spec


def candidates(b: Builder, rng: random.Random) -> None:
    """Places where a query may add a benign anomaly as intended state (not built here)."""
    routers = [r.name for r in b._routers]
    bgp = [r.name for r in b._routers if r.asn]
    links = [x for x in b._links if x.role == "primary"]
    slots = [
        BenignSlot(
            "sinkhole",
            rng.choice(routers),
            f"route:{ip.SINKHOLE}",
            "sinkhole for retired addresses, by design",
        ),
        BenignSlot(
            "acl_telnet",
            rng.choice(routers),
            "iptables:filter:FORWARD",
            "telnet (TCP 23) denied by policy",
        ),
    ]
    if links:
        x = rng.choice(links)
        slots.append(
            BenignSlot(
                "mtu_clamp",
                x.a,
                f"link:{b._links.index(x) + 1}",
                "MTU 1400 with TCP MSS clamping, by design",
            )
        )
        # "link:<id>" becomes the link's interface on x.a once ports are named (finish)
    if bgp:
        slots.append(
            BenignSlot(
                "bgp_decommissioned",
                rng.choice(bgp),
                f"bgp:{DECOMMISSIONED_PEER}",
                "decommissioned peer, kept shut",
            )
        )
    b.benign.extend(slots)
