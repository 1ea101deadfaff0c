"""The network state of one device: dumped in one run, compared, and restored by script.

Backend-neutral: NamespaceEmulator (namespaced.py) runs these scripts in a device's
network namespace, whatever runs it. A dump is one line of shell (`dump_script`); it is
parsed into sections, which together hold every attribute an allowed command
(emulators/netcmd/) can change:

  link      per interface: admin state, MTU, MAC, the ARP, promiscuous, multicast and
            allmulticast flags, txqueuelen, alias, master (ip link set, ifconfig);
  addr      IPv4 addresses with every attribute ip and ifconfig set: prefix, peer,
            broadcast, anycast, scope, label (ifconfig's `eth0:1`), metric, flags
            (deprecated, noprefixroute, ...) and whether the lifetime is finite (the
            seconds left count down, so only forever or not is compared);
  route     IPv4 routes of every table, with their metrics (ip route, route);
  rule      IPv4 policy rules;
  neigh     proxy neighbour entries (ip neigh add proxy, arp -s ... pub): these survive
            a neighbour flush;
  qdisc     qdiscs (filters and classes hang off a qdisc, and go with it);
  iptables  every non-empty table, counters dropped; `tables` lists every table that
            exists, empty or not (an empty nat table still hooks conntrack and NAT in);
  sysctl    every readable file under /proc/sys/net except the volatile ones.

Other neighbour entries and the route cache are not state: `FLUSH_SCRIPT` empties them on
every device at each reset.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from pipeline.core import canonical_json

# Files that change on their own (counters, per-boot secrets, conntrack statistics).
VOLATILE = "nf_conntrack_count|stable_secret|/net/core/netdev_rss_key|/tcp_fastopen_key"
_DUMP = [
    "echo @@link",
    "ip -j link show",
    "echo @@addr",
    "ip -j -4 addr show",
    "echo @@route",
    "ip -j -4 route show table all",
    "echo @@rule",
    "ip -j -4 rule show",
    "echo @@neigh",
    "ip -j -4 neigh show proxy",
    "echo @@qdisc",
    "tc -j qdisc show",
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


# One `ip` for both (a here-string, so no extra fork): neighbours, then the route cache.
FLUSH_SCRIPT = (
    "ip -4 -force -batch - <<< $'neigh flush all nud all\\nroute flush cache' 2>/dev/null"
)
SECTIONS = ("link", "addr", "route", "rule", "neigh", "qdisc", "iptables", "sysctl")
COMPARED = (*SECTIONS, "tables")
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
    js = {
        s: json.loads("\n".join(raw[s]).strip() or "[]")
        for s in ("link", "addr", "route", "rule", "neigh", "qdisc")
    }
    return {
        "link": {i["ifname"]: _link(i) for i in js["link"]},
        "addr": {
            i["ifname"]: sorted(
                canonical_json(_address(a))
                for a in i.get("addr_info", [])
                if a.get("family") == "inet"
            )
            for i in js["addr"]
        },
        "route": sorted(canonical_json(_route(r)) for r in js["route"]),
        "rule": sorted(canonical_json(r) for r in js["rule"]),
        "neigh": sorted(
            canonical_json({"dst": n["dst"], "dev": n.get("dev")}) for n in js["neigh"]
        ),
        "qdisc": sorted(
            canonical_json({k: v for k, v in q.items() if k not in ("refcnt",)})
            for q in js["qdisc"]
        ),
        "iptables": _parse_iptables(raw["iptables"]),
        "tables": sorted(line.strip()[1:] for line in raw["iptables"] if line.startswith("*")),
        "sysctl": (
            healthy["sysctl"]
            if healthy is not None and digest == healthy["sysctl_digest"]
            else _parse_sysctl(raw["sysctl"])
        ),
        "sysctl_digest": digest,
    }


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


def restore_script(healthy: State, current: State) -> str:
    """A bash command line that turns `current` back into `healthy` (empty when equal)."""
    cmds: list[str] = []
    if healthy["sysctl"] != current["sysctl"]:
        cmds += _restore_sysctl(healthy["sysctl"], current["sysctl"])
    for name, want in healthy["link"].items():
        if current["link"].get(name) != want:
            cmds.append(_link_cmd(name, want))
    addr_changed = False
    for name in sorted(healthy["addr"].keys() | current["addr"].keys()):
        want = healthy["addr"].get(name, [])
        if current["addr"].get(name, []) != want:
            addr_changed = True
            cmds.append(f"ip -4 addr flush dev {shlex.quote(name)}")
            cmds += [_addr_cmd(name, json.loads(a)) for a in want]
    if healthy["neigh"] != current["neigh"]:
        cmds.append("ip -4 neigh flush proxy")
        for entry in map(json.loads, healthy["neigh"]):
            cmds.append(
                shlex.join(["ip", "-4", "neigh", "add", "proxy", entry["dst"], "dev", entry["dev"]])
            )
    if addr_changed or healthy["route"] != current["route"]:
        cmds += _restore_routes(healthy["route"], current["route"])
    if healthy["rule"] != current["rule"]:
        cmds.append("ip -4 rule flush")
        for rule in map(json.loads, healthy["rule"]):
            if rule.get("priority") != 0:
                cmds.append(shlex.join(_rule_argv(rule)))
        if not any(json.loads(r).get("priority") == 0 for r in current["rule"]):
            cmds.append("ip -4 rule add pref 0 lookup local")
    if healthy["qdisc"] != current["qdisc"]:
        for dev in sorted(current["link"]):
            for kind in ("root", "ingress", "clsact"):
                cmds.append(f"tc qdisc del dev {shlex.quote(dev)} {kind}")
    if healthy["iptables"] != current["iptables"]:
        text = iptables_restore_text(healthy["iptables"], current["iptables"])
        cmds.append(f"printf %s {shlex.quote(text)} | iptables-restore")
    # iptables-nft empties a table but cannot delete it: nft does.
    extra = sorted(set(current["tables"]) - set(healthy["tables"]))
    cmds += [f"nft delete table ip {shlex.quote(t)}" for t in extra]
    return "; ".join(f"{c} 2>/dev/null" for c in cmds)


def _restore_sysctl(want: dict[str, str], got: dict[str, str]) -> list[str]:
    keys = [k for k in want if got.get(k) != want[k]]
    if any(k.endswith(("/ip_forward", "/forwarding")) for k in keys):
        # Writing forwarding also rewrites every conf/*/forwarding and conf/all/
        # accept_redirects, so those are written again after it, changed or not.
        keys += [
            k
            for k in want
            if k not in keys and ("/conf/all/" in k or "/conf/default/" in k or "forwarding" in k)
        ]
    # ip_forward rewrites every conf/*/forwarding, so it goes first and the rest after.
    keys.sort(key=lambda k: (not k.endswith("/ip_forward"), "/conf/all/" not in k, k))
    return [f"printf '%s\\n' {shlex.quote(want[k])} > {shlex.quote(k)}" for k in keys]


def _link_cmd(name: str, want: dict[str, Any]) -> str:
    def on(flag: str) -> str:
        return "on" if want.get(flag) else "off"

    argv = ["ip", "link", "set", "dev", name, "mtu", str(want["mtu"])]
    if want.get("address"):
        argv += ["address", want["address"]]
    argv += ["arp", "off" if want["noarp"] else "on", "promisc", on("promisc")]
    argv += ["multicast", on("multicast"), "allmulticast", on("allmulti")]
    if want.get("txqlen") is not None:
        argv += ["txqueuelen", str(want["txqlen"])]
    argv += ["alias", want.get("alias") or ""]
    argv += ["nomaster"] if not want.get("master") else ["master", want["master"]]
    argv.append("up" if want["up"] else "down")
    return shlex.join(argv)


def _addr_cmd(name: str, addr: dict[str, Any]) -> str:
    """`ip addr add` recreating an address from its _address record (permanent)."""
    local = f"{addr['local']}/{addr['prefixlen']}"
    argv = ["ip", "-4", "addr", "add"]
    argv += (
        [local]
        if "address" not in addr
        else [addr["local"], "peer", f"{addr['address']}/{addr['prefixlen']}"]
    )
    for key, word in (
        ("broadcast", "brd"),
        ("anycast", "anycast"),
        ("label", "label"),
        ("metric", "metric"),
    ):
        if key in addr:
            argv += [word, str(addr[key])]
    argv += [
        flag
        for flag in ("noprefixroute", "home", "nodad", "mngtmpaddr", "autojoin")
        if addr.get(flag)
    ]
    if addr.get("deprecated"):
        argv += ["preferred_lft", "0"]
    return shlex.join([*argv, "scope", str(addr["scope"]), "dev", name])


def _restore_routes(want: list[str], got: list[str]) -> list[str]:
    routes = [json.loads(r) for r in want]
    tables = {json.loads(r).get("table", "main") for r in [*want, *got]} - {"local"}
    cmds = [f"ip -4 route flush table {shlex.quote(str(t))}" for t in sorted(tables, key=str)]
    local_want = sorted(r for r in want if json.loads(r).get("table") == "local")
    local_got = sorted(r for r in got if json.loads(r).get("table") == "local")
    readd = [r for r in routes if r.get("table", "main") != "local"]
    if local_want != local_got:
        cmds.append("ip -4 route flush table local")
        readd = [r for r in routes if r.get("table") == "local"] + readd
    # Local addresses first (a prefsrc must be local), then on-link routes, then gateways.
    readd.sort(key=lambda r: ("gateway" in r, r.get("type") != "local", "/" in r["dst"]))
    return cmds + [shlex.join(route_argv(r)) for r in readd]


def route_argv(route: dict[str, Any]) -> list[str]:
    """`ip route add` argv recreating a route from its `ip -j route` record."""
    argv = ["ip", "-4", "route", "add"]
    if route.get("type", "unicast") != "unicast":
        argv.append(route["type"])
    argv.append(route["dst"])
    if "gateway" in route:
        argv += ["via", route["gateway"]]
    if "dev" in route:
        argv += ["dev", route["dev"]]
    argv += ["table", str(route.get("table", "main"))]
    for key, word in (("protocol", "proto"), ("scope", "scope"), ("prefsrc", "src")):
        if key in route:
            argv += [word, str(route[key])]
    if "metric" in route:
        argv += ["metric", str(route["metric"])]
    if "onlink" in route.get("flags", []):
        argv.append("onlink")
    return argv


def _rule_argv(rule: dict[str, Any]) -> list[str]:
    argv = ["ip", "-4", "rule", "add", "pref", str(rule["priority"])]
    for key, word in (("src", "from"), ("dst", "to")):
        if key in rule and rule[key] != "all":
            length = rule.get(f"{key}len")
            argv += [word, f"{rule[key]}/{length}" if length is not None else rule[key]]
    for key in ("iif", "oif"):
        if key in rule:
            argv += [key, rule[key]]
    if "table" in rule:
        argv += ["lookup", str(rule["table"])]
    elif "action" in rule:
        argv.append(rule["action"])
    return argv


def iptables_restore_text(want: dict[str, list[str]], got: dict[str, list[str]]) -> str:
    """iptables-restore input giving `want`; tables only in `got` become empty."""
    parts = []
    for table in sorted(set(want) | set(got)):
        body = want.get(table) or [f":{c} ACCEPT" for c in BUILTIN_CHAINS.get(table, ())]
        parts.append("\n".join([f"*{table}", *body, "COMMIT"]))
    return "\n".join(parts) + "\n"
