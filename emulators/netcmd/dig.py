"""`dig` arguments, read as BIND 9.18's dig reads them.

dig walks its argv by hand: `@SERVER`; `+[no]KEYWORD[=VALUE]` query options, where a
keyword may be abbreviated (`+sh` is `+short`; 9.18 matches by its leading letters and
then checks that what was typed is a prefix of the full name); dash options, where the
boolean ones cluster (`-4r`) and the ones taking a value take the rest of the token or
the next one (`-tA`, `-t A`); other words are a name, a type or a class.

Allowed: one `@` server (an IPv4 address: without it dig would read the machine's
resolv.conf), names, the types and classes in TYPES/CLASSES, `-x ADDR`, `-t`, `-c`,
`-q`, `-p`, `-4`, `-r`, and the query options in PLUS_ALLOWED, each under the one name
dig gives it. Refused: files (`-f`, `-k`), keys (`-y`), `+trace` and `+nssearch` (they
walk the DNS from its root, outside the lab), transports other than UDP/TCP (`+tls`,
`+https`), and any keyword that is not a unique prefix of an allowed one.
"""

from __future__ import annotations

import re

from emulators.netcmd.iproute import ipv4

# dig 9.18's query options (dighost/dig.c plus_option), every full name.
PLUS_ALL = (
    "aaflag", "aaonly", "additional", "adflag", "all", "answer", "authority", "badcookie",
    "besteffort", "bufsize", "cdflag", "class", "cmd", "comments", "cookie", "crypto",
    "defname", "dns64prefix", "dnssec", "domain", "dscp", "edns", "ednsflags",
    "ednsnegotiation", "ednsopt", "expire", "fail", "header-only", "http-plain",
    "http-plain-get", "http-plain-post", "https", "https-get", "https-post", "identify",
    "idnin", "idnout", "ignore", "keepalive", "keepopen", "mapped", "multiline", "ndots",
    "nsid", "nssearch", "onesoa", "opcode", "padding", "qid", "qr", "question", "raflag",
    "rdflag", "recurse", "retry", "rrcomments", "search", "short", "showbadcookie",
    "showsearch", "sigchase", "split", "stats", "subnet", "tcflag", "tcp", "timeout", "tls",
    "tls-ca", "tls-certfile", "tls-hostname", "tls-keyfile", "topdown", "trace", "tries",
    "trusted-key", "ttlid", "ttlunits", "unexpected", "unknownformat", "vc", "yaml", "zflag",
)  # fmt: skip
# Allowed keywords -> the value they take: None none, else (low, high) of a number.
PLUS_ALLOWED: dict[str, tuple[int, int] | None] = {
    "aaflag": None, "additional": None, "adflag": None, "all": None, "answer": None,
    "authority": None, "cdflag": None, "class": None, "cmd": None, "comments": None,
    "identify": None, "multiline": None, "qr": None, "question": None, "recurse": None,
    "rrcomments": None, "short": None, "stats": None, "tcp": None, "ttlid": None,
    "ttlunits": None, "vc": None, "timeout": (1, 3), "tries": (1, 3), "retry": (0, 2),
}  # fmt: skip
PLUS_WHY = {
    "trace": "+trace walks the DNS from its root servers, outside the lab",
    "nssearch": "+nssearch walks the DNS from outside the lab",
    "tls": "only UDP and TCP are used here", "https": "only UDP and TCP are used here",
}  # fmt: skip
TYPES = {"A", "AAAA", "ANY", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT"}
CLASSES = {"IN", "CH"}
DASH_FLAGS = "46dhimnruv"  # dig's single_dash_opts
DASH_VALUES = "bcfkpqtxy"  # dash_opts: take a value
DASH_ALLOWED = {"4", "r", "t", "c", "q", "x", "p"}
DASH_WHY = {
    "f": "dig -f reads queries from a file", "k": "dig -k reads a key file",
    "y": "TSIG keys are not used here", "b": "the source address is the machine's own",
    "6": "the lab is IPv4 only", "m": "memory debugging is not available",
}  # fmt: skip
NAME_RE = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9_-]{1,63}\.)*[A-Za-z0-9_-]{0,63}\.?$")
MAX_SERVERS = 1
# The other words dig reads as a query type or class (BIND 9.18's rdatatype and
# rdataclass tables, any case, and the generic TYPEnnn / CLASSnnn): left to pass as a
# name, `dig @S lab axfr` would ask for a zone transfer.
OTHER_TYPES = frozenset({
    "NS", "MD", "MF", "SOA", "MB", "MG", "MR", "NULL", "WKS", "HINFO", "MINFO", "RP", "AFSDB",
    "X25", "ISDN", "RT", "NSAP", "NSAP-PTR", "SIG", "KEY", "PX", "GPOS", "LOC", "NXT", "EID",
    "NIMLOC", "ATMA", "NAPTR", "KX", "CERT", "A6", "DNAME", "SINK", "OPT", "APL", "DS",
    "SSHFP", "IPSECKEY", "RRSIG", "NSEC", "DNSKEY", "DHCID", "NSEC3", "NSEC3PARAM", "TLSA",
    "SMIMEA", "HIP", "NINFO", "RKEY", "TALINK", "CDS", "CDNSKEY", "OPENPGPKEY", "CSYNC",
    "ZONEMD", "SVCB", "HTTPS", "SPF", "UINFO", "UID", "GID", "UNSPEC", "NID", "L32", "L64",
    "LP", "EUI48", "EUI64", "TKEY", "TSIG", "IXFR", "AXFR", "MAILB", "MAILA", "URI", "CAA",
    "AVC", "DOA", "AMTRELAY", "TA", "DLV", "KEYDATA",
}) - TYPES  # fmt: skip
OTHER_CLASSES = frozenset({"CHAOS", "HS", "HESIOD", "NONE", "ANY", "RESERVED0"}) - CLASSES
GENERIC_TYPE_RE = re.compile(r"^TYPE\d+$", re.ASCII | re.IGNORECASE)
GENERIC_CLASS_RE = re.compile(r"^CLASS\d+$", re.ASCII | re.IGNORECASE)


def _number(value: str) -> bool:
    """A decimal number as dig reads one (ASCII digits: `isdigit` also takes others)."""
    return value.isascii() and value.isdigit()


def plus_keyword(word: str) -> str | list[str]:
    """The keyword `+word` names (without `no` and `=value`), or the candidates when it
    names none or several."""
    if word in PLUS_ALL:
        return word
    found = [k for k in PLUS_ALL if k.startswith(word)]
    return found[0] if len(found) == 1 else found


def _plus(token: str) -> str | None:
    body = token[1:]
    name, eq, value = body.partition("=")
    if name.startswith("no") and plus_keyword(name) not in PLUS_ALL:
        name = name[2:]
        if eq:
            return f"dig +no{name} takes no value"
    found = plus_keyword(name)
    if not isinstance(found, str):
        return f"dig: {token!r} is not a unique dig option" + (
            f" (it could be {', '.join('+' + k for k in found[:5])})" if found else ""
        )
    if found not in PLUS_ALLOWED:
        why = PLUS_WHY.get(found, "it is not available here")
        return f"dig option +{found} is not allowed: {why}"
    limits = PLUS_ALLOWED[found]
    if limits is None:
        return f"dig +{found} takes no value" if eq else None
    if not eq:
        return f"dig +{found} needs a value: +{found}=N"
    if not _number(value) or not limits[0] <= int(value) <= limits[1]:
        return f"dig +{found} must be from {limits[0]} to {limits[1]}, got {value!r}"
    return None


def _dash_value(char: str, value: str) -> str | None:
    if char == "t" and value.upper() not in TYPES:
        return f"dig -t takes one of {', '.join(sorted(TYPES))}"
    if char == "c" and value.upper() not in CLASSES:
        return "dig -c takes IN or CH"
    if char == "x" and not (ipv4(value) and "/" not in value):
        return "dig -x needs an IPv4 address"
    if char == "q" and not NAME_RE.match(value):
        return f"dig -q needs a domain name, got {value!r}"
    if char == "p" and not (_number(value) and 1 <= int(value) <= 65535):
        return "dig -p needs a port number"
    return None


def check_dig(args: list[str]) -> str | None:
    servers = 0
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token.startswith("@"):
            servers += 1
            if not (ipv4(token[1:]) and "/" not in token):
                return "dig @SERVER takes an IPv4 address, e.g. dig @10.0.250.53 NAME"
            continue
        if token.startswith("+"):
            why = _plus(token)
            if why:
                return why
            continue
        if token.startswith("-") and len(token) > 1:
            rest = token[1:]
            while rest:
                char, rest = rest[0], rest[1:]
                if char not in DASH_FLAGS + DASH_VALUES:
                    return f"dig: invalid option -{char}"
                if char not in DASH_ALLOWED:
                    return f"dig option -{char} is not allowed: {DASH_WHY.get(char, 'not here')}"
                if char in DASH_VALUES:
                    value = rest
                    if not value:
                        if i >= len(args):
                            return f"dig -{char} needs a value"
                        value, i = args[i], i + 1
                    why = _dash_value(char, value)
                    if why:
                        return why
                    rest = ""
            continue
        word = token.upper()
        if word in TYPES or word in CLASSES:
            continue
        if word in OTHER_TYPES or GENERIC_TYPE_RE.match(token):
            return (
                f"dig reads {token!r} as a query type: the query type {word} is not offered "
                f"here (types: {', '.join(sorted(TYPES))})"
            )
        if word in OTHER_CLASSES or GENERIC_CLASS_RE.match(token):
            return f"dig reads {token!r} as a query class: the class {word} is not offered (IN, CH)"
        if not NAME_RE.match(token):
            return f"dig: {token!r} is not a domain name, type or class"
    if servers != MAX_SERVERS:
        return "dig needs exactly one @SERVER (the lab's DNS server), e.g. dig @10.0.250.53 NAME"
    return None
