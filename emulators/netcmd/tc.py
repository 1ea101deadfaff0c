"""`tc` arguments, read as tc (iproute2 6.1) reads them, with bounds on what they make the
kernel hold.

tc reads `tc [OPTIONS] OBJECT VERB ARGS`: options and object and verb with iproute2's
abbreviation rule (iproute.py); then each object's own loop (tc_qdisc.c, tc_class.c,
tc_filter.c) reads its words in a fixed order, some spelled in full (`strcmp`), some
abbreviated (`matches`), until the first word it does not know: that word is the KIND,
and the rest belongs to the kind's parser (q_tbf.c, q_htb.c, f_u32.c, m_gact.c, ...),
which again reads words in its own order. The tables below are those orders; a name
written `=name` must be spelled in full, any other may be abbreviated to any prefix and
the first name in the table's order that the word is a prefix of wins.

Allowed: the kinds in kinds.py (each a kernel module on most hosts) and, of each kind,
the parameters listed, with values read as tc reads them (sizes with tc's units, rates,
times, hex handles) and bounded: queue limits <= MAX_PACKETS packets or MAX_BYTES bytes,
sfq's divisor, flows and depth, fq_codel's flows and memory, htb's quantum, at most
MAX_ACTIONS actions and MAX_KEYS u32 keys per filter. Everything else (other kinds,
estimators, size tables, shared blocks, chains and chain templates, `police`, u32
hashing and offsets into the next header) is refused with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from emulators.netcmd import durable, kinds
from emulators.netcmd.iproute import (
    TC_OPTIONS,
    TC_OPTIONS_ALLOWED,
    _globals,
    dispatch,
    ipv4,
    tokens_ok,
)

MAX_PACKETS = 10240
MAX_BYTES = 32 << 20
MAX_ACTIONS = 4
MAX_KEYS = 8

# tc/tc.c cmds: objects in order; each object's verbs (tc_qdisc.c do_qdisc, ...).
TC_OBJECTS = ["qdisc", "class", "filter", "chain", "actions", "monitor", "exec", "help"]
TC_VERBS = [("add", "add"), ("delete", "delete"), ("change", "change"), ("replace", "replace"),
            ("link", "link"), ("show", "show"), ("list", "show"), ("lst", "show"),
            ("get", "get"), ("help", "help")]  # fmt: skip
TC_ALLOWED = {"add", "delete", "change", "replace", "show", "get", "help"}
CHAIN_ALLOWED = {"show", "get", "help"}


class Refusal(Exception):
    pass


# -- values, as tc_util.c reads them ---------------------------------------------------
_NUM = r"(\d+(?:\.\d+)?)"
SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1 << 20, "mb": 1 << 20,
              "g": 1 << 30, "gb": 1 << 30, "kbit": 1024 / 8, "mbit": (1 << 20) / 8,
              "gbit": (1 << 30) / 8}  # fmt: skip
_SIZE_RE = re.compile(_NUM + r"([a-z]*)(?:/(\d+))?$", re.IGNORECASE)
_RATE_RE = re.compile(
    _NUM + r"(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps|kibit|mibit|gibit|tibit|"
    r"kibps|mibps|gibps|tibps)?$|" + _NUM + "%$",
    re.IGNORECASE,
)
TIME_UNITS = {"": 1e-6, "s": 1, "sec": 1, "secs": 1, "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3,
              "us": 1e-6, "usec": 1e-6, "usecs": 1e-6}  # fmt: skip
_TIME_RE = re.compile(_NUM + r"([a-z]*)$", re.IGNORECASE)
_HANDLE_RE = re.compile(r"^(?:[0-9a-fA-F]{1,4}:?|none)$")
_CLASSID_RE = re.compile(r"^(?:[0-9a-fA-F]{0,4}:[0-9a-fA-F]{0,4}|root|none)$")
_INT_RE = re.compile(r"^(?:0[xX][0-9a-fA-F]{1,8}|\d{1,10})$")

Reader = Callable[[str], None]


def size(limit: int) -> Reader:
    def read(text: str) -> None:
        m = _SIZE_RE.match(text)
        if not m or m.group(2).lower() not in SIZE_UNITS:
            raise Refusal(f"{text!r} is not a size (a number with b, k, kb, m, mb, kbit, ...)")
        value = float(m.group(1)) * SIZE_UNITS[m.group(2).lower()]
        if value > limit:
            raise Refusal(f"{text} is more than {limit} bytes, the most allowed here")

    return read


def number(low: int, high: int) -> Reader:
    def read(text: str) -> None:
        if not _INT_RE.match(text):
            raise Refusal(f"{text!r} is not a number")
        value = int(text, 0) if text.lower().startswith("0x") else int(text)
        if not low <= value <= high:
            raise Refusal(f"{text} is not between {low} and {high}")

    return read


def hexnumber(high: int) -> Reader:
    def read(text: str) -> None:
        if not re.fullmatch(r"(0[xX])?[0-9a-fA-F]{1,8}", text) or int(text, 16) > high:
            raise Refusal(f"{text!r} is not a hexadecimal number up to {high:#x}")

    return read


def time(limit_s: float) -> Reader:
    def read(text: str) -> None:
        m = _TIME_RE.match(text)
        if not m or m.group(2).lower() not in TIME_UNITS:
            raise Refusal(f"{text!r} is not a time (a number with s, ms or us)")
        if float(m.group(1)) * TIME_UNITS[m.group(2).lower()] > limit_s:
            raise Refusal(f"{text} is longer than {limit_s:g} s, the most allowed here")

    return read


def rate(text: str) -> None:
    if not _RATE_RE.match(text):
        raise Refusal(f"{text!r} is not a rate (e.g. 1mbit, 100kbit, 10%)")


def word(*allowed: str) -> Reader:
    def read(text: str) -> None:
        if text not in allowed:
            raise Refusal(f"{text!r} is not one of: {', '.join(allowed)}")

    return read


def handle(text: str) -> None:
    if not _HANDLE_RE.match(text):
        raise Refusal(f"{text!r} is not a qdisc handle (MAJOR: in hexadecimal, e.g. 1:)")


def classid(text: str) -> None:
    if not _CLASSID_RE.match(text) or text == ":":
        raise Refusal(f"{text!r} is not a class id (MAJOR:MINOR in hexadecimal, e.g. 1:10)")


def device(text: str) -> None:
    why = tokens_ok([text])
    if why or not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", text):
        raise Refusal(why or f"{text!r} is not an interface name")


FLAG = None  # a parameter that takes no value
REFUSED = "refused"  # a parameter tc knows and this sandbox does not allow

# Each kind's parameters in its parser's order: (name, reader, or FLAG, or REFUSED).
Table = list[tuple[str, Reader | str | None]]
_TIME = time(10.0)
_PKTS = number(1, MAX_PACKETS)
_BYTES = size(MAX_BYTES)
_LINKLAYER = word("ethernet", "atm", "adsl")
QDISC_PARAMS: dict[str, Table] = {
    # q_fifo.c: pfifo counts packets, bfifo bytes.
    "pfifo": [("=limit", number(1, MAX_PACKETS)), ("=help", REFUSED)],
    "bfifo": [("=limit", _BYTES), ("=help", REFUSED)],
    "pfifo_fast": [],
    "ingress": [],
    "clsact": [],
    # q_tbf.c
    "tbf": [("limit", _BYTES), ("latency", _TIME), ("burst", _BYTES), ("=buffer", _BYTES),
            ("=maxburst", _BYTES), ("=mtu", size(1 << 20)), ("=minburst", size(1 << 20)),
            ("=mpu", number(0, 65535)), ("=rate", rate), ("peakrate", rate),
            ("overhead", number(0, 65535)), ("linklayer", _LINKLAYER), ("=help", REFUSED)],
    # q_htb.c htb_parse_opt
    "htb": [("r2q", number(1, 100000)), ("default", hexnumber(0xFFFF)), ("debug", REFUSED),
            ("direct_qlen", _PKTS), ("offload", REFUSED)],
    # q_sfq.c: all spelled in full; the RED options are refused. sfq allocates a slot per
    # flow up front: 128 (its default) keeps one sfq near 10 KB of kernel memory, so the
    # tc bound (budget.py) bounds what a device's qdiscs hold.
    "sfq": [("=quantum", size(65535)), ("=perturb", number(0, 3600)),
            ("=limit", number(2, MAX_PACKETS)), ("=divisor", number(1, 1024)),
            ("=flows", number(1, 128)), ("=depth", number(1, 127)), ("=headdrop", FLAG),
            *((f"={n}", REFUSED) for n in ("redflowlimit", "min", "max", "avpkt", "burst",
                                            "probability", "ecn", "harddrop", "help"))],
    # q_prio.c: `priomap` is followed by up to 16 band numbers (read in check_qdisc).
    "prio": [("=bands", number(2, 16)), ("=priomap", FLAG), ("=multiqueue", REFUSED),
             ("=help", REFUSED)],
    # q_fq_codel.c
    "fq_codel": [("=limit", _PKTS), ("=flows", number(1, 1024)), ("=quantum", size(65535)),
                 ("=target", _TIME), ("=ce_threshold", _TIME), ("=ce_threshold_selector",
                                                                REFUSED),
                 ("=memory_limit", _BYTES), ("=interval", _TIME), ("=drop_batch",
                                                                  number(1, 64)),
                 ("=ecn", FLAG), ("=noecn", FLAG), ("=help", REFUSED)],
}  # fmt: skip
# q_htb.c htb_parse_class_opt
CLASS_PARAMS: dict[str, Table] = {
    "htb": [("prio", number(0, 7)), ("mtu", size(65535)), ("mpu", number(0, 65535)),
            ("quantum", size(200000)), ("burst", _BYTES), ("=buffer", _BYTES),
            ("=maxburst", _BYTES), ("cburst", _BYTES), ("=cbuffer", _BYTES),
            ("=cmaxburst", _BYTES), ("=ceil", rate), ("=rate", rate),
            ("overhead", number(0, 65535)), ("linklayer", _LINKLAYER), ("=help", REFUSED)],
}  # fmt: skip
# The filters' own words; `action` and `match` are read in check_filter.
FILTER_PARAMS: dict[str, Table] = {
    # f_u32.c u32_parse_opt
    "u32": [("match", FLAG), ("offset", REFUSED), ("hashkey", REFUSED), ("classid", classid),
            ("=flowid", classid), ("divisor", number(1, 256)), ("order", number(0, 0xFFF)),
            ("=link", handle), ("=ht", classid), ("=indev", REFUSED), ("=skip_hw", FLAG),
            ("=skip_sw", FLAG), ("action", FLAG), ("police", REFUSED), ("=sample", REFUSED),
            ("=help", REFUSED)],
    # f_fw.c
    "fw": [("classid", classid), ("flowid", classid), ("police", REFUSED), ("action", FLAG),
           ("=indev", REFUSED), ("=help", REFUSED)],
    # f_matchall.c
    "matchall": [("classid", classid), ("=flowid", classid), ("=skip_hw", FLAG),
                 ("=skip_sw", FLAG), ("action", FLAG), ("=help", REFUSED)],
}  # fmt: skip
# The objects' loops (before the kind): tc_qdisc.c, tc_class.c, tc_filter.c.
QDISC_WORDS: Table = [
    ("=dev", device), ("=handle", handle), ("=root", FLAG), ("=clsact", "kind"),
    ("=ingress", "kind"), ("=parent", classid), ("estimator", REFUSED), ("stab", REFUSED),
    ("ingress_block", REFUSED), ("egress_block", REFUSED), ("help", REFUSED),
]  # fmt: skip
CLASS_WORDS: Table = [
    ("=dev", device), ("=classid", classid), ("=handle", REFUSED), ("=root", FLAG),
    ("=parent", classid), ("estimator", REFUSED), ("help", REFUSED),
]  # fmt: skip
FILTER_WORDS: Table = [
    ("=dev", device), ("=root", FLAG), ("=ingress", FLAG), ("=egress", FLAG),
    ("=parent", classid), ("=handle", hexnumber(0xFFFFFFFF)), ("preference", number(1, 0xFFFF)),
    ("priority", number(1, 0xFFFF)), ("protocol", word("ip", "ipv6", "all", "arp", "802.1Q")),
    ("chain", REFUSED), ("estimator", REFUSED), ("block", REFUSED), ("help", REFUSED),
]  # fmt: skip
WHY = {
    "estimator": "rate estimators are not available here",
    "stab": "size tables are not available here",
    "ingress_block": "shared filter blocks are not available here",
    "egress_block": "shared filter blocks are not available here",
    "block": "shared filter blocks are not available here",
    "chain": "filter chains are not available here",
    "police": "policers are not available here; use a tbf or htb qdisc",
    "help": "ask for what you need instead of tc's help",
}


def _lookup(word: str, table: Table) -> tuple[str, Reader | str | None] | None:
    for name, reader in table:
        if dispatch(word, [name]) is not None:
            return name.lstrip("="), reader
    return None


def _read(args: list[str], i: int, table: Table, what: str) -> tuple[int, str | None]:
    """Read one word of `table` at args[i] (and its value); (next index, its name), or
    (i, None) when args[i] is no word of the table."""
    found = _lookup(args[i], table)
    if found is None:
        return i, None
    name, reader = found
    if reader == REFUSED:
        raise Refusal(f"{what} {args[i]} ({name}): {WHY.get(name, 'it is not allowed here')}")
    if reader is FLAG or reader == "kind":
        return i + 1, name
    if i + 1 >= len(args):
        raise Refusal(f"{what} {name} needs a value")
    try:
        reader(args[i + 1])  # type: ignore[operator]
    except Refusal as err:
        raise Refusal(f"{what} {name}: {err}") from None
    return i + 2, name


def _kind_params(args: list[str], table: Table, what: str) -> None:
    i = 0
    while i < len(args):
        i, name = _read(args, i, table, what)
        if name is None:
            raise Refusal(f'{what}: unknown parameter "{args[i]}"')


def _objects_words(args: list[str], table: Table, obj: str) -> tuple[str | None, int]:
    """Read an object's words up to its kind: (kind or None, index after the kind)."""
    i = 0
    while i < len(args):
        j, name = _read(args, i, table, f"tc {obj}")
        if name is None:
            kind = args[i]
            return kind, i + 1
        if name in ("ingress", "clsact") and obj == "qdisc":
            return name, j
        i = j
    return None, i


def check_qdisc(args: list[str]) -> None:
    kind, i = _objects_words(args, QDISC_WORDS, "qdisc")
    if kind is None:
        return
    if kind not in kinds.QDISC_KINDS:
        raise Refusal(f"the qdisc kind {kind!r} is not available here; allowed: "
                      + ", ".join(kinds.QDISC_KINDS))  # fmt: skip
    rest = args[i:]
    if kind == "pfifo_fast" or kind in ("ingress", "clsact"):
        if rest:
            raise Refusal(f"qdisc '{kind}' does not support option parsing")
        return
    if kind == "prio" and "priomap" in rest:
        at = rest.index("priomap")
        bands = [w for w in rest[at + 1 : at + 17] if re.fullmatch(r"\d{1,2}", w)]
        for band in bands:
            if int(band) > 15:
                raise Refusal(f"prio priomap: band {band} is more than 15")
        rest = rest[:at] + rest[at + 1 + len(bands) :]
    _kind_params(rest, QDISC_PARAMS[kind], kind)


def check_class(args: list[str]) -> None:
    kind, i = _objects_words(args, CLASS_WORDS, "class")
    if kind is None:
        return
    if kind not in kinds.CLASS_KINDS:
        raise Refusal(f"the class kind {kind!r} is not available here; allowed: "
                      + ", ".join(kinds.CLASS_KINDS))  # fmt: skip
    _kind_params(args[i:], CLASS_PARAMS[kind], kind)


def _actions(args: list[str], i: int, count: int) -> tuple[int, int]:
    """m_action.c parse_action after `action`: a kind or a gact verdict, again and again;
    stops at classid/flowid or the end. (next index, actions so far)."""
    while True:
        if i >= len(args):
            raise Refusal("action needs a verdict, e.g. action drop")
        word = args[i]
        if word == "gact":
            i += 1
            word = args[i] if i < len(args) else ""
        if word not in kinds.GACT_VERDICTS:
            raise Refusal(
                f"the action {word!r} is not available here; allowed: "
                + ", ".join(kinds.GACT_VERDICTS)
                + " (gact)"
            )
        count += 1
        if count > MAX_ACTIONS:
            raise Refusal(f"a filter may have at most {MAX_ACTIONS} actions here")
        i += 1
        if i < len(args) and args[i] == "action":
            i += 1
            continue
        return i, count


_SELECTOR_IP: Table = [
    ("=src", "prefix"), ("=dst", "prefix"), ("=tos", "pair"), ("=dsfield", "pair"),
    ("=ihl", "pair"), ("=protocol", "pair"), ("=dport", "pair"), ("=sport", "pair"),
    ("=icmp_type", "pair"), ("=icmp_code", "pair"),
]  # fmt: skip
_VALUE = number(0, 0xFFFFFFFF)


def _match(args: list[str], i: int) -> int:
    """f_u32.c parse_selector after `match`: `ip FIELD ...` or `u32|u16|u8 V M at OFF`."""
    what = args[i] if i < len(args) else ""
    if what in ("u32", "u16", "u8"):
        if len(args) < i + 5 or args[i + 3] != "at":
            raise Refusal(f"match {what} needs VALUE MASK at OFFSET")
        _VALUE(args[i + 1])
        _VALUE(args[i + 2])
        number(0, 1024)(args[i + 4])
        return i + 5
    if what != "ip":
        raise Refusal(f"u32 match {what!r} is not available here; use match ip or match u32")
    field = _lookup(args[i + 1] if i + 1 < len(args) else "", _SELECTOR_IP)
    if field is None:
        raise Refusal("match ip takes src, dst, protocol, tos, dsfield, ihl, sport, dport, "
                      "icmp_type or icmp_code")  # fmt: skip
    if field[1] == "prefix":
        value = args[i + 2] if i + 2 < len(args) else ""
        if not ipv4(value):
            raise Refusal(f"match ip {field[0]} needs an IPv4 prefix, not {value!r}")
        return i + 3
    if len(args) < i + 4:
        raise Refusal(f"match ip {field[0]} needs VALUE MASK")
    _VALUE(args[i + 2])
    _VALUE(args[i + 3])
    return i + 4


def check_filter(args: list[str]) -> None:
    kind, i = _objects_words(args, FILTER_WORDS, "filter")
    if kind is None:
        return
    if kind not in kinds.FILTER_KINDS:
        raise Refusal(f"the filter kind {kind!r} is not available here; allowed: "
                      + ", ".join(kinds.FILTER_KINDS))  # fmt: skip
    table, actions, keys = FILTER_PARAMS[kind], 0, 0
    while i < len(args):
        j, name = _read(args, i, table, kind)
        if name is None:
            raise Refusal(f'{kind}: unknown parameter "{args[i]}"')
        if name == "action":
            j, actions = _actions(args, j, actions)
        elif name == "match":
            j = _match(args, j)
            keys += 1
            if keys > MAX_KEYS:
                raise Refusal(f"a u32 filter may have at most {MAX_KEYS} matches here")
        i = j


def check_tc(args: list[str]) -> str | None:
    rest, why = _globals(args, TC_OPTIONS, TC_OPTIONS_ALLOWED, "tc")
    if why:
        return why
    if not rest:
        return "tc needs an object: tc qdisc, tc class or tc filter"
    obj = dispatch(rest[0], TC_OBJECTS)
    if obj not in ("qdisc", "class", "filter", "chain"):
        return f"'tc {rest[0]}' is not allowed; use tc qdisc, class, filter or chain"
    verb = dispatch(rest[1], TC_VERBS) if len(rest) > 1 else "show"
    allowed = CHAIN_ALLOWED if obj == "chain" else TC_ALLOWED
    if verb not in allowed:
        return f"'tc {obj} {rest[1]}' is not allowed; use one of: " + ", ".join(sorted(allowed))
    why = tokens_ok(rest[2:])
    if why or verb in ("show", "help") or obj == "chain":
        return why
    try:
        {"qdisc": check_qdisc, "class": check_class, "filter": check_filter}[obj](rest[2:])
    except Refusal as err:
        return str(err)
    # What tc would accept may still make state that changes by itself (durable.py).
    return durable.tc_refusal(obj, verb, rest[2:])
