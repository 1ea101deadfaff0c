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

DNSMASQ_FIXED = (
    "no-resolv", "no-hosts", "bind-interfaces", "domain-needed", "local=/lab/",
    "domain=lab", "pid-file=/run/svc/daemon.pid", "port=53",
)  # fmt: skip


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
        return directive_key(DIRECTIVES[(self.service, directive)], value)

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
        if self.service == "dns":
            return "\n".join([*self.fixed, *(f"{d}={v}" for d, v in self.lines)]) + "\n"
        return _keepalived(self)

    def show(self) -> str:
        """What `svcctl SERVICE show` prints: the editable lines (and the fixed ones)."""
        if self.service == "dns":
            fixed = "\n".join(f"  {line}" for line in self.fixed if not line.startswith("pid"))
            lines = "\n".join(f"{d} {v}" for d, v in self.lines) or "(none)"
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
