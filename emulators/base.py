"""The backend-neutral emulator interface: a lab model and the `Emulator` protocol.

A `Lab` is what a network is made of, whatever runs it: devices, their interfaces, the
collision domain (an L2 segment: a Mininet switch, a Kathará network) each interface sits
on, its IPv4 addresses, sysctls, and startup commands. Mininet (emulators/mininet/) and
Kathará (emulators/kathara/) run labs, both on the machinery they share in
emulators/namespaced.py; both pass tests/test_emulator_contract.py.

Naming scheme: the lab names devices (`r0`, `h1_1`), interfaces (`<device>-eth<k>`),
bridges inside a device (`v10`) and domains (`s1`); these are the names an agent sees.
A domain listed in `Lab.direct` has exactly two interfaces and is wired as one veth pair,
without a switch between them (a routed point-to-point link costs no switch node); a
backend may still bridge it, which an L2 segment of two ends cannot tell apart. A backend
instance maps the names to its own that carry a per-instance prefix (`ngr` + 5 hex
digits, see emulators/instances.py), so many instances run at once and leftovers of a
dead one can be found by prefix.

An emulator is used as a context manager: entering reserves the instance (its prefix),
leaving stops everything it started, also on error.

    with MininetEmulator() as emu:
        emu.build(lab)          # devices, links, addresses, startup commands
        emu.snapshot()          # the state `reset` returns to
        emu.run("r0", ["ip", "link", "set", "r0-eth1", "down"], timeout_s=5, output_bytes=4096)
        emu.reachability()      # every ordered pair of addressed devices, pinged
        emu.probe([Flow("h1", "r0", "10.0.1.1", "tcp")])  # any flows: ICMP, TCP or UDP echoes
        emu.reset()             # back to the snapshot, verified; raises if it cannot
    Backend.cleanup_stale()     # what dead instances (kill -9) left, found by prefix
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from types import TracebackType
from typing import Protocol, Self

from emulators.probe import Flow
from pipeline.errors import ConfigError, RegistryError

# Backends by name, found by folder: `emulators/<name>/__init__.py` exports `BACKEND`
# (pipeline/registry.py); imported only when chosen.
from pipeline.registry import EMULATORS as EMULATORS


def backend_name(name: str) -> str:
    """The backend's name as prompts write it ("Kathará"); `name` itself if unknown."""
    try:
        return EMULATORS.get(name).display
    except RegistryError:
        return name


IFNAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$")  # Linux: at most 15 characters
NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,11}$")  # device names
DOMAIN_RE = re.compile(r"^[a-z][a-z0-9_]{0,6}$")  # domains: a backend may prefix them to 15


ALIAS_RE = re.compile(r"^[ -~]{0,200}$")  # printable ASCII; the kernel holds up to 255 bytes


def _repr_without_defaults(*names: str) -> Callable[[type], type]:
    """A dataclass repr that leaves out the fields `names` while they hold their defaults:
    the wiring fields came later, and a lab without them reads (and digests, as golden
    tests pin it) exactly as before."""

    def decorate(cls: type) -> type:
        def __repr__(self: object) -> str:
            shown = [
                f"{f.name}={getattr(self, f.name)!r}"
                for f in fields(cls)  # type: ignore[arg-type]
                if f.name not in names or getattr(self, f.name) != f.default
            ]
            return f"{cls.__qualname__}({', '.join(shown)})"

        cls.__repr__ = __repr__  # type: ignore[method-assign]
        return cls

    return decorate


@_repr_without_defaults("alias", "up")
@dataclass(frozen=True)
class Interface:
    name: str  # e.g. "r0-eth1"; unique within its device
    domain: str  # the collision domain (switch) this interface is plugged into
    addresses: tuple[str, ...] = ()  # IPv4 with prefix length, e.g. ("10.0.1.1/24",)
    alias: str = ""  # its description (`ip link set DEV alias TEXT`); "" for none
    up: bool = True  # admin state after build (a spare port is kept down)


@dataclass(frozen=True)
class Bridge:
    """A Linux bridge inside a device (a switch's VLAN, a router's SVI), created at build
    with its ports enslaved, then its addresses."""

    name: str  # an interface name of the device, e.g. "v10"
    ports: tuple[str, ...]  # names of the device's interfaces it enslaves
    addresses: tuple[str, ...] = ()
    alias: str = ""


@_repr_without_defaults("bridges", "loopbacks")
@dataclass(frozen=True)
class Device:
    name: str  # e.g. "r0", "h1_1"
    interfaces: tuple[Interface, ...]
    sysctls: tuple[tuple[str, str], ...] = ()  # (key, value), applied in order at build
    startup: tuple[tuple[str, ...], ...] = ()  # argv lists run after addresses, in order
    role: str = "host"  # "router", "switch" or "host"; informative (prompts, reports)
    bridges: tuple[Bridge, ...] = ()  # made after the interfaces, before the sysctls
    loopbacks: tuple[str, ...] = ()  # addresses with prefix length on `lo` (router-ids)

    def address(self, domain: str | None = None) -> str | None:
        """The first address (without prefix) on `domain`, or on any interface."""
        for intf in self.interfaces:
            if intf.addresses and (domain is None or intf.domain == domain):
                return intf.addresses[0].split("/")[0]
        return None


@_repr_without_defaults("direct")
@dataclass(frozen=True)
class Lab:
    name: str  # the topology id, e.g. "routing-4x3"
    devices: tuple[Device, ...]
    direct: tuple[str, ...] = ()  # domains wired as one veth pair (see the module docstring)

    @property
    def domains(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for device in self.devices:
            for intf in device.interfaces:
                seen.setdefault(intf.domain)
        return tuple(seen)

    def device(self, name: str) -> Device:
        for device in self.devices:
            if device.name == name:
                return device
        raise KeyError(name)

    @property
    def probed(self) -> tuple[str, ...]:
        """The devices that reachability covers: every device with an address."""
        return tuple(d.name for d in self.devices if d.address() is not None)

    def probe_address(self, source: str, target: str) -> str:
        """The address `source` pings to reach `target`: the target's address on a domain
        they share (a router answers on its own subnet), else the target's first one."""
        src, dst = self.device(source), self.device(target)
        for intf in src.interfaces:
            shared = dst.address(intf.domain)
            if shared is not None:
                return shared
        address = dst.address()
        if address is None:
            raise KeyError(f"device {target!r} has no address to probe")
        return address

    def validate(self) -> None:
        """Raise ConfigError naming the first malformed device, interface or address."""
        names = [d.name for d in self.devices]
        if len(set(names)) != len(names):
            raise ConfigError(f"lab {self.name}: device names repeat: {sorted(names)}")
        for device in self.devices:
            if not NAME_RE.match(device.name):
                raise ConfigError(f"lab {self.name}: bad device name {device.name!r}")
            intf_names = [i.name for i in device.interfaces]
            if len(set(intf_names)) != len(intf_names):
                raise ConfigError(f"lab {self.name}: {device.name} repeats an interface name")
            for intf in device.interfaces:
                if not IFNAME_RE.match(intf.name) or not DOMAIN_RE.match(intf.domain):
                    raise ConfigError(
                        f"lab {self.name}: bad interface {intf.name!r} or domain {intf.domain!r} "
                        f"on {device.name} (interfaces: 1-15 characters, domains: 1-7)"
                    )
            self._validate_extras(device)
            for owner, addresses in [
                *((i.name, i.addresses) for i in device.interfaces),
                *((b.name, b.addresses) for b in device.bridges),
                ("lo", device.loopbacks),
            ]:
                for address in addresses:
                    try:
                        ipaddress.IPv4Interface(address)
                    except ValueError as err:
                        raise ConfigError(f"lab {self.name}: {device.name} {owner}: {err}") from err
        if any(d in names for d in self.domains):
            raise ConfigError(f"lab {self.name}: a domain has the name of a device")
        ends: dict[str, list[str]] = {}
        for device in self.devices:
            for intf in device.interfaces:
                ends.setdefault(intf.domain, []).append(device.name)
        for domain in self.direct:
            if len(ends.get(domain, [])) != 2 or len(set(ends[domain])) != 2:
                raise ConfigError(
                    f"lab {self.name}: direct domain {domain!r} joins {ends.get(domain, [])}; "
                    "a direct domain joins exactly two interfaces of two devices"
                )

    def _validate_extras(self, device: Device) -> None:
        """Bridges, aliases and loopbacks of one device."""
        intfs = {i.name for i in device.interfaces}
        enslaved: set[str] = set()
        for bridge in device.bridges:
            if not IFNAME_RE.match(bridge.name) or bridge.name in intfs | {"lo"}:
                raise ConfigError(
                    f"lab {self.name}: {device.name} bridge {bridge.name!r}: a free interface "
                    "name of 1-15 characters"
                )
            intfs.add(bridge.name)
            for port in bridge.ports:
                if port not in {i.name for i in device.interfaces} or port in enslaved:
                    raise ConfigError(
                        f"lab {self.name}: {device.name} bridge {bridge.name}: port {port!r} "
                        "is not an interface of the device, or is in another bridge"
                    )
                enslaved.add(port)
        for name, alias in [
            *((i.name, i.alias) for i in device.interfaces),
            *((b.name, b.alias) for b in device.bridges),
        ]:
            if not ALIAS_RE.match(alias):
                raise ConfigError(
                    f"lab {self.name}: {device.name} {name}: alias {alias[:40]!r} is not "
                    "printable ASCII of at most 200 characters"
                )


@dataclass(frozen=True)
class CommandResult:
    """What one command did on one device."""

    argv: tuple[str, ...]
    exit_code: int | None  # None when it was killed (timeout or output cap)
    output: str  # stdout and stderr interleaved, cut at the output cap
    exec_s: float
    timed_out: bool = False
    truncated: bool = False  # the output cap was hit (and the command killed)


PINGALL = "*** Ping: testing ping reachability"  # the first line of a rendered matrix


@dataclass(frozen=True)
class Reachability:
    """Who reaches whom over one protocol: `ok` holds the ordered (source, target) pairs that
    answered, among the pairs probed (`probed`; None: every ordered pair of `devices`)."""

    devices: tuple[str, ...]
    ok: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    probed: frozenset[tuple[str, str]] | None = None

    def _pairs(self) -> list[tuple[str, str]]:
        return [
            (s, t)
            for s in self.devices
            for t in self.devices
            if s != t and (self.probed is None or (s, t) in self.probed)
        ]

    @property
    def pairs(self) -> int:
        if self.probed is None:
            return len(self.devices) * (len(self.devices) - 1)
        return len(self._pairs())

    @property
    def failed(self) -> list[tuple[str, str]]:
        return [p for p in self._pairs() if p not in self.ok]

    @property
    def full(self) -> bool:
        return len(self.ok) == self.pairs

    @property
    def loss(self) -> float:
        """Fraction of probed pairs that did not answer (NetArena's packet loss)."""
        return 1.0 - len(self.ok) / self.pairs if self.pairs else 0.0

    def lost_since(self, before: Reachability) -> list[tuple[str, str]]:
        """Pairs that answered in `before` and do not now."""
        return sorted(before.ok - self.ok)

    def rows(self) -> list[str]:
        """Compact form for evidence: per source, per target '1' (answered), '0' (probed,
        silent), '.' (not probed), '-' for itself."""

        def mark(s: str, t: str) -> str:
            if s == t:
                return "-"
            if self.probed is not None and (s, t) not in self.probed:
                return "."
            return "1" if (s, t) in self.ok else "0"

        return ["".join(mark(s, t) for t in self.devices) for s in self.devices]

    @classmethod
    def from_rows(cls, devices: Sequence[str], rows: Sequence[str]) -> Reachability:
        devices = tuple(devices)
        if len(rows) != len(devices) or any(len(r) != len(devices) for r in rows):
            raise ValueError(f"{len(rows)} rows do not fit {len(devices)} devices")
        marks = {
            (s, t): bit
            for s, row in zip(devices, rows, strict=True)
            for t, bit in zip(devices, row, strict=True)
            if s != t
        }
        ok = frozenset(p for p, bit in marks.items() if bit == "1")
        skipped = any(bit == "." for bit in marks.values())
        probed = frozenset(p for p, bit in marks.items() if bit != ".") if skipped else None
        return cls(devices, ok, probed)

    def render(self) -> str:
        """Mininet's pingall layout: per source the targets that replied, X for the others."""
        width = max((len(d) for d in self.devices), default=0)
        lines = [PINGALL]
        for s in self.devices:
            marks = [t if (s, t) in self.ok else "X" for t in self.devices if t != s]
            lines.append(f"{s:<{width}} -> {' '.join(marks)}")
        lines.append(self.results_line())
        return "\n".join(lines)

    def results_line(self) -> str:
        got = len(self.ok)
        return f"*** Results: {round(100 * self.loss)}% dropped ({got}/{self.pairs} received)"

    @classmethod
    def parse(cls, text: str) -> Reachability:
        """The inverse of `render`: the matrix `text` holds (its rendered lines alone, from
        the "*** Ping" line through the "*** Results" line); ValueError when it is not one."""
        lines = text.strip("\n").split("\n")
        if len(lines) < 2 or lines[0] != PINGALL or not lines[-1].startswith("*** Results:"):
            raise ValueError("not a rendered reachability matrix")
        rows = [line.partition(" -> ") for line in lines[1:-1]]
        devices = tuple(source.strip() for source, _, _ in rows)
        ok = set()
        for (_, arrow, marks), s in zip(rows, devices, strict=True):
            targets = [t for t in devices if t != s]
            seen = marks.split()
            if not arrow or not s or len(seen) != len(targets):
                raise ValueError(f"the row of {s!r} does not fit {len(devices)} devices")
            for t, mark in zip(targets, seen, strict=True):
                if mark == t:
                    ok.add((s, t))
                elif mark != "X":
                    raise ValueError(f"the row of {s!r} shows {mark!r} where {t!r} or X belongs")
        return cls(devices, frozenset(ok))


class Emulator(Protocol):
    """One running lab of one backend. Methods raise pipeline.errors.EnvironmentFailure
    when the backend fails (never for a command that merely exits non-zero)."""

    prefix: str  # unique on this machine while the instance lives; names what it creates
    lab: Lab | None

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def build(self, lab: Lab) -> None:
        """Create the lab's devices, domains and links, configure them, run startups."""

    def run(
        self,
        device: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        output_bytes: int,
        host_prefix: Sequence[str] = (),
    ) -> CommandResult:
        """Run argv (no shell) on one device; kill it at the timeout or the output cap.
        `host_prefix` runs first, on the host, before the device is entered (e.g. a
        command that moves the process into a cgroup, then execs the rest)."""

    def reachability(self) -> Reachability:
        """Ping every ordered pair of the lab's probed devices (an ICMP flow each)."""

    def probe(self, flows: Sequence[Flow]) -> dict[Flow, bool]:
        """Send each flow (emulators/probe.py) and say which succeeded: the probed address
        answered and the flow's target device received it; silence is asked again with
        longer waits before it is judged."""

    def snapshot(self) -> None:
        """Record the state of every device as the one `reset` restores."""

    def reset(self) -> float:
        """Undo whatever `run` changed since the snapshot, verify it, return the seconds."""

    def stop(self) -> None:
        """Tear down everything this instance created; idempotent."""

    @classmethod
    def cleanup_stale(cls) -> list[str]:
        """Remove what dead instances of this backend left behind; say what went."""

    @classmethod
    def leftovers(cls, prefix: str) -> list[str]:
        """What of the instance `prefix` still exists (processes, bridges, namespaces,
        containers, files); empty once it stopped or was cleaned up."""
