"""The script that turns a device's current state back into its healthy one (state.py).

One bash command line per device, from the two parsed dumps: only the sections that
differ are rewritten, in the order their dependencies need. Sysctls go first (writing
disable_ipv6 back removes every IPv6 address and route of a device, and ip_forward
rewrites each interface's forwarding), then links, addresses of both families, proxy
neighbours, routes of both families (after the addresses: a route's source and
gateway must be local or reachable), policy rules, qdiscs and iptables.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from emulators.state import BUILTIN_CHAINS, FAMILY_SECTIONS, State


def restore_script(healthy: State, current: State) -> str:
    """A bash command line that turns `current` back into `healthy` (empty when equal)."""
    cmds: list[str] = []
    if healthy["sysctl"] != current["sysctl"]:
        cmds += _restore_sysctl(healthy["sysctl"], current["sysctl"])
    for name, want in healthy["link"].items():
        if current["link"].get(name) != want:
            cmds.append(_link_cmd(name, want))
    addr_changed = {}
    for v, sections in FAMILY_SECTIONS.items():
        addr_changed[v] = False
        section = sections["addr"]
        for name in sorted(healthy[section].keys() | current[section].keys()):
            want = healthy[section].get(name, [])
            if current[section].get(name, []) != want:
                addr_changed[v] = True
                cmds.append(f"ip -{v} addr flush dev {shlex.quote(name)}")
                cmds += [_addr_cmd(v, name, json.loads(a)) for a in want]
    if healthy["neigh"] != current["neigh"]:
        cmds.append("ip neigh flush proxy")  # both families
        for entry in map(json.loads, healthy["neigh"]):
            argv = ["ip", "neigh", "add", "proxy", entry["dst"], "dev", entry["dev"]]
            cmds.append(shlex.join(argv))
    for v, sections in FAMILY_SECTIONS.items():
        route, rule = sections["route"], sections["rule"]
        if addr_changed[v] or healthy[route] != current[route]:
            cmds += _restore_routes(v, healthy[route], current[route])
        if healthy[rule] != current[rule]:
            cmds += _restore_rules(v, healthy[rule], current[rule])
    if healthy["qdisc"] != current["qdisc"] or healthy["tcobj"] != current["tcobj"]:
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


def _addr_cmd(v: str, name: str, addr: dict[str, Any]) -> str:
    """`ip -4|-6 addr add` recreating an address from its _address record (permanent)."""
    local = f"{addr['local']}/{addr['prefixlen']}"
    argv = ["ip", f"-{v}", "addr", "add"]
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


def _restore_routes(v: str, want: list[str], got: list[str]) -> list[str]:
    routes = [json.loads(r) for r in want]
    tables = {json.loads(r).get("table", "main") for r in [*want, *got]} - {"local"}
    cmds = [f"ip -{v} route flush table {shlex.quote(str(t))}" for t in sorted(tables, key=str)]
    local_want = sorted(r for r in want if json.loads(r).get("table") == "local")
    local_got = sorted(r for r in got if json.loads(r).get("table") == "local")
    readd = [r for r in routes if r.get("table", "main") != "local"]
    if local_want != local_got:
        cmds.append(f"ip -{v} route flush table local")
        readd = [r for r in routes if r.get("table") == "local"] + readd
    # Local addresses first (a prefsrc must be local), then on-link routes, then gateways.
    readd.sort(key=lambda r: ("gateway" in r, r.get("type") != "local", "/" in r["dst"]))
    return cmds + [shlex.join(route_argv(r, v)) for r in readd]


def route_argv(route: dict[str, Any], v: str = "4") -> list[str]:
    """`ip route add` argv recreating a route from its `ip -j route` record."""
    argv = ["ip", f"-{v}", "route", "add"]
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


def _restore_rules(v: str, want: list[str], got: list[str]) -> list[str]:
    """`ip rule flush` keeps the rule of priority 0 and deletes every other one."""
    cmds = [f"ip -{v} rule flush"]
    for rule in map(json.loads, want):
        if rule.get("priority") != 0:
            cmds.append(shlex.join(_rule_argv(v, rule)))
    if not any(json.loads(r).get("priority") == 0 for r in got):
        cmds.append(f"ip -{v} rule add pref 0 lookup local")
    return cmds


def _rule_argv(v: str, rule: dict[str, Any]) -> list[str]:
    argv = ["ip", f"-{v}", "rule", "add", "pref", str(rule["priority"])]
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
