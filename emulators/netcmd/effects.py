"""What a lab command may change: the kinds of network state, per tool and address family.

A kind is (what, family): what is "address", "route", "rule", "neighbour", "proxy
neighbour", "link", "qdisc", "tc class", "tc filter", "iptables TABLE" or "sysctl"; family
is "inet" or "inet6" for the kernel's per-family state, "" for state without one. `changes(argv)`
reads a checked argv as its tool reads it (the policy's own parsers) and names the kinds
it may change; `allowed()` derives every kind the policy lets any command change from the
policy's own tables (iproute.IP_ALLOWED and WRITE_FAMILIES, iptables.TABLES, tc.TC_ALLOWED,
the tools' option strings). The reset must restore and verify each of them
(emulators/state.py COVERS; tests/reset_families.py proves it per backend), and the
per-device bounds (budget.py) count objects around every command that changes something.

A command that changes nothing (a show, a listing, ping, cat) gives the empty set.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Sequence

from emulators.netcmd import getopt, iproute, iptables, tc, tools

Kind = tuple[str, str]
# Tools that only read: they change no configuration (ping's neighbour entries and route
# cache are flushed at every reset, with the other learned neighbours).
READ_ONLY = ("cat", "ping", "iptables-save")
_IP_STATE = {"address": "address", "route": "route", "rule": "rule", "neighbor": "neighbour",
             "neighbour": "neighbour", "link": "link"}  # fmt: skip
# ip objects whose writes without a family and without an address act on every family
# (`ip addr flush dev X`, `ip neigh flush all`); route and rule default to inet.
_ALL_FAMILIES = {"address", "neighbor", "neighbour"}
_IPTABLES_WRITES = {"append", "insert", "replace", "delete", "flush", "new-chain",
                    "delete-chain", "rename-chain", "policy"}  # fmt: skip


def _literal_families(words: Sequence[str]) -> set[str]:
    found = set()
    for word in words:
        try:
            net = ipaddress.ip_interface(word)
        except ValueError:
            continue
        found.add("inet6" if net.version == 6 else "inet")
    return found


def _ip(args: list[str]) -> set[Kind]:
    options, rest, why = iproute.read_globals(args, iproute.IP_OPTIONS, "ip")
    if why or len(rest) < 2:
        return set()
    obj = iproute.dispatch(rest[0], iproute.IP_OBJECTS)
    verb = iproute.dispatch(rest[1], iproute.IP_VERBS.get(obj or "", []))
    if obj not in _IP_STATE or verb is None or verb in iproute.READ_VERBS:
        return set()
    if obj == "link":
        return {("link", "")}
    chosen = iproute.family(options)
    families = {chosen} if chosen else _literal_families(rest[2:])
    if not families:
        families = set(iproute.WRITE_FAMILIES) if obj in _ALL_FAMILIES else {"inet"}
    what = _IP_STATE[obj]
    if what == "neighbour" and any(iproute.matches(w, "proxy") for w in rest[2:]):
        what = "proxy neighbour"
    elif what == "neighbour" and verb in ("delete", "flush"):
        return {(w, f) for f in families for w in ("neighbour", "proxy neighbour")}
    return {(what, f) for f in families}


def _ifconfig(args: list[str]) -> set[Kind]:
    rest = [a for a in args if a not in ("-a", "-s", "-v")]
    if len(rest) < 2:
        return set()
    # `add` and `del` take IPv6 addresses in net-tools, which the policy never lets through.
    words = set(rest[1:]) - {"add", "del"}
    kinds = set()
    addressing = {"netmask", "broadcast"}
    if _literal_families(rest[1:]) or words & addressing:
        kinds.add(("address", "inet"))
    if words - addressing - {w for w in words if iproute.ipv4(w)}:
        kinds.add(("link", ""))
    # Taking an alias interface (eth0:1) down deletes its address.
    if ":" in rest[0] and "down" in words:
        kinds.add(("address", "inet"))
    return kinds


def _route(args: list[str]) -> set[Kind]:
    words = ["#" + a[1:] if a in ("-net", "-host") else a for a in args]
    try:
        options, operands = getopt.parse(words, tools.ROUTE_SHORTS, tools.ROUTE_LONGS)
    except getopt.GetoptError:
        return set()
    if not {"add", "del"} & set(operands):
        return set()
    family = "inet"
    for opt in options:
        if opt.name == "-6" or (opt.name in ("-A", "--family") and opt.value == "inet6"):
            family = "inet6"
        elif opt.name == "-4":
            family = "inet"
    return {("route", family)}


def _arp(args: list[str]) -> set[Kind]:
    try:
        options, operands = getopt.parse(args, tools.ARP_SHORTS, tools.ARP_LONGS)
    except getopt.GetoptError:
        return set()
    names = {o.name for o in options}
    if names & {"-s", "--set"}:
        return {("proxy neighbour" if "pub" in operands else "neighbour", "inet")}
    if names & {"-d", "--delete"}:
        return {("neighbour", "inet"), ("proxy neighbour", "inet")}
    return set()


def _iptables(args: list[str]) -> set[Kind]:
    try:
        options = iptables.read_iptables(args)
    except iptables.Refusal:
        return set()
    names = {name for name, _ in options}
    if not names & _IPTABLES_WRITES:
        return set()
    table = next((v for n, v in reversed(options) if n == "table"), "filter")
    return {(f"iptables {table}", "inet")}


def _tc(args: list[str]) -> set[Kind]:
    _, rest, why = iproute.read_globals(args, iproute.TC_OPTIONS, "tc")
    if why or len(rest) < 2:
        return set()
    obj = iproute.dispatch(rest[0], tc.TC_OBJECTS)
    verb = iproute.dispatch(rest[1], tc.TC_VERBS)
    what = {"qdisc": "qdisc", "class": "tc class", "filter": "tc filter"}.get(obj or "")
    if what is None or verb not in ("add", "change", "replace", "delete"):
        return set()
    return {(what, "")}


def changes(argv: Sequence[str], writes: Sequence[str] = ()) -> frozenset[Kind]:
    """The kinds of state the checked `argv` may change (`writes`: the /proc/sys files a
    checked sysctl command writes, policy.Checked.writes)."""
    tool, args = os.path.basename(argv[0]), list(argv[1:])
    if tool == "sysctl":
        return frozenset({("sysctl", "")}) if writes else frozenset()
    reader = {"ip": _ip, "ifconfig": _ifconfig, "route": _route, "arp": _arp,
              "iptables": _iptables, "tc": _tc}.get(tool)  # fmt: skip
    return frozenset(reader(args)) if reader else frozenset()


def allowed() -> frozenset[Kind]:
    """Every kind of state the policy lets some command change, from its own tables."""
    kinds: set[Kind] = set()
    for obj, verbs in iproute.IP_ALLOWED.items():
        if not verbs - iproute.READ_VERBS:
            continue
        if obj == "link":
            kinds.add(("link", ""))
            continue
        whats = {_IP_STATE[obj]} | ({"proxy neighbour"} if _IP_STATE[obj] == "neighbour" else set())
        kinds |= {(w, f) for w in whats for f in iproute.WRITE_FAMILIES}
    kinds |= {("address", "inet"), ("link", "")}  # ifconfig: IPv4 addresses, link settings
    kinds.add(("route", "inet"))  # route (net-tools); its -6 option writes inet6 routes
    if "6" in tools.ROUTE_SHORTS:
        kinds.add(("route", "inet6"))
    kinds |= {("neighbour", "inet"), ("proxy neighbour", "inet")}  # arp -s [pub]
    kinds |= {(f"iptables {t}", "inet") for t in iptables.TABLES}
    written = tc.TC_ALLOWED - iproute.READ_VERBS
    if written:
        kinds |= {("qdisc", ""), ("tc class", ""), ("tc filter", "")}
    kinds.add(("sysctl", ""))
    return frozenset(kinds)


def unclassified() -> list[str]:
    """Tools of the policy that this module neither reads nor knows to be read-only."""
    known = {"ip", "ifconfig", "route", "arp", "iptables", "tc", "sysctl", *READ_ONLY}
    return [t for t in tools.TOOL_NAMES if t not in known]
