"""The network state of one device: dumped in one run, parsed and compared.

Backend-neutral: NamespaceEmulator (namespaced.py) runs these scripts in a device's
network namespace, whatever runs it, and state_restore.py writes the script that turns
a state back into the healthy one. A dump is one line of shell (`dump_script`); it is
parsed into sections, which together hold every kind of state an allowed command can
change (emulators/netcmd/effects.py names them; COVERS says which section holds each):

  link      per interface: admin state, MTU, MAC, the ARP, promiscuous, multicast and
            allmulticast flags, txqueuelen, alias, master (ip link set, ifconfig);
  addr      IPv4 addresses with every attribute ip and ifconfig set: prefix, peer,
            broadcast, anycast, scope, label (ifconfig's `eth0:1`), metric, flags
            (deprecated, noprefixroute, ...) and whether the lifetime is finite (the
            seconds left count down, so only forever or not is compared);
  addr6     IPv6 addresses, the same way (a device's IPv6 is off, but a sysctl turns it on);
  route     IPv4 routes of every table, with their metrics (ip route, route);
  route6    IPv6 routes of every table (ip route, route -6: unreachable, blackhole and
            prohibit routes need no IPv6 on any interface);
  rule      IPv4 policy rules;
  rule6     IPv6 policy rules;
  neigh     proxy neighbour entries of both families (ip neigh add proxy, arp -s ...
            pub): these survive a neighbour flush;
  qdisc     qdiscs, with their options;
  tcobj     the classes and filters of every qdisc that can hold them (a default qdisc
            cannot, so a lab without qdiscs of its own runs no tc for these);
  iptables  every non-empty table, counters dropped; `tables` lists every table that
            exists, empty or not (an empty nat table still hooks conntrack and NAT in);
  sysctl    every readable file under /proc/sys/net except the volatile ones.

Other neighbour entries (permanent and noarp ones included, of both families) and the
route cache are not compared: `FLUSH_SCRIPT` empties them on every device at each reset.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pipeline.core import canonical_json

# Files that change on their own (counters, per-boot secrets, conntrack statistics).
VOLATILE = "nf_conntrack_count|stable_secret|/net/core/netdev_rss_key|/tcp_fastopen_key"
# Qdiscs that hold neither classes nor filters: the defaults, and the plain fifos.
_LEAF_QDISCS = "noqueue|pfifo_fast|pfifo|bfifo|noop|mq"
# For every other qdisc of the dump: "@q KIND DEV HANDLE", then its classes and filters
# (its own block; an ingress or clsact qdisc's ingress and egress blocks) as tc prints
# them (tc 6.1 prints classes as text even with -j). Bash's own regex walks the qdisc
# JSON, so a device with default qdiscs only starts no tc.
_TC_OBJECTS = (
    "t=$q; "
    r"while [[ $t =~ \"kind\":\"([a-z_]+)\",\"handle\":\"([^\"]*)\",\"dev\":\"([^\"]+)\" ]]; "
    "do k=${BASH_REMATCH[1]} h=${BASH_REMATCH[2]} d=${BASH_REMATCH[3]}; "
    't=${t#*"${BASH_REMATCH[0]}"}; '
    f"case $k in {_LEAF_QDISCS}) ;; "
    'ingress|clsact) echo "@q $k $d $h"; tc filter show dev "$d" ingress; '
    '[ $k = clsact ] && tc filter show dev "$d" egress;; '
    '*) echo "@q $k $d $h"; tc class show dev "$d" parent "$h"; '
    'tc filter show dev "$d" parent "$h";; esac; done'
)
# One `ip` prints the links (`ip addr` leaves out their alias) and the addresses of both
# families, one `ip` per family the routes of every table and the policy rules: each
# command of a batch is one JSON list on a line of its own.
_DUMP = [
    "echo @@addr",
    "ip -j -batch - <<< $'link show\\naddr show'",
    "echo @@v4",
    "ip -4 -j -batch - <<< $'route show table all\\nrule show'",
    "echo @@v6",
    "ip -6 -j -batch - <<< $'route show table all\\nrule show'",
    "echo @@neigh",
    "ip -j neigh show proxy",
    "echo @@qdisc",
    "q=$(tc -j qdisc show)",
    "printf '%s\\n' \"$q\"",
    "echo @@tcobj",
    _TC_OBJECTS,
    "echo @@iptables",
    "iptables-save 2>/dev/null",
    # The ~2,000 sysctl lines travel only when their digest differs from the healthy one.
    f"s=$(grep -r . /proc/sys/net 2>/dev/null | grep -Ev '{VOLATILE}')",
    'h=$(printf %s "$s" | md5sum)',
    'echo "@@sysctl ${h%% *}"',
    '[ "${h%% *}" = "{digest}" ] || printf "%s\\n" "$s"',
]


def dump_script(digest: str = "") -> str:
    """The one-line state dump; sysctl values are left out if their digest is `digest`."""
    return "; ".join(_DUMP).replace("{digest}", digest)


# One `ip` for all (a here-string, so no extra fork), both families: neighbours (`nud
# all` leaves the noarp ones, so they are flushed by name), then the route cache.
FLUSH_SCRIPT = (
    "ip -force -batch - <<< $'neigh flush all nud all\\nneigh flush nud noarp\\n"
    "route flush cache' 2>/dev/null"
)
SECTIONS = ("addr", "v4", "v6", "neigh", "qdisc", "tcobj", "iptables", "sysctl")
COMPARED = ("link", "addr", "addr6", "route", "route6", "rule", "rule6", "neigh", "qdisc",
            "tcobj", "iptables", "tables", "sysctl")  # fmt: skip
# The per-family sections, by iproute2's family option.
FAMILY_SECTIONS = {
    "4": {"addr": "addr", "route": "route", "rule": "rule"},
    "6": {"addr": "addr6", "route": "route6", "rule": "rule6"},
}
# Which compared section (or the flush) holds each kind of state a command may change
# (emulators/netcmd/effects.py: allowed()); the reset contract test checks it is all.
FLUSHED = "flushed at every reset"
COVERS = {
    ("address", "inet"): "addr", ("address", "inet6"): "addr6",
    ("route", "inet"): "route", ("route", "inet6"): "route6",
    ("rule", "inet"): "rule", ("rule", "inet6"): "rule6",
    ("neighbour", "inet"): FLUSHED, ("neighbour", "inet6"): FLUSHED,
    ("proxy neighbour", "inet"): "neigh", ("proxy neighbour", "inet6"): "neigh",
    ("link", ""): "link", ("qdisc", ""): "qdisc", ("tc class", ""): "tcobj",
    ("tc filter", ""): "tcobj", ("sysctl", ""): "sysctl",
}  # fmt: skip
FOREVER = 0xFFFFFFFF
# addr_info keys that are not configuration: the family, the order of addition, and the
# lifetimes' seconds left (kept as forever / finite under "lifetime").
_ADDR_DERIVED = {"family", "secondary", "valid_life_time", "preferred_life_time"}
BUILTIN_CHAINS = {
    "filter": ("INPUT", "FORWARD", "OUTPUT"),
    "nat": ("PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"),
    "mangle": ("PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"),
    "raw": ("PREROUTING", "OUTPUT"),
    "security": ("INPUT", "FORWARD", "OUTPUT"),
}
COVERS.update({(f"iptables {table}", "inet"): "iptables" for table in BUILTIN_CHAINS})
_COUNTERS = re.compile(r"\s*\[\d+:\d+\]")

State = dict[str, Any]


def parse_dump(text: str, healthy: State | None = None) -> State:
    """Sections of a dump, normalised so equal states compare equal. A dump that left the
    sysctl values out (same digest as `healthy`) gets the healthy values."""
    raw: dict[str, list[str]] = {}
    current = None
    digest = ""
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith("@@sysctl"):
            current, digest = "sysctl", line.partition(" ")[2].strip()
            raw[current] = []
        elif line.startswith("@@") and line[2:] in SECTIONS:
            current = line[2:]
            raw[current] = []
        elif current is not None:
            raw[current].append(line)
    missing = [s for s in SECTIONS if s not in raw]
    if missing:
        raise ValueError(f"the state dump lacks the sections {missing}")
    js = {s: json.loads("\n".join(raw[s]).strip() or "[]") for s in ("neigh", "qdisc")}
    links, addrs = _lists(raw["addr"], "link and address")
    v4, v6 = _lists(raw["v4"], "IPv4"), _lists(raw["v6"], "IPv6")
    return {
        "link": {i["ifname"]: _link(i) for i in links},
        "addr": _addresses(addrs, "inet"),
        "addr6": _addresses(addrs, "inet6"),
        "route": sorted(canonical_json(_route(r)) for r in v4[0]),
        "route6": sorted(canonical_json(_route(r)) for r in v6[0]),
        "rule": sorted(canonical_json(r) for r in v4[1]),
        "rule6": sorted(canonical_json(r) for r in v6[1]),
        "neigh": sorted(
            canonical_json({"dst": n["dst"], "dev": n.get("dev")}) for n in js["neigh"]
        ),
        "qdisc": sorted(
            canonical_json({k: v for k, v in q.items() if k not in ("refcnt",)})
            for q in js["qdisc"]
        ),
        "tcobj": _tc_objects(raw["tcobj"]),
        "iptables": _parse_iptables(raw["iptables"]),
        "tables": sorted(line.strip()[1:] for line in raw["iptables"] if line.startswith("*")),
        "sysctl": (
            healthy["sysctl"]
            if healthy is not None and digest == healthy["sysctl_digest"]
            else _parse_sysctl(raw["sysctl"])
        ),
        "sysctl_digest": digest,
    }


def _lists(lines: list[str], what: str) -> list[list[dict[str, Any]]]:
    """The two JSON lists an `ip -batch` of two commands printed."""
    found = [json.loads(line) for line in lines if line.strip()]
    if len(found) != 2:
        raise ValueError(f"the state dump's {what} section holds {len(found)} lists, not 2")
    return found


def _addresses(links: list[dict[str, Any]], family: str) -> dict[str, list[str]]:
    return {
        i["ifname"]: sorted(
            canonical_json(_address(a)) for a in i.get("addr_info", []) if a.get("family") == family
        )
        for i in links
    }


def _tc_objects(lines: list[str]) -> list[str]:
    """Each line tc prints of a class or filter, after the qdisc it hangs off."""
    out, owner = [], ""
    for line in lines:
        if line.startswith("@q "):
            owner = line[3:].strip()
        elif line.strip():
            out.append(f"{owner}: {line.strip()}")
    return sorted(out)


def _link(info: dict[str, Any]) -> dict[str, Any]:
    flags = info.get("flags", [])
    return {
        "up": "UP" in flags,
        "mtu": info.get("mtu"),
        "address": info.get("address"),
        "noarp": "NOARP" in flags,
        "promisc": "PROMISC" in flags,
        "multicast": "MULTICAST" in flags,
        "allmulti": "ALLMULTI" in flags,
        "txqlen": info.get("txqlen"),
        "alias": info.get("ifalias"),
        "master": info.get("master"),
    }


def _address(info: dict[str, Any]) -> dict[str, Any]:
    """An address's configuration: every attribute but those in _ADDR_DERIVED, the peer
    only when it differs from the local address, and whether it lives forever."""
    out = {k: v for k, v in info.items() if k not in _ADDR_DERIVED}
    if out.get("address") == out.get("local"):
        out.pop("address")
    out.setdefault("scope", "global")
    out["lifetime"] = "forever" if info.get("valid_life_time", FOREVER) == FOREVER else "finite"
    return out


def _route(route: dict[str, Any]) -> dict[str, Any]:
    """A route without `linkdown`: carrier state, which the kernel updates a moment after
    an interface comes up, is not configuration."""
    flags = [f for f in route.get("flags", []) if f != "linkdown"]
    return {**route, "flags": flags}


def _parse_iptables(lines: list[str]) -> dict[str, list[str]]:
    tables: dict[str, list[str]] = {}
    table = None
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("*"):
            table = line[1:]
            tables[table] = []
        elif line != "COMMIT" and table is not None:
            tables[table].append(_COUNTERS.sub("", line))
    return {t: body for t, body in tables.items() if not _empty_table(t, body)}


def _empty_table(table: str, body: list[str]) -> bool:
    builtin = set(BUILTIN_CHAINS.get(table, ()))
    return all(
        line.startswith(":") and line.split()[0][1:] in builtin and line.split()[1] == "ACCEPT"
        for line in body
    )


def _parse_sysctl(lines: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in lines:
        path, sep, value = line.partition(":")
        if not sep:
            continue
        values[path] = f"{values[path]}\n{value}" if path in values else value
    return values


def differences(healthy: State, current: State) -> list[str]:
    """Human-readable differences, at most a few per section; empty when equal."""
    out = []
    for section in COMPARED:
        want, got = healthy[section], current[section]
        if want == got:
            continue
        if isinstance(want, dict):
            keys = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
            out.extend(
                f"{section} {k}: {got.get(k)!r} (healthy: {want.get(k)!r})" for k in keys[:3]
            )
        else:
            extra, lost = sorted(set(got) - set(want)), sorted(set(want) - set(got))
            out.extend(f"{section} +{item}" for item in extra[:3])
            out.extend(f"{section} -{item}" for item in lost[:3])
    return out
