"""Per-tool argument rules of the command sandbox: each returns None or why it refuses.

Rules are allowlists: an `ip` object, a `tc` object, an option, a `sysctl` key or a
`cat` path is allowed only if it is named here. Everything they allow acts only on the
network namespace the command runs in; what could reach outside it (`ip netns`,
`-netns`, `-batch` files, `ip link set ... netns`, iptables' `--modprobe`, BPF objects,
`sysctl -p FILE`, `arp -f FILE`) or never end (`ip monitor`, `ping` without `-c`) is
refused.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

Rule = Callable[[list[str]], str | None]

# Words that would reach outside the node, load files or programs, or never stop.
ESCAPES = {
    "netns",
    "link-netns",
    "link-netnsid",
    "exec",
    "bpf",
    "obj",
    "object-file",
    "object-pinned",
    "--object-pinned",
    "encap",
    "xdp",
    "xdpgeneric",
    "xdpdrv",
    "xdpoffload",
    "vrf",
}
TOKEN_RE = re.compile(r"^[A-Za-z0-9_.:/,+=@%!-]+$")
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
MAC_RE = re.compile(r"^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$")
NUMBER_RE = re.compile(r"^\d{1,9}$")


def _ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Interface(text)
    except ValueError:
        return False
    return True


def _tokens_ok(args: list[str]) -> str | None:
    for arg in args:
        if arg.lower() in ESCAPES:
            return f"'{arg}' is not allowed: a command acts only on the machine it runs on"
        if not TOKEN_RE.match(arg):
            return f"the argument {arg!r} has characters that are not allowed"
    return None


def _resolve(word: str, table: list[str]) -> str | None:
    """iproute2's abbreviation rule: the first entry `word` is a prefix of."""
    return next((name for name in table if name.startswith(word)), None)


def _options(args: list[str], flags: set[str], valued: set[str]) -> tuple[list[str], str | None]:
    """Split leading options off; return (rest, reason if an option is not allowed)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        opt = "-" + args[i].lstrip("-")
        if opt in valued:
            i += 2
            if i > len(args):
                return [], f"option {args[i - 2]} needs a value"
            continue
        if opt not in flags:
            return [], f"option {args[i]} is not allowed"
        i += 1
    return args[i:], None


# ip: the order of iproute2 6.1's command table, so abbreviations resolve as ip does.
IP_OBJECTS = [
    "address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour", "ntable",
    "ntbl", "link", "l2tp", "fou", "ila", "macsec", "tunnel", "tunl", "tuntap", "tap",
    "token", "tcpmetrics", "tcp_metrics", "monitor", "xfrm", "mroute", "mrule", "netns",
    "netconf", "vrf", "sr", "nexthop", "mptcp", "ioam", "help", "stats",
]  # fmt: skip
IP_VERBS = {
    "address": ["show", "list", "lst", "add", "delete", "change", "replace", "flush"],
    "route": ["show", "list", "get", "add", "delete", "change", "replace", "append", "prepend",
              "flush"],
    "rule": ["show", "list", "add", "delete", "flush"],
    "neighbor": ["show", "list", "get", "add", "delete", "change", "replace", "flush"],
    "link": ["show", "list", "set"],
}  # fmt: skip
IP_VERBS["neighbour"] = IP_VERBS["neighbor"]
IP_FLAGS = {
    "-4", "-0", "-o", "-oneline", "-br", "-brief", "-s", "-stats", "-statistics", "-d",
    "-details", "-j", "-json", "-p", "-pretty", "-h", "-human", "-human-readable", "-r",
    "-resolve", "-c", "-color", "-color=never", "-c=never", "-N", "-numeric",
}  # fmt: skip
LINK_SET_FLAGS = {"up", "down"}
LINK_SET_VALUED = {
    "mtu": NUMBER_RE,
    "address": MAC_RE,
    "arp": re.compile(r"^(on|off)$"),
    "promisc": re.compile(r"^(on|off)$"),
    "multicast": re.compile(r"^(on|off)$"),
    "allmulticast": re.compile(r"^(on|off)$"),
    "txqueuelen": NUMBER_RE,
    "txqlen": NUMBER_RE,
    "qlen": NUMBER_RE,
}


def check_ip(args: list[str]) -> str | None:
    rest, why = _options(args, IP_FLAGS, {"-f", "-family"})
    if why:
        return why
    if not rest:
        return "ip needs an object: ip addr, ip route, ip rule, ip neigh or ip link"
    obj = _resolve(rest[0], IP_OBJECTS)
    if obj not in IP_VERBS:
        return (
            f"'ip {rest[0]}' is not allowed; use ip address, route, rule, neighbour or link "
            "(commands act only on the machine they run on)"
        )
    why = _tokens_ok(rest[1:])
    if why or len(rest) == 1:
        return why
    verb = _resolve(rest[1], IP_VERBS[obj])
    if verb is None and obj == "link":
        return f"'ip link {rest[1]}' is not allowed; use ip link show or ip link set"
    if verb is None:
        # `ip route 10.0.0.0/8` and `ip addr dev X` mean "show": only selectors follow.
        return (
            None
            if rest[1] in ("dev", "table", "to", "from") or _ipv4(rest[1])
            else (f"'ip {obj} {rest[1]}' is not allowed; use one of: {', '.join(IP_VERBS[obj])}")
        )
    if obj == "link" and verb == "set":
        return _check_link_set(rest[2:])
    return None


def _check_link_set(args: list[str]) -> str | None:
    if args[:1] == ["dev"]:
        args = args[1:]
    if not args or not IFNAME_RE.match(args[0]):
        return "ip link set needs an interface name"
    i = 1
    while i < len(args):
        word = args[i]
        if word in LINK_SET_FLAGS:
            i += 1
        elif word in LINK_SET_VALUED and i + 1 < len(args):
            if not LINK_SET_VALUED[word].match(args[i + 1]):
                return f"bad value {args[i + 1]!r} for ip link set ... {word}"
            i += 2
        else:
            allowed = ", ".join(sorted(LINK_SET_FLAGS | set(LINK_SET_VALUED)))
            return f"'ip link set ... {word}' is not allowed; allowed settings: {allowed}"
    return None


TC_OBJECTS = ["qdisc", "class", "filter", "chain", "actions", "monitor", "exec", "help"]
TC_FLAGS = {"-s", "-stats", "-statistics", "-d", "-details", "-j", "-json", "-p", "-pretty",
            "-r", "-raw", "-g", "-graph", "-iec", "-nm", "-name", "-t", "-timestamp"}  # fmt: skip


def check_tc(args: list[str]) -> str | None:
    rest, why = _options(args, TC_FLAGS, set())
    if why:
        return why
    if not rest:
        return "tc needs an object: tc qdisc, tc class or tc filter"
    obj = _resolve(rest[0], TC_OBJECTS)
    if obj not in ("qdisc", "class", "filter", "chain"):
        return f"'tc {rest[0]}' is not allowed; use tc qdisc, class, filter or chain"
    return _tokens_ok(rest[1:])


IPT_TABLES = {"filter", "nat", "mangle", "raw", "security"}


def check_iptables(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg.startswith("--modprobe") or arg in ("-M",):
            return "--modprobe runs a program; it is not allowed"
        if arg in ("-t", "--table") and (i + 1 >= len(args) or args[i + 1] not in IPT_TABLES):
            return f"iptables -t takes one of: {', '.join(sorted(IPT_TABLES))}"
    return _tokens_ok(args) if args else "iptables needs a command, e.g. iptables -L -n -v"


def check_iptables_save(args: list[str]) -> str | None:
    rest, why = _options(args, {"-c", "-counters"}, {"-t", "-table"})
    if why:
        return why
    if rest:
        return "iptables-save takes only -c and -t TABLE"
    for i, arg in enumerate(args):
        if arg in ("-t", "--table") and args[i + 1] not in IPT_TABLES:
            return f"iptables-save -t takes one of: {', '.join(sorted(IPT_TABLES))}"
    return None


SYSCTL_KEY_RE = re.compile(r"^net(\.[A-Za-z0-9_-]+)+$")
SYSCTL_VALUE_RE = re.compile(r"^[A-Za-z0-9 \t._:,/-]{0,64}$")


def check_sysctl(args: list[str]) -> str | None:
    rest, why = _options(
        args, {"-n", "-e", "-N", "-q", "-w", "-values", "-names", "-quiet", "-write"}, set()
    )
    if why:
        return f"{why} (sysctl reads or writes named net.* keys only)"
    if not rest:
        return "sysctl needs one or more net.* keys, e.g. sysctl net.ipv4.ip_forward"
    for arg in rest:
        key, sep, value = arg.partition("=")
        key = key.strip().replace("/", ".")
        if ".." in key or not SYSCTL_KEY_RE.match(key):
            return f"sysctl may only read or write net.* keys; {key!r} is not one"
        if sep and not SYSCTL_VALUE_RE.match(value):
            return f"the sysctl value {value!r} is not allowed"
    return None


CAT_PATH_RE = re.compile(r"^/proc/(sys/)?net/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


def check_cat(args: list[str]) -> str | None:
    if not args:
        return "cat needs a file under /proc/sys/net/ or /proc/net/"
    for path in args:
        if path.startswith("-"):
            return f"cat option {path} is not allowed"
        if not CAT_PATH_RE.match(path) or "/../" in f"{path}/" or "/./" in f"{path}/":
            return f"cat may only read files under /proc/sys/net/ or /proc/net/; not {path!r}"
    return None


def _keyword_rule(tool: str, keywords: set[str], refused: dict[str, str]) -> Rule:
    """Every token is a keyword, an option, an IPv4 address/prefix, a number, a MAC or an
    interface name; `refused` maps tokens to the reason they are refused."""

    def check(args: list[str]) -> str | None:
        for arg in args:
            if arg in refused:
                return refused[arg]
            ok = arg in keywords or _ipv4(arg) or NUMBER_RE.match(arg) or MAC_RE.match(arg)
            if not ok and not (IFNAME_RE.match(arg) and not arg.startswith("-")):
                return f"{tool} argument {arg!r} is not allowed"
        return _tokens_ok(args)

    return check


check_ifconfig = _keyword_rule(
    "ifconfig",
    {
        "-a",
        "-s",
        "-v",
        "up",
        "down",
        "netmask",
        "broadcast",
        "mtu",
        "hw",
        "ether",
        "arp",
        "-arp",
        "promisc",
        "-promisc",
        "allmulti",
        "-allmulti",
        "add",
        "del",
        "metric",
        "txqueuelen",
    },
    {},
)
check_route = _keyword_rule(
    "route",
    {
        "-n",
        "-e",
        "-ee",
        "-v",
        "-F",
        "-C",
        "-A",
        "inet",
        "add",
        "del",
        "-net",
        "-host",
        "default",
        "netmask",
        "gw",
        "metric",
        "dev",
        "reject",
        "mss",
        "window",
        "irtt",
        "mod",
        "dyn",
        "reinstate",
    },
    {},
)
check_arp = _keyword_rule(
    "arp",
    {"-n", "-a", "-e", "-v", "-i", "-d", "-s", "-H", "ether", "temp", "pub", "-D"},
    {"-f": "arp -f reads a file; add entries with arp -s HOST MAC instead"},
)

PING_LIMITS = {
    "-c": (1, 5),
    "-W": (0, 3),
    "-i": (0.2, 1),
    "-s": (0, 1472),
    "-t": (1, 255),
    "-w": (1, 5),
}


def check_ping(args: list[str]) -> str | None:
    values: dict[str, str] = {}
    targets = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg[:2] in PING_LIMITS:
            value = arg[2:] or (args[i + 1] if i + 1 < len(args) else "")
            i += 1 if arg[2:] else 2
            values[arg[:2]] = value
        elif arg in ("-n", "-q", "-D", "-O"):
            i += 1
        elif arg == "-I" and i + 1 < len(args) and IFNAME_RE.match(args[i + 1]):
            i += 2
        elif _ipv4(arg) and "/" not in arg:
            targets.append(arg)
            i += 1
        else:
            return f"ping argument {arg!r} is not allowed; use ping -c N [-W S] [-i S] ADDRESS"
    if len(targets) != 1:
        return "ping needs exactly one IPv4 address"
    if "-c" not in values:
        return "ping needs a count: ping -c N ADDRESS (N from 1 to 5)"
    for opt, value in values.items():
        low, high = PING_LIMITS[opt]
        try:
            number = float(value)
        except ValueError:
            return f"ping {opt} needs a number, got {value!r}"
        if not low <= number <= high:
            return f"ping {opt} must be between {low} and {high}, got {value}"
    return None


RULES: dict[str, Rule] = {
    "ip": check_ip,
    "ifconfig": check_ifconfig,
    "route": check_route,
    "arp": check_arp,
    "iptables": check_iptables,
    "iptables-save": check_iptables_save,
    "tc": check_tc,
    "sysctl": check_sysctl,
    "cat": check_cat,
    "ping": check_ping,
}
