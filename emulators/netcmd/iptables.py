"""`iptables` and `iptables-save` arguments, read as iptables 1.8.9 (nft) reads them.

iptables parses with getopt_long over a table that grows as it goes: `-m NAME` (and
`-p tcp|udp|icmp`, which loads that protocol's match) merges the match's options, `-j
NAME` the target's. A long option may be any unique prefix of a name in the table at that
point (`--mo` is `--modprobe`), `--opt=value` and `--opt value` both work, and short
options cluster and take attached values (`-tnat`, `-nvL`). `read_iptables` does the same
with the matches and targets allowed here, so every option is checked under the name
iptables gives it.

Allowed: the filter, nat, mangle and raw tables; the commands that list, add, insert,
replace, delete and flush rules and chains; the matches and targets in MATCHES/TARGETS.
Refused, in any spelling: --modprobe (runs a program), other tables, and every match or
target not listed (BPF programs, cgroup paths, sockets, logging into the host's kernel
log, sysfs-creating targets). Kernel memory per rule is bounded here: one rule holds at
most MAX_MATCHES matches, and hash tables and name lists have caps (a memory cgroup does
not charge them: xt_hashlimit allocates with GFP_KERNEL).
"""

from __future__ import annotations

import re

from emulators.netcmd import durable, getopt, kinds
from emulators.netcmd.getopt import NONE, OPTIONAL, REQUIRED

R, N, O = REQUIRED, NONE, OPTIONAL  # noqa: E741 (the has_arg kinds, as in getopt.h)
SHORTS = "-:A:C:D:E:F::I:L::M:N:P:VX::Z::c:d:i:j:o:p:s:t:R:S::W::46bfg:h::m:nvw::x0"
BASE = {
    "append": R, "delete": R, "check": R, "insert": R, "replace": R, "list": O,
    "list-rules": O, "flush": O, "zero": O, "new-chain": R, "delete-chain": O,
    "rename-chain": R, "policy": R, "source": R, "destination": R, "src": R, "dst": R,
    "protocol": R, "in-interface": R, "jump": R, "table": R, "match": R, "numeric": N,
    "out-interface": R, "verbose": N, "wait": O, "wait-interval": O, "exact": N,
    "fragments": N, "version": N, "help": O, "line-numbers": N, "modprobe": R,
    "set-counters": R, "goto": R, "ipv4": N, "ipv6": N,
}  # fmt: skip
SHORT_NAMES = {
    "A": "append", "C": "check", "D": "delete", "E": "rename-chain", "F": "flush",
    "I": "insert", "L": "list", "M": "modprobe", "N": "new-chain", "P": "policy",
    "V": "version", "X": "delete-chain", "Z": "zero", "c": "set-counters",
    "d": "destination", "i": "in-interface", "j": "jump", "o": "out-interface",
    "p": "protocol", "s": "source", "t": "table", "R": "replace", "S": "list-rules",
    "W": "wait-interval", "4": "ipv4", "6": "ipv6", "f": "fragments", "g": "goto",
    "h": "help", "m": "match", "n": "numeric", "v": "verbose", "w": "wait", "x": "exact",
    "0": "line-numbers",
}  # fmt: skip
REFUSED = {
    "modprobe": "--modprobe runs a program; it is not allowed",
    # iptables-nft itself exits on -6; said here so the agent learns why.
    "ipv6": "this iptables writes the IPv4 tables only (-6/--ipv6 is refused)",
}
TABLES = {"filter", "nat", "mangle", "raw"}
_PORTS = {"sport": R, "source-port": R, "dport": R, "destination-port": R}
MATCHES: dict[str, dict[str, int]] = {
    "tcp": {**_PORTS, "tcp-flags": R, "syn": N, "tcp-option": R},
    "udp": dict(_PORTS),
    "icmp": {"icmp-type": R},
    "conntrack": {n: R for n in ("ctstate", "ctproto", "ctorigsrc", "ctorigdst", "ctreplsrc",
                                 "ctrepldst", "ctorigsrcport", "ctorigdstport", "ctreplsrcport",
                                 "ctrepldstport", "ctstatus", "ctexpire", "ctdir")},
    "state": {"state": R},
    "multiport": {"sports": R, "source-ports": R, "dports": R, "destination-ports": R,
                  "ports": R},
    "iprange": {"src-range": R, "dst-range": R},
    "mac": {"mac-source": R},
    "comment": {"comment": R},
    "length": {"length": R},
    "ttl": {"ttl-eq": R, "ttl-gt": R, "ttl-lt": R},
    "mark": {"mark": R},
    "addrtype": {"src-type": R, "dst-type": R, "limit-iface-in": N, "limit-iface-out": N},
    "pkttype": {"pkt-type": R},
    "string": {"algo": R, "from": R, "to": R, "string": R, "hex-string": R, "icase": N},
    "tos": {"tos": R},
    "dscp": {"dscp": R, "dscp-class": R},
}  # fmt: skip
TARGETS: dict[str, dict[str, int]] = {
    "ACCEPT": {}, "DROP": {}, "RETURN": {}, "NOTRACK": {},
    "REJECT": {"reject-with": R},
    "MASQUERADE": {"to-ports": R, "random": N, "random-fully": N},
    "SNAT": {"to-source": R, "random": N, "random-fully": N, "persistent": N},
    "DNAT": {"to-destination": R, "random": N, "persistent": N},
    "REDIRECT": {"to-ports": R, "random": N},
    "MARK": {n: R for n in ("set-mark", "set-xmark", "and-mark", "or-mark", "xor-mark")},
    "CONNMARK": {**{n: R for n in ("set-mark", "set-xmark", "and-mark", "or-mark", "xor-mark",
                                   "mask", "nfmask", "ctmask", "left-shift-mark",
                                   "right-shift-mark")},
                 "save-mark": N, "restore-mark": N},
    "TCPMSS": {"set-mss": R, "clamp-mss-to-pmtu": N},
    "DSCP": {"set-dscp": R, "set-dscp-class": R},
    "TOS": {"set-tos": R, "and-tos": R, "or-tos": R, "xor-tos": R},
    "TTL": {"ttl-set": R, "ttl-dec": R, "ttl-inc": R},
    "CLASSIFY": {"set-class": R},
}  # fmt: skip
TARGET_WHY = {
    "LOG": "it writes to the host's kernel log", "NFLOG": "it writes to the host's logs",
    "ULOG": "it writes to the host's logs", "TRACE": "it writes to the host's kernel log",
    "AUDIT": "it writes to the host's audit log",
    "IDLETIMER": "it creates files in the host's sysfs", "LED": "it creates host LED triggers",
    "CT": "conntrack helpers and zones are fixed", "SECMARK": "security marks are fixed",
    "CONNSECMARK": "security marks are fixed", "TEE": "packets are not copied elsewhere",
    "NFQUEUE": "there is no userspace queue", "QUEUE": "there is no userspace queue",
}  # fmt: skip
# Matches whose verdict changes with time or with the traffic before (emulators/netcmd/
# durable.py): a rule using one passes the probes and behaves otherwise later.
MATCH_WHY = {
    name: f"its verdict changes with {what}: {durable.WHY}"
    for name, what in (
        ("limit", "the rate of packets seen"),
        ("hashlimit", "the rate of packets seen"),
        ("recent", "time and the packets seen before"),
        ("connlimit", "the connections open at the time"),
    )
}
MAX_MATCHES = 6
# Caps on what one rule can make the kernel hold.
NUMBER_CAPS = {"from": 65535, "to": 65535}
TEXT_CAPS = {"comment": 256, "string": 128, "hex-string": 256}
TOKEN_RE = re.compile(r"^[A-Za-z0-9_.:/,+=@%!|-]*$")
_CHAIN_RE = re.compile(r"^[A-Za-z0-9_.-]{1,28}$")
_PROTO_MATCH = {"tcp": "tcp", "6": "tcp", "udp": "udp", "17": "udp", "icmp": "icmp", "1": "icmp"}


class Refusal(Exception):
    pass


def _value_ok(name: str, value: str | None) -> None:
    if value is None:
        return
    if name in TEXT_CAPS and len(value) > TEXT_CAPS[name]:
        raise Refusal(f"--{name} is limited to {TEXT_CAPS[name]} characters")
    if name not in ("comment", "string") and not TOKEN_RE.match(value):
        raise Refusal(f"the value {value!r} of --{name} has characters that are not allowed")
    if name == "algo" and value not in kinds.STRING_ALGOS:
        raise Refusal(f"--algo takes {' or '.join(kinds.STRING_ALGOS)} here, not {value!r}")
    if name in NUMBER_CAPS:
        if not value.isdigit():
            raise Refusal(f"--{name} takes a number, not {value!r}")
        if int(value) > NUMBER_CAPS[name]:
            raise Refusal(f"--{name} is at most {NUMBER_CAPS[name]} here (kernel memory per rule)")


def read_iptables(args: list[str]) -> list[tuple[str, str | None]]:
    """(long option name, value) for every option, in order; raises Refusal."""
    longs = dict(BASE)
    loaded: list[str] = []
    out: list[tuple[str, str | None]] = []
    i = 0
    table = getopt._shorts(SHORTS)
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            raise Refusal("'--' is not allowed in an iptables command")
        if token.startswith("--"):
            raw, eq, value = token[2:].partition("=")
            try:
                name = getopt.resolve_long(raw, longs)
            except getopt.GetoptError as err:
                raise Refusal(f"iptables: {err}") from None
            kind = longs[name]
            if kind == NONE and eq:
                raise Refusal(f"iptables: option '--{name}' doesn't allow an argument")
            if kind == REQUIRED and not eq:
                if i >= len(args):
                    raise Refusal(f"iptables: option '--{name}' requires an argument")
                value, i = args[i], i + 1
            pair = (name, value if (eq or kind == REQUIRED) else None)
        elif token.startswith("-") and len(token) > 1:
            rest = token[1:]
            pairs = []
            while rest:
                char, rest = rest[0], rest[1:]
                if char not in table or char not in SHORT_NAMES:
                    raise Refusal(f"iptables: invalid option -- '{char}'")
                kind = table[char]
                if kind == NONE:
                    pairs.append((SHORT_NAMES[char], None))
                    continue
                if rest:
                    pairs.append((SHORT_NAMES[char], rest))
                elif kind == REQUIRED:
                    if i >= len(args):
                        raise Refusal(f"iptables: option requires an argument -- '{char}'")
                    pairs.append((SHORT_NAMES[char], args[i]))
                    i += 1
                else:
                    pairs.append((SHORT_NAMES[char], None))
                rest = ""
            for pair in pairs:
                _take(pair, longs, loaded, out)
            continue
        else:
            out.append(("", token))  # an operand: "!", a chain, a rule number, a policy
            continue
        _take(pair, longs, loaded, out)
    return out


def _take(
    pair: tuple[str, str | None], longs: dict[str, int], loaded: list[str], out: list
) -> None:
    name, value = pair
    if name in REFUSED:
        raise Refusal(REFUSED[name])
    _value_ok(name, value)
    if name == "table" and value not in TABLES:
        raise Refusal(f"iptables -t takes one of: {', '.join(sorted(TABLES))}")
    if name == "match" or (name == "protocol" and value in _PROTO_MATCH):
        match = value if name == "match" else _PROTO_MATCH[value or ""]
        if match in MATCH_WHY:
            raise Refusal(f"the iptables match {match!r} is not allowed: {MATCH_WHY[match]}")
        if match not in MATCHES:
            raise Refusal(f"the iptables match {match!r} is not available here; allowed: "
                          + ", ".join(sorted(MATCHES)))  # fmt: skip
        loaded.append(match)
        if len(loaded) > MAX_MATCHES:
            raise Refusal(f"one rule may use at most {MAX_MATCHES} matches here")
        longs.update(MATCHES[match])
    if name in ("jump", "goto"):
        target = value or ""
        if target in TARGET_WHY:
            raise Refusal(f"the target {target} is not allowed: {TARGET_WHY[target]}")
        if target in TARGETS:
            longs.update(TARGETS[target])
        elif target.isupper() or not _CHAIN_RE.match(target):
            raise Refusal(f"the target {target!r} is not available here; allowed: "
                          + ", ".join(sorted(TARGETS)) + " or a chain of yours")  # fmt: skip
    out.append(pair)


def check_iptables(args: list[str]) -> str | None:
    if not args:
        return "iptables needs a command, e.g. iptables -L -n -v"
    try:
        options = read_iptables(args)
    except Refusal as err:
        return str(err)
    for name, value in options:
        if name == "" and value is not None and not TOKEN_RE.match(value):
            return f"the argument {value!r} has characters that are not allowed"
    return None


SAVE_LONGS = {"binary": N, "counters": N, "dump": N, "table": R, "modprobe": R, "file": R,
              "version": N}  # fmt: skip


def check_iptables_save(args: list[str]) -> str | None:
    try:
        options, operands = getopt.parse(args, "bcdt:M:f:V", SAVE_LONGS)
    except getopt.GetoptError as err:
        return f"iptables-save: {err}"
    if operands:
        return "iptables-save takes only -c and -t TABLE"
    for opt in options:
        if opt.name in ("-M", "--modprobe"):
            return "--modprobe runs a program; it is not allowed"
        if opt.name in ("-f", "--file"):
            return "iptables-save prints the rules; writing them to a file is not allowed"
        if opt.name in ("-t", "--table") and opt.value not in TABLES:
            return f"iptables-save -t takes one of: {', '.join(sorted(TABLES))}"
    return None
