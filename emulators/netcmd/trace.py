"""`traceroute` and `tracepath` arguments, read as traceroute 2.1.2 and iputils 20221126 do.

traceroute parses with its own CLIF library, not getopt: short options cluster (`-nI`); a
short option that takes a value takes the rest of its token (`-m2`, so `-q1n` is -q "1n")
or, when it ends the token, the next one (`-nq 1`); a long option is spelled in full
(`--max=2` is refused by the tool itself) and takes its value after `=` only
(`--queries 1` is refused). Operands are the host and an optional packet length.
tracepath is plain getopt ("46nbh?l:m:p:V").

Allowed: numeric output, ICMP/TCP/UDP probes, the first and last TTL, queries per hop,
the wait, the port, don't-fragment and path-MTU discovery, one IPv4 address and a packet
length. Refused: AS-path lookups (`-A`: a whois query to the outside), source routes
(`-g`), modules and their options (`-M`, `-O`), and anything not listed.
"""

from __future__ import annotations

import re

from emulators.netcmd import getopt
from emulators.netcmd.iproute import ipv4

IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
# ASCII digits only (`\d` alone takes any script's, which the tools refuse); seconds may
# have a fraction, every other value is an integer to both tools.
NUMBER_RE = re.compile(r"\d{1,5}", re.ASCII)
SECONDS_RE = re.compile(r"\d{1,5}(\.\d{1,3})?", re.ASCII)
SECONDS = ("-w", "-z")

# traceroute's CLIF table: short letter -> (long name, takes a value); the long names of
# options without a short form are in TR_LONG_ONLY.
TR_OPTIONS = {
    "4": ("", False), "6": ("", False), "I": ("icmp", False), "T": ("tcp", False),
    "U": ("udp", False), "D": ("dccp", False), "F": ("dont-fragment", False),
    "f": ("first", True), "g": ("gateway", True), "i": ("interface", True),
    "m": ("max-hops", True), "N": ("sim-queries", True), "n": ("", False),
    "p": ("port", True), "t": ("tos", True), "l": ("flowlabel", True),
    "w": ("wait", True), "q": ("queries", True), "r": ("", False), "s": ("source", True),
    "z": ("sendwait", True), "e": ("extensions", False), "A": ("as-path-lookups", False),
    "M": ("module", True), "O": ("options", True), "V": ("version", False),
}  # fmt: skip
TR_LONG_ONLY = {"sport": True, "fwmark": True, "mtu": False, "back": False, "help": False}
TR_LONGS = {**{v[0]: v[1] for v in TR_OPTIONS.values() if v[0]}, **TR_LONG_ONLY}
_BY_LONG = {v[0]: k for k, v in TR_OPTIONS.items() if v[0]}
TR_FLAGS = {"-4", "-I", "-T", "-U", "-F", "-n", "-e", "--mtu", "--back"}
# (low, high) of each value allowed; -w takes seconds.
TR_LIMITS = {"-f": (1, 30), "-m": (1, 30), "-q": (1, 3), "-w": (0.1, 3), "-p": (1, 65535),
             "-N": (1, 16), "-z": (0, 0.5)}  # fmt: skip
TR_WHY = {
    "-A": "AS-path lookups query a whois server outside the lab",
    "-g": "source routes are not allowed",
    "-M": "traceroute modules are not allowed",
    "-O": "traceroute module options are not allowed",
    "-s": "the source address is the machine's own",
    "-6": "the lab is IPv4 only",
}
MAX_PACKET = 9000


def _canonical(name: str) -> str:
    """-x for a short option, or the short form of a long one when it has one."""
    if name.startswith("--"):
        short = _BY_LONG.get(name[2:])
        return f"-{short}" if short else name
    return name


def read_traceroute(args: list[str]) -> tuple[list[getopt.Option], list[str]]:
    """(options, operands) as CLIF reads them; GetoptError where the tool errs."""
    options: list[getopt.Option] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            operands += args[i:]
            break
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            if name not in TR_LONGS:
                raise getopt.GetoptError(f"Bad option `{token}'")
            if TR_LONGS[name] and not eq:
                raise getopt.GetoptError(f"Option `--{name}' requires an argument")
            if not TR_LONGS[name] and eq:
                raise getopt.GetoptError(f"Bad option `{token}' (with arg)")
            options.append(getopt.Option(_canonical(f"--{name}"), value if eq else None, token))
            continue
        if token.startswith("-") and token != "-":
            rest = token[1:]
            first = True
            while rest:
                char, rest = rest[0], rest[1:]
                if char not in TR_OPTIONS:
                    raise getopt.GetoptError(f"Bad option `-{char}'")
                if not TR_OPTIONS[char][1]:
                    options.append(getopt.Option(f"-{char}", None, token))
                    first = False
                    continue
                if rest and first:
                    options.append(getopt.Option(f"-{char}", rest, token))
                elif rest:  # CLIF gives a value only to the token's first option
                    raise getopt.GetoptError(f"Option `-{char}' requires an argument")
                else:
                    if i >= len(args):
                        raise getopt.GetoptError(f"Option `-{char}' requires an argument")
                    options.append(getopt.Option(f"-{char}", args[i], token))
                    i += 1
                rest = ""
            continue
        operands.append(token)
    return options, operands


def _limits(tool: str, values: dict[str, str], limits: dict[str, tuple[float, float]]):
    for name, value in values.items():
        low, high = limits[name]
        pattern = SECONDS_RE if name in SECONDS and tool == "traceroute" else NUMBER_RE
        if not pattern.fullmatch(value):
            return f"{tool} {name} needs a number, got {value!r}"
        if not low <= float(value) <= high:
            return f"{tool} {name} must be between {low:g} and {high:g}, got {value}"
    return None


def check_traceroute(args: list[str]) -> str | None:
    try:
        options, operands = read_traceroute(args)
    except getopt.GetoptError as err:
        return f"traceroute: {err}"
    values: dict[str, str] = {}
    for opt in options:
        if opt.name in TR_LIMITS:
            values[opt.name] = opt.value or ""
        elif opt.name == "-i":
            if not IFNAME_RE.match(opt.value or ""):
                return "traceroute -i needs an interface name"
        elif opt.name not in TR_FLAGS:
            why = TR_WHY.get(opt.name, "it is not available here")
            return (
                f"traceroute option {opt.spelled} is not allowed ({why}); use e.g. "
                "traceroute -n -q 1 -w 1 -m 15 ADDRESS"
            )
    why = _limits("traceroute", values, TR_LIMITS)
    if why:
        return why
    if not 1 <= len(operands) <= 2 or not _address(operands[0]):
        return "traceroute needs one IPv4 address (and optionally a packet length)"
    if len(operands) == 2 and not (operands[1].isdigit() and 28 <= int(operands[1]) <= MAX_PACKET):
        return f"the traceroute packet length must be from 28 to {MAX_PACKET} bytes"
    return None


TP_SHORTS = "46nbh?l:m:p:V"
TP_LIMITS = {"-l": (28, MAX_PACKET), "-m": (1, 30), "-p": (1, 65535)}
TP_FLAGS = {"-4", "-n", "-b"}


def check_tracepath(args: list[str]) -> str | None:
    try:
        options, operands = getopt.parse(args, TP_SHORTS)
    except getopt.GetoptError as err:
        return f"tracepath: {err}"
    values: dict[str, str] = {}
    for opt in options:
        if opt.name in TP_LIMITS:
            values[opt.name] = opt.value or ""
        elif opt.name not in TP_FLAGS:
            return (
                f"tracepath option {opt.spelled} is not allowed; use tracepath -n [-l LEN] ADDRESS"
            )
    why = _limits("tracepath", values, TP_LIMITS)
    if why:
        return why
    if len(operands) != 1 or not _address(operands[0]):
        return "tracepath needs exactly one IPv4 address"
    return None


def _address(word: str) -> bool:
    return ipv4(word) and "/" not in word
