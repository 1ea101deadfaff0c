"""The addressing plan of generated labs (see generators/netlab/spec.py's docstring)."""

from __future__ import annotations

import ipaddress

LOOPBACKS = ipaddress.IPv4Network("10.255.0.0/24")
SINKHOLE = ipaddress.IPv4Network("10.255.255.0/24")  # kept free: a benign sinkhole's prefix
LINKS = ipaddress.IPv4Network("172.16.0.0/16")
LANS = ipaddress.IPv4Network("10.0.0.0/8")
SERVER_LAN = 250  # the third octet (and LAN id) of a site's server LAN
SERVER_HOST = 53  # srv1's last octet
FIRST_HOST = 11  # hosts are .11, .12, ...
GATEWAY, SVI_A, SVI_B, VIP = 1, 2, 3, 254


def loopback(index: int) -> str:
    """Router n's loopback (its router-id), without prefix length."""
    if not 1 <= index <= 254:
        raise ValueError(f"router index {index}: the loopback plan holds 1..254")
    return f"10.255.0.{index}"


def link_subnet(link_id: int) -> str:
    """The /30 of link `link_id`: 172.16.0.0/16 in /30s, 4 x id."""
    if not 1 <= link_id < 16384:
        raise ValueError(f"link id {link_id}: the link plan holds 1..16383")
    base = 4 * link_id
    return f"172.16.{base // 256}.{base % 256}/30"


def lan_subnet(site: int, n: int) -> str:
    """LAN n of a site: 10.<site>.<n>.0/24."""
    if not (0 <= site <= 254 and 1 <= n <= 254):
        raise ValueError(f"LAN 10.{site}.{n}.0/24 is outside the plan (site 0..254, n 1..254)")
    return f"10.{site}.{n}.0/24"


def in_lan(subnet: str, last: int, prefix: bool = False) -> str:
    """The address with last octet `last` in a /24 `subnet` (with /24 if `prefix`)."""
    a, b, c, _ = subnet.partition("/")[0].split(".")
    return f"{a}.{b}.{c}.{last}" + ("/24" if prefix else "")


def host_address(subnet: str, j: int) -> str:
    """The j-th host (1-based) of a LAN, with its prefix length."""
    return in_lan(subnet, FIRST_HOST + j - 1, prefix=True)
