"""verdict.lookup, the longest-prefix match every path walk and large-probe choice makes,
against a plain reference (parsing each prefix anew) on seeded random tables: the cached
prefix parse (verdict._network) must not change a single answer."""

from __future__ import annotations

import ipaddress
import random

from generators.incidents.verdict import lookup, prefix_of


def _reference(routes, address):
    target, best = ipaddress.IPv4Address(address), None
    for route in routes:
        if "table" in route or route.get("type", "unicast") not in ("unicast", "blackhole"):
            continue
        try:
            net = ipaddress.IPv4Network(prefix_of(route.get("dst")), strict=False)
        except ValueError:
            continue
        if target in net:
            rank = (net.prefixlen, -int(route.get("metric", 0) or 0))
            if best is None or rank > best[:2]:
                best = (*rank, route)
    return best[2] if best else None


def _route(rng: random.Random, i: int) -> dict:
    length = rng.choice([0, 8, 16, 24, 24, 30, 32])
    dst = "default" if length == 0 else f"10.{rng.randrange(4)}.{rng.randrange(4)}.{i % 8}"
    if length not in (0, 32):
        dst += f"/{length}"
    route = {"dst": rng.choice([dst, dst, "not-a-prefix", "fe80::/64"]), "metric": rng.randrange(3)}
    route["type"] = rng.choice(["unicast", "unicast", "blackhole", "local"])
    if rng.random() < 0.1:
        route["table"] = "local"
    return route


def test_lookup_matches_the_plain_reference_on_random_tables() -> None:
    rng = random.Random(29)
    checked = matched = 0
    for _ in range(300):
        routes = [_route(rng, i) for i in range(rng.randrange(1, 40))]
        for _ in range(10):
            address = f"10.{rng.randrange(4)}.{rng.randrange(4)}.{rng.randrange(8)}"
            want = _reference(routes, address)
            assert lookup(routes, address) is want
            checked += 1
            matched += want is not None
    # the tables exercise both outcomes (a match and no route at all)
    assert checked == 3000
    assert 300 < matched < checked
