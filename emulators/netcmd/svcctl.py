"""`svcctl`: the agents' tool for a lab's service daemons (ours: Debian's have no CLI).

    svcctl SERVICE show
    svcctl SERVICE set DIRECTIVE VALUE...
    svcctl SERVICE unset DIRECTIVE KEY

SERVICE is `dns` or `dhcp` (dnsmasq on the lab's server) or `vrrp` (keepalived on a
router of a VRRP pair). Only the directives in DIRECTIVES exist, every word spelled in
full, every value matched whole by its pattern; `set` replaces the line with the same key
(a host-record's name, a server's domain, a VRRP group's setting) or adds one, `unset`
removes the lines with that key. The command never runs a program here: the lab's
service control (ServiceControl, given by the app) writes the daemon's configuration in
the device's own folder and restarts the daemon in its jail (generators/incidents/daemons.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from emulators.netcmd import kinds

# Every pattern is matched with re.ASCII: `\d` alone also takes other scripts' digits
# ("10.0.1.\u0661"), which dnsmasq calls a bad name and stops on. A label is at most 63
# characters (dnsmasq refuses a longer one), a prefix at most /32 (keepalived reads more
# as /32).
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_NAME = rf"(?=[A-Za-z0-9.-]{{1,100}}(,|/|$)){_LABEL}(\.{_LABEL})*"
_IP = r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}"
_IFNAME = r"[A-Za-z0-9_.-]{1,15}"
_TAG = r"[a-z0-9]{1,12}"


@dataclass(frozen=True)
class Directive:
    service: str
    name: str
    pattern: str  # what the value must be, matched whole (words joined by one space)
    example: str
    key: str  # how the key is read from the value: a regex whose group 1 is the key


DIRECTIVES = {
    (d.service, d.name): d
    for d in (
        Directive(
            "dns", "host-record", rf"{_NAME},{_IP}", "host-record web.lab,10.0.1.11", r"^([^,]+),"
        ),
        Directive(
            "dns", "address", rf"/{_NAME}/{_IP}", "address /web.lab/10.0.1.11", r"^/([^/]+)/"
        ),
        Directive(
            "dns", "server", rf"(/{_NAME}/)?{_IP}", "server /corp.lab/10.0.250.54", r"^(/[^/]+/|)"
        ),
        Directive("dns", "interface", _IFNAME, "interface srv1-eth0", r"^(.*)$"),
        Directive("dns", "listen-address", _IP, "listen-address 10.0.250.53", r"^(.*)$"),
        Directive(
            "dhcp",
            "dhcp-range",
            rf"set:{_TAG},{_IP},{_IP},{_IP},\d{{1,3}}[mh]",
            "dhcp-range set:v10,10.1.10.100,10.1.10.199,255.255.255.0,1h",
            r"^set:([^,]+),",
        ),
        Directive(
            "dhcp",
            "dhcp-option",
            rf"tag:{_TAG},option:(router|dns-server),{_IP}",
            "dhcp-option tag:v10,option:router,10.1.10.254",
            r"^(tag:[^,]+,option:[^,]+),",
        ),
        Directive(
            "vrrp",
            "priority",
            r"\d{1,3} (25[0-4]|2[0-4]\d|1\d\d|[1-9]\d?)",
            "priority 10 150",
            r"^(\d+) ",
        ),
        Directive(
            "vrrp",
            "virtual_ipaddress",
            rf"\d{{1,3}} {_IP}/(3[0-2]|[12]?\d)",
            "virtual_ipaddress 10 10.1.10.254/24",
            r"^(\d+) ",
        ),
        Directive("vrrp", "advert_int", r"\d{1,3} [1-5]", "advert_int 10 1", r"^(\d+) "),
        Directive(
            "vrrp",
            "track_interface",
            rf"\d{{1,3}} {_IFNAME}",
            "track_interface 10 dist1a-eth0",
            r"^(\d+ .*)$",
        ),
    )
}
SERVICES = ("dns", "dhcp", "vrrp")
VERBS = ("show", "set", "unset")
MAX_WORDS = 8


@dataclass(frozen=True)
class SvcCommand:
    service: str
    verb: str  # show | set | unset
    directive: str = ""
    value: str = ""  # set: the whole value; unset: the key

    @property
    def reads_only(self) -> bool:
        return self.verb == "show"


class SvcctlError(ValueError):
    """The command is not one svcctl takes; the message says what is."""


def usage(service: str | None = None) -> str:
    names = [d for d in DIRECTIVES.values() if service in (None, d.service)]
    return "; ".join(f"svcctl {d.service} set {d.example}" for d in names)


def directive_key(directive: Directive, value: str) -> str:
    found = re.match(directive.key, value, re.ASCII)
    return found.group(1) if found else value


def parse(args: list[str]) -> SvcCommand:
    """The command `svcctl ARGS` names; SvcctlError saying why it is not one."""
    if not args or len(args) > MAX_WORDS:
        raise SvcctlError(f"use svcctl SERVICE show|set|unset ...; services: {', '.join(SERVICES)}")
    service = args[0]
    if service not in SERVICES:
        raise SvcctlError(f"svcctl knows the services {', '.join(SERVICES)}, not {service!r}")
    if len(args) < 2 or args[1] not in VERBS:
        raise SvcctlError(f"use svcctl {service} show, set DIRECTIVE VALUE or unset DIRECTIVE KEY")
    verb = args[1]
    if verb == "show":
        if len(args) != 2:
            raise SvcctlError(f"svcctl {service} show takes no more words")
        return SvcCommand(service, verb)
    if len(args) < 4:
        raise SvcctlError(
            f"svcctl {service} {verb} needs a directive and a value: {usage(service)}"
        )
    directive = DIRECTIVES.get((service, args[2]))
    if directive is None:
        names = sorted(d.name for d in DIRECTIVES.values() if d.service == service)
        raise SvcctlError(
            f"svcctl {service} has the directives {', '.join(names)}, not {args[2]!r}"
        )
    for word in args[3:]:  # as in every lab command (policy.check): the daemon looks it up
        why = kinds.netdev_refusal(word)
        if why:
            raise SvcctlError(why)
    value = " ".join(args[3:])
    if verb == "set":
        if not re.fullmatch(directive.pattern, value, re.ASCII):
            raise SvcctlError(f"bad value {value!r} for {directive.name}; e.g. {directive.example}")
        return SvcCommand(service, verb, directive.name, value)
    if not re.fullmatch(r"[A-Za-z0-9_.:,/ -]{1,120}", value, re.ASCII):
        raise SvcctlError(f"bad key {value!r} for svcctl {service} unset {directive.name}")
    return SvcCommand(service, verb, directive.name, value)
