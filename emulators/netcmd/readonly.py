"""Which checked commands only read: the gate of a read-only episode (detect, localize).

`write_refusal(argv)` takes an argv the policy allowed (policy.check) and says why it
may change something, or None when it only reads. It reads the command as the tool does,
with the policy's own parsers: `ip` and `tc` only with a show/get/help verb (or an object
alone, which lists); iptables only listing or checking (`-L`, `-S`, `-C`; `-Z` zeroes
counters, so it writes); sysctl without a key to write; vtysh only `show`/`list` lines
(vtysh.read_only); ifconfig, route and arp when effects.py finds nothing they change;
ping, traceroute, tracepath, dig, cat, iptables-save and bridge (whose grammar allows
only its listings) always. A tool this module does not know is refused: a new tool must
be classified here before a read-only episode may use it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from emulators.netcmd import effects, iproute, iptables, svcctl, tc, vtysh
from emulators.netcmd.tools import check_sysctl

READERS = frozenset({"cat", "ping", "iptables-save", "traceroute", "tracepath", "dig", "bridge"})
WHY = "this task is read-only: only commands that look are allowed"


def _ip(args: list[str]) -> str | None:
    _, rest, why = iproute.read_globals(args, iproute.IP_OPTIONS, "ip")
    if why or len(rest) < 2:
        return None  # an object alone lists it
    obj = iproute.dispatch(rest[0], iproute.IP_OBJECTS)
    verb = iproute.dispatch(rest[1], iproute.IP_VERBS.get(obj or "", []))
    if verb in iproute.READ_VERBS:
        return None
    return f"ip {obj} {verb} changes the machine"


def _tc(args: list[str]) -> str | None:
    _, rest, why = iproute.read_globals(args, iproute.TC_OPTIONS, "tc")
    if why or len(rest) < 2:
        return None
    verb = iproute.dispatch(rest[1], tc.TC_VERBS)
    return None if verb in iproute.READ_VERBS else f"tc {rest[0]} {verb} changes the machine"


def _iptables(args: list[str]) -> str | None:
    try:
        names = {name for name, _ in iptables.read_iptables(args)}
    except iptables.Refusal as err:
        return str(err)
    writes = names & (set(effects._IPTABLES_WRITES) | {"zero"})
    if writes:
        return f"iptables --{sorted(writes)[0]} changes the machine; list with iptables -S or -L"
    return None


def write_refusal(argv: Sequence[str]) -> str | None:
    """Why the allowed `argv` may change something (prefixed with WHY), or None."""
    tool, args = os.path.basename(argv[0]), list(argv[1:])
    why: str | None
    if tool in READERS:
        why = None
    elif tool == "vtysh":
        lines = vtysh.check_vtysh(args, vtysh.DAEMONS).lines
        why = None if vtysh.read_only(lines) else "vtysh may only run show commands"
    elif tool == "sysctl":
        refused, writes = check_sysctl(args)
        why = refused or ("sysctl may only read keys" if writes else None)
    elif tool == "ip":
        why = _ip(args)
    elif tool == "tc":
        why = _tc(args)
    elif tool == "iptables":
        why = _iptables(args)
    elif tool == "svcctl":  # ours (svcctl.py): only `SERVICE show` reads
        try:
            why = None if svcctl.parse(args).reads_only else "svcctl may only show"
        except svcctl.SvcctlError as err:
            why = f"svcctl: {err}"
    elif tool in ("ifconfig", "route", "arp"):
        why = f"this {tool} command changes the machine" if effects.changes(argv) else None
    else:
        why = f"{tool} is not known to only read"
    return f"{WHY} ({why})" if why else None
