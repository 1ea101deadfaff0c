"""Device, interface and domain names of generated labs (scheme: generators/netlab/spec.py)."""

from __future__ import annotations

from emulators.base import DOMAIN_RE, IFNAME_RE, NAME_RE


def host(lan: int, j: int) -> str:
    return f"h{lan}_{j}"


def server(i: int) -> str:
    return f"srv{i}"


def eth(device: str, k: int) -> str:
    return f"{device}-eth{k}"


def trunk_member(device: str, k: int, vid: int) -> str:
    """The member of VLAN `vid` in `device`'s k-th trunk."""
    return f"{device}-t{k}v{vid}"


def bridge(vid: int) -> str:
    return f"v{vid}"


def link_domain(link_id: int) -> str:
    return f"t{link_id}"


def lan_domain(lan_id: int) -> str:
    return f"l{lan_id}"


def access_domain(k: int) -> str:
    return f"a{k}"


def trunk_domain(k: int) -> str:
    return f"k{k}"


def problems(devices: list[str], interfaces: list[str], domains: list[str]) -> list[str]:
    """The names that break emulators/base.py's rules (devices, interfaces <= 15, domains)."""
    bad = [f"device {d!r}" for d in devices if not NAME_RE.match(d)]
    bad += [f"interface {i!r}" for i in interfaces if not IFNAME_RE.match(i)]
    bad += [f"domain {d!r}" for d in domains if not DOMAIN_RE.match(d)]
    return bad
