"""`ip` arguments (and `tc`'s global options), resolved as iproute2 6.1 resolves them.

iproute2 reads every word with `matches(word, name)`: the word may be any prefix of the
name, and the first name in the tool's own order that it is a prefix of wins. So `ip l s`
is `ip link set` (in `do_iplink`, "set" is tried before "show"), `ip -n` is `-netns`
and `ip -b` is `-batch`. The tables below are those orders (ip/ip.c, ip/ipaddress.c,
ip/iproute.c, ip/iprule.c, ip/ipneigh.c, ip/iplink.c, tc/tc.c, tc/tc_qdisc.c, ...);
tests/test_netcmd_grammar.py checks them against the installed binaries. An entry
written `=name` must be spelled in full (iproute2 compares it with strcmp).

Global options either print differently (allowed) or reach outside the device, read
files or change how errors are handled (`-netns`, `-batch`, `-force`, `-all`, `-rcvbuf`,
`-loops`; tc's `-conf`): those are refused, in every spelling iproute2 accepts.
"""

from __future__ import annotations

import ipaddress
import re

from emulators.netcmd import durable

# ip/ip.c: the option loop, in order; (name, takes a value). Leading "--" reads as "-".
IP_OPTIONS = [
    ("-loops", True), ("-family", True), ("=-4", False), ("=-6", False), ("=-0", False),
    ("=-M", False), ("=-B", False), ("-human", False), ("-human-readable", False),
    ("-iec", False), ("-stats", False), ("-statistics", False), ("-details", False),
    ("-resolve", False), ("-oneline", False), ("-timestamp", False), ("-tshort", False),
    ("-Version", False), ("-force", False), ("-batch", True), ("-brief", False),
    ("-json", False), ("-pretty", False), ("-rcvbuf", True), ("-color", False),
    ("-help", False), ("-netns", True), ("-Numeric", False), ("-all", False),
    ("=-echo", False),
]  # fmt: skip
IP_OPTIONS_ALLOWED = {
    "-family", "-4", "-6", "-0", "-human", "-human-readable", "-iec", "-stats",
    "-statistics", "-details", "-resolve", "-oneline", "-timestamp", "-tshort", "-Version",
    "-brief", "-json", "-pretty", "-color", "-help", "-Numeric",
}  # fmt: skip
OPTION_WHY = {
    "-netns": "a command acts only on the machine it runs on",
    "-all": "a command acts only on the machine it runs on",
    "-batch": "commands are read from the reply, not from files",
    "-force": "errors are not ignored here",
    "-loops": "flush loops are fixed",
    "-rcvbuf": "socket sizes are fixed",
    "-conf": "tc reads no configuration files here",
    "-cf": "tc reads no configuration files here",
}
FAMILIES = {"inet", "inet6", "link", "mpls", "bridge"}

# ip/ip.c cmds[]: objects in dispatch order.
IP_OBJECTS = [
    "address", "addrlabel", "maddress", "route", "rule", "neighbor", "neighbour", "ntable",
    "ntbl", "link", "l2tp", "fou", "ila", "macsec", "tunnel", "tunl", "tuntap", "tap",
    "token", "tcpmetrics", "tcp_metrics", "monitor", "xfrm", "mroute", "mrule", "netns",
    "netconf", "vrf", "sr", "nexthop", "mptcp", "ioam", "help", "stats",
]  # fmt: skip
# Each object's verbs in its dispatcher's order -> what they mean.
_LIST = [("list", "show"), ("show", "show"), ("lst", "show")]
IP_VERBS = {
    "address": [("add", "add"), ("change", "change"), ("=chg", "change"), ("replace", "replace"),
                ("delete", "delete"), *_LIST, ("flush", "flush"), ("save", "save"),
                ("showdump", "showdump"), ("restore", "restore"), ("help", "help")],
    "route": [("add", "add"), ("change", "change"), ("=chg", "change"), ("replace", "replace"),
              ("prepend", "prepend"), ("append", "append"), ("test", "test"),
              ("delete", "delete"), *_LIST, ("get", "get"), ("flush", "flush"),
              ("save", "save"), ("restore", "restore"), ("showdump", "showdump"),
              ("help", "help")],
    "rule": [*_LIST, ("save", "save"), ("restore", "restore"), ("showdump", "showdump"),
             ("add", "add"), ("delete", "delete"), ("flush", "flush"), ("help", "help")],
    "neighbor": [("add", "add"), ("change", "change"), ("=chg", "change"),
                 ("replace", "replace"), ("delete", "delete"), ("get", "get"),
                 ("show", "show"), ("lst", "show"), ("list", "show"), ("flush", "flush"),
                 ("help", "help")],
    "link": [("add", "add"), ("set", "set"), ("change", "set"), ("replace", "replace"),
             ("delete", "delete"), ("show", "show"), ("lst", "show"), ("list", "show"),
             ("xstats", "xstats"), ("afstats", "afstats"), ("property", "property"),
             ("help", "help")],
}  # fmt: skip
IP_VERBS["neighbour"] = IP_VERBS["neighbor"]
IP_ALLOWED = {
    "address": {"add", "change", "replace", "delete", "show", "flush", "help"},
    "route": {"add", "change", "replace", "prepend", "append", "delete", "show", "get",
              "flush", "help"},
    "rule": {"show", "add", "delete", "flush", "help"},
    "neighbor": {"add", "change", "replace", "delete", "get", "show", "flush", "help"},
    "neighbour": {"add", "change", "replace", "delete", "get", "show", "flush", "help"},
    "link": {"set", "show", "help"},
}  # fmt: skip
# Keywords of address, route, rule and neighbour commands that would reach outside the
# device, or load programs or files; refused also abbreviated (from three letters on).
# `ip link set` takes only the settings in LINK_SET, spelled in full.
ESCAPES = (
    "netns", "link-netns", "link-netnsid", "exec", "bpf", "object-file", "object-pinned",
    "encap", "xdp", "xdpgeneric", "xdpdrv", "xdpoffload", "vrf", "batch",
)  # fmt: skip
LINK_SET = {"up": None, "down": None, "mtu": r"\d{1,5}",
            "address": r"([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}", "arp": "on|off",
            "promisc": "on|off", "multicast": "on|off",
            "allmulticast": "on|off", "txqueuelen": r"\d{1,6}", "txqlen": r"\d{1,6}",
            "qlen": r"\d{1,6}", "master": r"[A-Za-z0-9_.-]{1,15}", "nomaster": None,
            "alias": r"[A-Za-z0-9 _.,:/()+=@#%-]{0,64}"}  # fmt: skip
TOKEN_RE = re.compile(r"^[A-Za-z0-9_.:/,+=@%!-]+$")
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")


def matches(word: str, name: str) -> bool:
    """iproute2's matches(): `word` is a non-empty prefix of `name`."""
    return bool(word) and name.startswith(word)


def dispatch(word: str, table: list[tuple[str, str]] | list[str]) -> str | None:
    """The first entry `word` selects, as iproute2 walks its table; None if none does."""
    for entry in table:
        name, meaning = entry if isinstance(entry, tuple) else (entry, entry)
        exact = name.startswith("=")
        name = name.lstrip("=")
        if (word == name) if exact else matches(word, name):
            return meaning
    return None


def _option(spelled: str, table: list[tuple[str, bool]]) -> tuple[str, bool] | None:
    for name, takes_value in table:
        if dispatch(spelled, [name]) is not None:
            return name.lstrip("="), takes_value
    return None


Option = tuple[str, str | None, str]  # (name, value, as spelled)


def read_globals(
    args: list[str], table: list[tuple[str, bool]], tool: str
) -> tuple[list[Option], list[str], str | None]:
    """Read iproute2's leading options: ([(name, value, spelled)], rest, why unreadable)."""
    options: list[Option] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        if word == "--":
            return options, args[i + 1 :], None
        spelled = word[1:] if word.startswith("--") else word
        found = _option(spelled, table)
        if found is None and tool == "ip" and spelled.startswith("-c"):
            found = ("-color", False)  # matches_color(): -c, -color, -color=never, ...
        if found is None:
            return options, [], f'{tool} option "{word}" is unknown'
        name, takes_value = found
        if takes_value:
            if i + 1 >= len(args):
                return options, [], f"{tool} option {word} needs a value"
            options.append((name, args[i + 1], word))
            i += 1
        else:
            options.append((name, None, word))
        i += 1
    return options, args[i:], None


def _globals(args: list[str], table: list[tuple[str, bool]], allowed: set[str], tool: str):
    """Read iproute2's leading options; (rest, why refused or None)."""
    options, rest, why = read_globals(args, table, tool)
    if why:
        return [], why
    for name, value, word in options:
        if name not in allowed:
            why = OPTION_WHY.get(name, "it is not available here")
            return [], f"{tool} option {word} ({name}) is not allowed: {why}"
        if name == "-family" and value not in FAMILIES:
            return [], f"{tool} -family takes one of: {', '.join(sorted(FAMILIES))}"
    return rest, None


# The address family each family option selects (ip/ip.c); `-family` names its own.
FAMILY_OPTIONS = {"-4": "inet", "-6": "inet6", "-0": "link", "-M": "mpls", "-B": "bridge"}
# The families whose addresses, routes, rules and neighbours a command may change: the
# kernel's IPv4 and IPv6 state. The others (link, mpls, bridge) may only be shown.
WRITE_FAMILIES = ("inet", "inet6")
READ_VERBS = {"show", "get", "help"}


def family(options: list[Option]) -> str | None:
    """The family iproute2's options select (the last one given wins), or None."""
    chosen = None
    for name, value, _ in options:
        if name == "-family":
            chosen = value
        elif name in FAMILY_OPTIONS:
            chosen = FAMILY_OPTIONS[name]
    return chosen


# Words these objects read in their own right, never as an abbreviation of an escape:
# `link` is a route and address scope (`scope link`) and a family name; link-netns is
# read only by `ip link`, whose `set` takes its settings spelled in full (LINK_SET).
OWN_WORDS = {"link"}


def _escape(token: str) -> str | None:
    word = token.lower()
    if word in OWN_WORDS:
        return None
    for name in ESCAPES:
        if word == name or (len(word) >= 3 and name.startswith(word)):
            return name
    return None


def tokens_ok(args: list[str]) -> str | None:
    for arg in args:
        hit = _escape(arg)
        if hit:
            return f"'{arg}' ({hit}) is not allowed: a command acts only on the machine it runs on"
        if not TOKEN_RE.match(arg):
            return f"the argument {arg!r} has characters that are not allowed"
    return None


def check_ip(args: list[str]) -> str | None:
    rest, why = _globals(args, IP_OPTIONS, IP_OPTIONS_ALLOWED, "ip")
    if why:
        return why
    if not rest:
        return "ip needs an object: ip address, route, rule, neighbour or link"
    obj = dispatch(rest[0], IP_OBJECTS)
    if obj not in IP_VERBS:
        shown = f" ({obj})" if obj else ""
        return (
            f"'ip {rest[0]}'{shown} is not allowed; use ip address, route, rule, neighbour or "
            "link (commands act only on the machine they run on)"
        )
    if len(rest) == 1:
        return None
    verb = dispatch(rest[1], IP_VERBS[obj])
    if verb is None:
        return f"'ip {obj} {rest[1]}' is not a command of ip {obj}"
    if verb not in IP_ALLOWED[obj]:
        return f"'ip {obj} {rest[1]}' ({verb}) is not allowed; use one of: " + ", ".join(
            sorted(IP_ALLOWED[obj])
        )
    if obj == "link" and verb == "set":
        return _link_set(rest[2:])
    chosen = family(read_globals(args, IP_OPTIONS, "ip")[0])
    if verb not in READ_VERBS and chosen not in (None, *WRITE_FAMILIES):
        return (
            f"'ip -family {chosen} {obj} {verb}' is not allowed: only inet (IPv4) and inet6 "
            f"(IPv6) {obj} state may be changed here"
        )
    return tokens_ok(rest[2:]) or _lasting(obj, verb, rest[2:])


def _lasting(obj: str, verb: str, args: list[str]) -> str | None:
    """Why the command would make state that undoes itself (durable.py), or None."""
    if obj == "address" and verb in ("add", "change", "replace"):
        return durable.address_refusal(args)
    if obj == "route" and verb in ("add", "change", "replace", "prepend", "append"):
        return durable.route_refusal(args)
    if obj in ("neighbor", "neighbour") and verb in ("add", "change", "replace"):
        return durable.neigh_refusal(args)
    return None


def _link_set(args: list[str]) -> str | None:
    if args[:1] == ["dev"]:
        args = args[1:]
    if not args or not IFNAME_RE.match(args[0]):
        return "ip link set needs an interface name"
    i = 1
    while i < len(args):
        word = args[i]
        if word not in LINK_SET:
            allowed = ", ".join(LINK_SET)
            return f"'ip link set ... {word}' is not allowed; allowed settings: {allowed}"
        pattern = LINK_SET[word]
        if pattern is None:
            i += 1
            continue
        if i + 1 >= len(args) or not re.fullmatch(pattern, args[i + 1]):
            shown = args[i + 1] if i + 1 < len(args) else ""
            return f"bad value {shown!r} for ip link set ... {word}"
        i += 2
    return None


# tc/tc.c: options in the order of its loop (the rest of tc's grammar is in tc.py).
TC_OPTIONS = [
    ("-stats", False), ("-statistics", False), ("-details", False), ("-raw", False),
    ("-pretty", False), ("-graph", False), ("-Version", False), ("-iec", False),
    ("-help", False), ("-force", False), ("-batch", True), ("-netns", True),
    ("-Numeric", False), ("-names", False), ("-nm", False), ("-cf", True), ("-conf", True),
    ("-timestamp", False), ("-tshort", False), ("-json", False), ("-oneline", False),
    ("-brief", False),
]  # fmt: skip
TC_OPTIONS_ALLOWED = {
    "-stats", "-statistics", "-details", "-raw", "-pretty", "-graph", "-Version", "-iec",
    "-help", "-Numeric", "-names", "-nm", "-timestamp", "-tshort", "-json", "-oneline",
    "-brief",
}  # fmt: skip


def ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Interface(text)
    except ValueError:
        return False
    return True
