"""Per-tool argument rules of the command sandbox: each returns None or why it refuses.

The second line behind the jail (confine.py): each rule reads the arguments as its tool
does (iproute.py for ip and tc, iptables.py, getopt.py for the getopt tools, procps'
key syntax for sysctl) and allows only what is named. Everything allowed acts only on the
network namespace the command runs in; what could reach outside it (`ip netns`,
`-netns`, `-batch` files, `ip link set ... netns`, iptables' `--modprobe`, BPF objects,
`sysctl -p FILE`, host-wide sysctls, `arp -f FILE`) or never end (`ip monitor`, `ping`
without `-c`) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from emulators.netcmd import durable, getopt, kinds, sysctls
from emulators.netcmd.bridge import check_bridge
from emulators.netcmd.dig import check_dig
from emulators.netcmd.iproute import check_ip, ipv4
from emulators.netcmd.iptables import check_iptables, check_iptables_save
from emulators.netcmd.tc import check_tc
from emulators.netcmd.trace import check_tracepath, check_traceroute

Rule = Callable[[list[str]], str | None]

IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
MAC_RE = re.compile(r"^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$")
NUMBER_RE = re.compile(r"^\d{1,9}$")


# procps-ng 4.0's sysctl options (getopt_long "bneNwfp::qoxaAXr:Vdh" and its long names).
SYSCTL_SHORTS = "bneNwfp::qoxaAXr:Vdh"
SYSCTL_LONGS = {
    "all": getopt.NONE, "deprecated": getopt.NONE, "dry-run": getopt.NONE,
    "binary": getopt.NONE, "ignore": getopt.NONE, "names": getopt.NONE, "values": getopt.NONE,
    "load": getopt.OPTIONAL, "quiet": getopt.NONE, "write": getopt.NONE,
    "system": getopt.NONE, "pattern": getopt.REQUIRED, "help": getopt.NONE,
    "version": getopt.NONE,
}  # fmt: skip
SYSCTL_ALLOWED = {"-b", "-n", "-e", "-N", "-w", "-q", "-o", "-x", "--binary", "--values",
                  "--ignore", "--names", "--write", "--quiet", "--dry-run"}  # fmt: skip
SYSCTL_WHY = {
    "-p": "sysctl -p reads settings from a file", "-f": "sysctl -f reads settings from a file",
    "--load": "sysctl --load reads settings from a file",
    "--system": "sysctl --system reads the host's settings files",
    "-a": "list keys by naming a folder instead, e.g. sysctl net.ipv4.conf.all",
    "-A": "list keys by naming a folder instead", "-X": "list keys by naming a folder instead",
    "--all": "list keys by naming a folder instead",
}  # fmt: skip
SYSCTL_VALUE_RE = re.compile(r"^[A-Za-z0-9 \t._:,/-]{0,64}$")


def check_sysctl(args: list[str]) -> tuple[str | None, list[str]]:
    """(why refused or None, the /proc/sys paths the command writes)."""
    try:
        options, keys = getopt.parse(args, SYSCTL_SHORTS, SYSCTL_LONGS)
    except getopt.GetoptError as err:
        return f"sysctl: {err}", []
    write_mode = False
    for opt in options:
        if opt.name not in SYSCTL_ALLOWED:
            why = SYSCTL_WHY.get(opt.name, f"sysctl option {opt.spelled} is not allowed")
            return why, []
        write_mode |= opt.name in ("-w", "--write")
    if not keys:
        return "sysctl needs one or more net.* keys, e.g. sysctl net.ipv4.ip_forward", []
    writes = []
    for arg in keys:
        key, eq, value = arg.partition("=")
        path = sysctls.key_path(key)
        if not path.startswith("net/") and path != "net":
            return f"sysctl may only read or write net.* keys; {key.strip()!r} is not one", []
        if eq or write_mode:
            if not eq:
                return f'"{arg}" must be of the form name=value', []
            if not SYSCTL_VALUE_RE.match(value):
                return f"the sysctl value {value!r} is not allowed", []
            why = sysctls.refusal(key)
            if why is None and sysctls.key_path(key) == "net/ipv4/tcp_congestion_control":
                why = kinds.congestion_refusal(value)
            if why:
                return why, []
            writes.append(sysctls.proc_path(key))
    return None, writes


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


def _operands_ok(tool: str, operands: list[str], keywords: set[str]) -> str | None:
    """Every operand is a keyword, an IPv4 address or prefix, a number, a MAC address or an
    interface name (net-tools read operands as words in order, without abbreviation)."""
    for arg in operands:
        ok = arg in keywords or ipv4(arg) or NUMBER_RE.match(arg) or MAC_RE.match(arg)
        if not ok and not (IFNAME_RE.match(arg) and not arg.startswith("-")):
            return f"{tool} argument {arg!r} is not allowed"
    return None


def _getopt(tool: str, args: list[str], shorts: str, longs: dict[str, int]):
    try:
        return getopt.parse(args, shorts, longs), None
    except getopt.GetoptError as err:
        return ([], []), f"{tool}: {err}"


IFCONFIG_WORDS = {
    "up", "down", "netmask", "broadcast", "mtu", "hw", "ether", "arp", "-arp", "promisc",
    "-promisc", "allmulti", "-allmulti", "add", "del", "metric", "txqueuelen",
}  # fmt: skip


def check_ifconfig(args: list[str]) -> str | None:
    """net-tools ifconfig reads its few options by hand, then words in order."""
    rest = list(args)
    while rest and rest[0] in ("-a", "-s", "-v"):
        rest.pop(0)
    return _operands_ok("ifconfig", rest, IFCONFIG_WORDS)


ROUTE_LONGS = {"family": getopt.REQUIRED, "verbose": getopt.NONE, "version": getopt.NONE,
               "extend": getopt.NONE, "fib": getopt.NONE, "cache": getopt.NONE,
               "numeric": getopt.NONE, "help": getopt.NONE}  # fmt: skip
ROUTE_WORDS = {
    "add", "del", "-net", "-host", "default", "netmask", "gw", "metric", "dev", "reject",
    "mss", "window", "irtt", "mod", "dyn", "reinstate",
}  # fmt: skip


ROUTE_SHORTS = "A:eCFhnNvV64"


def check_route(args: list[str]) -> str | None:
    # net-tools route renames -net/-host before getopt sees them (they are words).
    words = ["#" + a[1:] if a in ("-net", "-host") else a for a in args]
    (options, operands), why = _getopt("route", words, ROUTE_SHORTS, ROUTE_LONGS)
    if why:
        return why
    for opt in options:
        if opt.name in ("-A", "--family") and opt.value != "inet":
            return "route -A takes only inet"
    operands = ["-" + a[1:] if a.startswith("#") else a for a in operands]
    return _operands_ok("route", operands, ROUTE_WORDS)


ARP_LONGS = {"verbose": getopt.NONE, "version": getopt.NONE, "all": getopt.NONE,
             "delete": getopt.NONE, "file": getopt.NONE, "device": getopt.REQUIRED,
             "set": getopt.NONE, "protocol": getopt.REQUIRED, "hw-type": getopt.REQUIRED,
             "numeric": getopt.NONE, "use-device": getopt.NONE, "help": getopt.NONE}  # fmt: skip
ARP_REFUSED = {"-f": "arp -f reads a file; add entries with arp -s HOST MAC instead",
               "--file": "arp --file reads a file; add entries with arp -s HOST MAC instead",
               "-p": "the protocol is fixed", "--protocol": "the protocol is fixed",
               "-A": "the protocol is fixed"}  # fmt: skip


ARP_SHORTS = "A:H:adfp:nsei:t:vh?DNV"


def check_arp(args: list[str]) -> str | None:
    (options, operands), why = _getopt("arp", args, ARP_SHORTS, ARP_LONGS)
    if why:
        return why
    for opt in options:
        if opt.name in ARP_REFUSED:
            return ARP_REFUSED[opt.name]
        if opt.name in ("-H", "-t", "--hw-type") and opt.value != "ether":
            return "arp -H takes only ether"
        if opt.name in ("-i", "--device") and not IFNAME_RE.match(opt.value or ""):
            return "arp -i needs an interface name"
    if "temp" in operands:  # net-tools arp reads its words whole
        return f"'temp' makes an entry that ages out: {durable.WHY} (arp -s HOST MAC)"
    return _operands_ok("arp", operands, {"pub", "netmask", "dev"})


# iputils 20221126 ping: its getopt string, and the limits on the values allowed here.
PING_SHORTS = "h?4bRT:6F:N:aABc:CdDe:fi:I:l:Lm:M:nOp:qQ:rs:S:t:UvVw:W:"
PING_LIMITS = {"-c": (1, 5), "-W": (0, 3), "-i": (0.2, 1), "-s": (0, 1472), "-t": (1, 255),
               "-w": (1, 5)}  # fmt: skip
PING_FLAGS = {"-n", "-q", "-D", "-O", "-4", "-v", "-U"}
PING_PMTU = ("do", "want", "dont")  # -M: set DF and refuse to fragment, or not
# ping reads -c, -s, -t and -w as integers and -W, -i as decimals; ASCII digits only
# (Python's float() also takes "1e0", "1_0" and other scripts' digits, which ping refuses).
PING_INTEGER_RE = re.compile(r"\d{1,9}", re.ASCII)
PING_DECIMAL_RE = re.compile(r"\d{1,9}(\.\d{1,6})?", re.ASCII)


def check_ping(args: list[str]) -> str | None:
    (options, operands), why = _getopt("ping", args, PING_SHORTS, {})
    if why:
        return why
    values = {}
    for opt in options:
        if opt.name in PING_LIMITS:
            values[opt.name] = opt.value or ""
        elif opt.name == "-M":
            if opt.value not in PING_PMTU:
                return "ping -M takes do, want or dont (path MTU discovery)"
        elif opt.name == "-I":
            if not IFNAME_RE.match(opt.value or ""):
                return "ping -I needs an interface name"
            why = kinds.netdev_refusal(opt.value or "")
            if why:
                return why
        elif opt.name not in PING_FLAGS:
            return (
                f"ping option {opt.spelled} is not allowed; use ping -c N [-W S] [-i S] "
                "[-s SIZE] [-M do|want|dont] ADDRESS"
            )
    if len(operands) != 1 or not ipv4(operands[0]) or "/" in operands[0]:
        return "ping needs exactly one IPv4 address"
    if "-c" not in values:
        return "ping needs a count: ping -c N ADDRESS (N from 1 to 5)"
    for opt, value in values.items():
        low, high = PING_LIMITS[opt]
        pattern = PING_DECIMAL_RE if opt in ("-W", "-i") else PING_INTEGER_RE
        if not pattern.fullmatch(value):
            return f"ping {opt} needs a number, got {value!r}"
        number = float(value)
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
    "cat": check_cat,
    "ping": check_ping,
    "bridge": check_bridge,
    "traceroute": check_traceroute,
    "tracepath": check_tracepath,
    "dig": check_dig,
}
# The tools an agent may run, in the order prompts list them (sysctl has its own check,
# check_sysctl, because it also decides which /proc/sys files the jail leaves writable).
TOOL_NAMES = ("ip", "ifconfig", "route", "arp", "iptables", "iptables-save", "tc", "sysctl",
              "cat", "ping")  # fmt: skip
# Tools the incidents labs add (issue 28). Allowed everywhere, they only read; listed apart
# so the prompts of the apps before them (routing levels 1-5) stay as they were.
EXTRA_TOOL_NAMES = ("bridge", "traceroute", "tracepath", "dig")
# Every tool, in the order an incidents prompt lists them (svcctl is ours: svcctl.py).
ALL_TOOL_NAMES = (*TOOL_NAMES, *EXTRA_TOOL_NAMES)
