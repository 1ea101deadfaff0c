"""Per-device bounds on the kernel objects lab commands leave behind, held by their effect.

A memory cgroup bounds what a command's process holds, not what it leaves in the kernel:
rules, qdiscs, routes and addresses are allocated for the namespace and outlive the
command, and some are not charged to any cgroup (xt_string's text-search automaton is
allocated with GFP_KERNEL). One command may also make many objects: iptables makes one
rule for every `-s` address times every `-d` address of a comma list (987 characters made
2,916 rules), an address brings its local and broadcast routes, a multipath route holds
a next hop per `nexthop`. So the bounds are kept by what the kernel holds, not by what a
command looks like:

  1. before a command that changes anything (effects.py), the device's objects are taken
     (inventory.py: one netlink dump per kind, from a thread inside its namespace);
  2. it is refused before it runs when it certainly breaks a bound: the device already
     holds LIMITS[kind] of what it adds, or it is an iptables append or insert whose
     expansion (|-s list| x |-d list| rules, each with its string matches) is past what
     the device has room for;
  3. after it ran, the objects are taken again; if a bound is exceeded that the command
     raised, everything it added is deleted (the dumped objects sent back as deletes; what
     it deleted or changed in place stays so) and the count is checked again.
Either way the step is a typed `limit` (resource_limit) with the reason; a rollback that
cannot bring the device back within its bounds is an EnvironmentFailure (the lab cannot
be trusted any more).

LIMITS x the heaviest object of each kind is the most kernel memory a device can be made
to hold (`python -m pipeline.bench --only bounds` measures both); the string-match bound
exists because a rule with six such matches holds 17 KB (each a Boyer-Moore table), six
times one with six 256-character comments.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from emulators.netcmd import effects, getopt, inventory, iproute, iptables, tools
from emulators.netcmd.inventory import ADDRESSES, IP_RULES, NEIGHBOURS, ROUTES, RULES, STRINGS, TC
from emulators.netcmd.tc import TC_OBJECTS, TC_VERBS
from pipeline.errors import EnvironmentFailure

LIMITS = {
    RULES: 256,
    STRINGS: 16,
    TC: 64,
    ROUTES: 512,
    ADDRESSES: 64,
    NEIGHBOURS: 256,
    IP_RULES: 64,
}


def adds(argv: Sequence[str]) -> str | None:
    """The bound the checked `argv` adds to in the first place, if any (a key of LIMITS)."""
    tool, args = os.path.basename(argv[0]), list(argv[1:])
    if tool == "ip":
        rest, why = iproute._globals(args, iproute.IP_OPTIONS, iproute.IP_OPTIONS_ALLOWED, "ip")
        if why or len(rest) < 2:
            return None
        obj = iproute.dispatch(rest[0], iproute.IP_OBJECTS)
        verb = iproute.dispatch(rest[1], iproute.IP_VERBS.get(obj or "", []))
        kinds = {"address": ADDRESSES, "route": ROUTES, "rule": IP_RULES,
                 "neighbor": NEIGHBOURS, "neighbour": NEIGHBOURS}  # fmt: skip
        if verb in ("add", "replace", "prepend", "append"):
            return kinds.get(obj or "")
        return None
    if tool == "tc":
        rest, _ = iproute._globals(args, iproute.TC_OPTIONS, iproute.TC_OPTIONS_ALLOWED, "tc")
        if len(rest) > 1 and iproute.dispatch(rest[0], TC_OBJECTS) in ("qdisc", "class", "filter"):
            return TC if iproute.dispatch(rest[1], TC_VERBS) in ("add", "replace") else None
        return None
    if tool == "iptables":
        names = {name for name, _ in iptables.read_iptables(args)}
        return RULES if names & {"append", "insert", "new-chain"} else None
    if tool == "route":
        return ROUTES if "add" in args else None
    if tool == "arp":
        options, _ = getopt.parse(args, tools.ARP_SHORTS, tools.ARP_LONGS)
        return NEIGHBOURS if any(o.name in ("-s", "--set") for o in options) else None
    if tool == "ifconfig":
        return ADDRESSES if any(iproute.ipv4(a) or a == "add" for a in args[1:]) else None
    return None


def expansion(argv: Sequence[str]) -> Counter[str]:
    """The fewest objects the checked `argv` adds where that can be read off the command
    as the tool computes it: an iptables append or insert makes one rule for every source
    address times every destination address (a name may stand for several, never for
    none), each rule with its own string matches."""
    if os.path.basename(argv[0]) != "iptables":
        return Counter()
    options = iptables.read_iptables(list(argv[1:]))
    names = [name for name, _ in options]
    if not {"append", "insert"} & set(names):
        return Counter()
    rules = 1
    for name, value in options:
        if name in ("source", "src", "destination", "dst") and value:
            rules *= len(value.split(","))
    strings = sum(1 for name, value in options if name == "match" and value == "string")
    return Counter({RULES: rules, STRINGS: rules * strings})


def _exceeds(kind: str, held: int, limit: int) -> str:
    return (
        f"this machine already holds {held} {kind}, the most allowed per machine here "
        f"({limit}); delete some before adding more"
    )


@dataclass(frozen=True)
class Watch:
    """A device's objects before a command, to compare with after it."""

    netns: str
    before: inventory.Inventory


def watch(
    netns: str, argv: Sequence[str], writes: Sequence[str] = ()
) -> tuple[Watch | None, str | None]:
    """Before the checked `argv` runs on the device at `netns`: (what to settle it with
    afterwards, or None when it changes nothing; why it may not run, or None)."""
    if not effects.changes(argv, writes):
        return None, None
    before = inventory.take(netns)
    held = before.counts()
    kind = adds(argv)
    if kind is not None and held[kind] >= LIMITS[kind]:
        return None, _exceeds(kind, held[kind], LIMITS[kind])
    for kind, least in expansion(argv).items():
        if least and held[kind] + least > LIMITS[kind]:
            return None, (
                f"this command would add at least {least} {kind} (iptables makes one rule "
                "for every -s address times every -d address) to the "
                f"{held[kind]} this machine holds: more than the {LIMITS[kind]} allowed "
                "per machine here; add fewer at once"
            )
    return Watch(netns, before), None


def settle(watched: Watch) -> str | None:
    """After the command ran: None when the device is within its bounds; else everything
    the command added is deleted and the reason is returned. Raises EnvironmentFailure
    when the device cannot be brought back within them."""
    after = inventory.take(watched.netns)
    was, now = watched.before.counts(), after.counts()
    over = [k for k, limit in LIMITS.items() if now[k] > limit and now[k] > was[k]]
    if not over:
        return None
    failures = inventory.remove(watched.netns, after.added_since(watched.before))
    left = inventory.take(watched.netns).counts()
    still = [k for k in over if left[k] > max(LIMITS[k], was[k])]
    if still:
        detail = "; ".join(failures) or "the objects it added did not go"
        raise EnvironmentFailure(
            f"a lab command took a device past its bound of {', '.join(still)} and could "
            f"not be undone ({detail})"
        )
    said = ", ".join(f"{now[k] - was[k]} {k} ({now[k]} held, {LIMITS[k]} allowed)" for k in over)
    return (
        f"the command added {said}: more than this machine may hold, so everything it "
        "added was removed again; add fewer at once"
    )


def vtysh_refusal(netns: str, lines: Sequence[str]) -> str | None:
    """Why vtysh `lines` that configure may not run on a router already holding its bound
    of routes, or None. The routes FRR installs are zebra's: deleting them behind its
    back would leave FRR believing in routes the kernel lacks, so they are never undone;
    a command (at most vtysh.MAX_LINES lines) may add a few past the bound, and then no
    more configuration runs until some go."""
    if all(line.split()[:1] and "show".startswith(line.split()[0]) for line in lines):
        return None  # `sh ...`, `show ...`: reads only
    held = inventory.take(netns).counts()[ROUTES]
    return _exceeds(ROUTES, held, LIMITS[ROUTES]) if held >= LIMITS[ROUTES] else None


def count(netns: str, kind: str) -> int:
    """How many objects of `kind` (a key of LIMITS) the namespace at `netns` holds now."""
    return inventory.take(netns).counts()[kind]
