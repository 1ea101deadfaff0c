"""Only lasting state: the arguments that would make a change undo itself are refused.

A verdict judges the network as the episode leaves it and as it will stay. State with a
lifetime or a budget changes by itself later: an address added with `valid_lft 8` works
when the step is judged and vanishes eight seconds later; a rate-limited ACCEPT passes the
probes and drops the traffic after them. A delayed re-check cannot catch these (a lifetime
one second longer than any delay defeats it, and the re-check would cost that delay on
every episode), so they are refused here, read as the tools read them:

  ip address add|change|replace  a finite valid_lft (the kernel keeps an address whose
                                 valid_lft is forever for good, and ignores its
                                 preferred_lft but for 0: deprecated at once, for good);
                                 ipaddress.c's keyword order decides which word is which
                                 (`v` is `valid_lft`; `pre` is `preference`, a metric);
  ip route add|change|...        `expires`;
  ip neighbour add|change|replace
                                 a `nud` state other than permanent or noarp; `managed`
                                 (entries the kernel keeps re-resolving);
  arp -s                         `temp`;
  iptables                       the limit, hashlimit, recent and connlimit matches
                                 (iptables.py);
  tc                             qdiscs that meter or shape (a token bucket, a rate, a
                                 random drop), policers, and writes to filters, classes
                                 and chains (only `delete` is left for those).
"""

from __future__ import annotations

WHY = "only lasting changes are allowed here"
INFINITE = {"forever", "4294967295", "0xffffffff", "0xFFFFFFFF"}

# ip/ipaddress.c ipaddr_modify, in order: (name, exact, takes a value); `None` marks the
# lifetimes this module judges.
_ADDRESS_WORDS = [
    ("peer", True, True), ("remote", True, True), ("broadcast", False, True),
    ("brd", True, True), ("anycast", True, True), ("scope", True, True), ("dev", True, True),
    ("label", True, True), ("metric", False, True), ("priority", False, True),
    ("preference", False, True), ("valid_lft", False, None), ("preferred_lft", False, True),
]  # fmt: skip


def matches(word: str, name: str) -> bool:
    """iproute2's matches(): `word` is a non-empty prefix of `name`."""
    return bool(word) and name.startswith(word)


def address_refusal(args: list[str]) -> str | None:
    """Why `ip address add|change|replace ARGS` is refused, or None."""
    i = 0
    while i < len(args):
        word = args[i]
        found = next(
            (
                (name, value)
                for name, exact, value in _ADDRESS_WORDS
                if (word == name if exact else matches(word, name))
            ),
            None,
        )
        if found is None:
            i += 2 if word == "local" else 1
            continue
        name, takes = found
        value = args[i + 1] if i + 1 < len(args) else ""
        if takes is None and value not in INFINITE:
            return (
                f"'{word} {value}' ({name}) gives the address a lifetime: {WHY}, so addresses "
                "are permanent (valid_lft forever)"
            )
        i += 2
    return None


def route_refusal(args: list[str]) -> str | None:
    """Why `ip route add|change|replace|prepend|append ARGS` is refused, or None
    (iproute.c compares `expires` with strcmp)."""
    if "expires" in args:
        return f"'expires' gives the route a lifetime: {WHY}"
    return None


# ip/ipneigh.c ipneigh_modify: words that take a value, in order (name, exact).
_NEIGH_VALUES = [("lladdr", False), ("nud", True), ("proxy", False), ("dev", True),
                 ("protocol", False)]  # fmt: skip


def neigh_refusal(args: list[str]) -> str | None:
    """Why `ip neighbour add|change|replace ARGS` is refused, or None."""
    i = 0
    while i < len(args):
        word = args[i]
        name = next(
            (n for n, exact in _NEIGH_VALUES if (word == n if exact else matches(word, n))),
            None,
        )
        if name is None:
            if word not in ("router", "to") and matches(word, "managed"):
                return f"'{word}' (managed) makes an entry the kernel keeps re-resolving: {WHY}"
            i += 1
            continue
        value = args[i + 1] if i + 1 < len(args) else ""
        if name == "nud" and not (matches(value, "permanent") or value == "noarp"):
            return f"'nud {value}' makes an entry that ages out: {WHY} (nud permanent or noarp)"
        i += 2
    return None


# Qdiscs whose behaviour depends on time or on how much traffic went before.
METERED_QDISCS = {
    "tbf", "htb", "hfsc", "cbq", "cake", "red", "gred", "choke", "pie", "fq_pie", "sfb",
    "netem", "taprio", "etf", "cbs", "fq", "codel", "fq_codel", "hhf",
}  # fmt: skip


def tc_refusal(obj: str, verb: str | None, args: list[str]) -> str | None:
    """Why `tc OBJ VERB ARGS` is refused, or None (tc looks a qdisc kind up by its exact
    name; `police` and `action` are read as prefixes, so any word they start with counts)."""
    if verb not in ("add", "change", "replace"):
        return None
    if obj != "qdisc":
        return f"tc {obj} {verb} is not allowed: {WHY}; tc {obj} allows show, get and delete"
    for word in args:
        if word in METERED_QDISCS:
            return f"the {word} qdisc meters or shapes traffic, so what passes changes: {WHY}"
        if len(word) >= 3 and ("police".startswith(word) or "action".startswith(word)):
            return f"'{word}' polices traffic by a budget: {WHY}"
    return None
