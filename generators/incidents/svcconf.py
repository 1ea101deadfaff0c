"""The configuration of one service daemon, as a model `svcctl` edits line by line.

A `Config` holds the lines an operator may change, (directive, value) in order, and what
is fixed (the daemon's own plumbing: pid file, log, the zone it is authoritative for;
VRRP: which interface each group runs on). `render()` is the daemon's file: dnsmasq's
`directive=value` lines, or keepalived's `vrrp_instance` blocks, one per VRRP group (its
lines' first word is the group's VRID). `set` replaces the line with the same key (svcctl.
DIRECTIVES says how a value's key is read) or appends one; `unset` removes the lines with
a key. Healthy configurations are made from the NetSpec (generators/incidents/lab.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from emulators.netcmd.svcctl import DIRECTIVES, directive_key

# dnsmasq's own plumbing. `no-ping`: dnsmasq pings an address before it offers it, and in
# its jail that stalled its DHCP loop (relayed DISCOVERs queued unread on its socket); the
# lab's addresses are all known, so the check buys nothing here.
DNSMASQ_FIXED = (
    "no-resolv", "no-hosts", "bind-interfaces", "domain-needed", "local=/lab/",
    "domain=lab", "pid-file=/run/svc/daemon.pid", "port=53",
    "dhcp-leasefile=/run/svc/daemon.leases", "no-ping",
)  # fmt: skip
DNSMASQ_SERVICES = ("dns", "relay")  # configurations rendered as dnsmasq's


@dataclass
class Config:
    service: str  # dns | vrrp
    lines: list[tuple[str, str]]
    fixed: tuple[str, ...] = ()  # dns: dnsmasq lines; vrrp: "VRID INTERFACE" per group
    name: str = ""  # vrrp: the router's name (keepalived's router_id)
    extra: dict[str, str] = field(default_factory=dict)

    def copy(self) -> Config:
        return copy.deepcopy(self)

    def canonical(self) -> tuple:
        """What the daemon reads: the same lines in any order configure it the same."""
        return (self.service, tuple(sorted(self.lines)), self.fixed, self.name)

    def _key(self, directive: str, value: str) -> str:
        found = next(d for (_, name), d in DIRECTIVES.items() if name == directive)
        return directive_key(found, value)

    def set(self, directive: str, value: str) -> bool:
        key = self._key(directive, value)
        for i, (d, v) in enumerate(self.lines):
            if d == directive and self._key(d, v) == key:
                if v == value:
                    return False
                self.lines[i] = (directive, value)
                return True
        self.lines.append((directive, value))
        return True

    def unset(self, directive: str, key: str) -> bool:
        keep = [(d, v) for d, v in self.lines if not (d == directive and self._key(d, v) == key)]
        changed = len(keep) != len(self.lines)
        self.lines = keep
        return changed

    def value(self, directive: str, key: str) -> str | None:
        for d, v in self.lines:
            if d == directive and self._key(d, v) == key:
                return v
        return None

    def render(self) -> str:
        if self.service in DNSMASQ_SERVICES:
            return "\n".join([*self.fixed, *(f"{d}={v}" for d, v in self.lines)]) + "\n"
        return _keepalived(self)

    def show(self, service: str = "") -> str:
        """What `svcctl SERVICE show` prints: that service's editable lines (dnsmasq holds
        both dns and dhcp), and the fixed ones."""
        if self.service in DNSMASQ_SERVICES:
            fixed = "\n".join(f"  {line}" for line in self.fixed if not line.startswith("pid"))
            mine = [
                (d, v) for d, v in self.lines
                if not service or (service == "dhcp") == d.startswith("dhcp-")
            ]  # fmt: skip
            lines = "\n".join(f"{d} {v}" for d, v in mine) or "(none)"
            return f"{lines}\n# fixed:\n{fixed}\n"
        return _keepalived(self)


def _keepalived(config: Config) -> str:
    out = ["global_defs {", f"  router_id {config.name}", "  vrrp_garp_master_delay 1",
           "  vrrp_garp_master_refresh 5", "}"]  # fmt: skip
    for group in config.fixed:
        vrid, intf = group.split()
        mine = [(d, v.split(" ", 1)[1]) for d, v in config.lines if v.split(" ", 1)[0] == vrid]
        values = dict(mine)
        out += [f"vrrp_instance vr{vrid} {{", "  state BACKUP", f"  interface {intf}",
                f"  virtual_router_id {vrid}"]  # fmt: skip
        for directive in ("priority", "advert_int"):
            if directive in values:
                out.append(f"  {directive} {values[directive]}")
        tracked = [v for d, v in mine if d == "track_interface"]
        if tracked:
            out += ["  track_interface {", *(f"    {t}" for t in tracked), "  }"]
        vips = [v for d, v in mine if d == "virtual_ipaddress"]
        out += ["  virtual_ipaddress {", *(f"    {v}" for v in vips), "  }", "}"]
    return "\n".join(out) + "\n"
