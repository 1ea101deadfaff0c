"""The catalogue's contract: what a fault kind is, what one drawn fault holds, and the registry.

A *fault kind* (`FaultKind`) is one declarative record: its id (the label agents see in a
detect/localize vocabulary and the `operation` label of a query), its family, the topology
families it can be drawn on, what it looks like to an agent, and `draw`, a pure function of
a seeded `random.Random`, a `NetSpec` and what the query has already taken, that returns one
concrete `Fault` (or None when the lab offers no place for it). Drawing is pure; whether a
drawn fault really breaks what it claims is proven live by the generator (each fault alone
observable, its fix restoring it), never assumed.

A *fault* (`Fault`) holds everything the app needs, as data:
  - `inject`: trusted actions that make it (vtysh configuration lines on a router, argv run
    in a device's namespace, a service's configuration), run by the app, never by an agent;
  - `fix`: the oracle's replies, `(machine, command)` as an agent sends them through the
    agent's own sandbox (so every fix is a proof that the agent's tools suffice);
  - `evidence`: commands an agent can run, with the pattern their output shows while the
    fault is present (the fairness proof: a localize oracle plays exactly these);
  - `cause`: the root cause as a localize answer names it (device, component, kind);
  - `elements`: the network elements it touches, so two faults of one query never collide
    unless composition wants them to (masking pairs draw on the same element on purpose);
  - `probes`: checks the verdict runs, beyond every host pair's ICMP, TCP and UDP echo,
    while the query holds it (a large-packet pair across its hop, a flow that must stay
    closed, a name that must resolve): what shows a fault that no 56-byte echo sees;
  - `note`: for a benign anomaly, the line the prompt's intent section documents it with.

The registry is complete whenever this module is: importing it imports its package first,
whose `__init__` imports every family module, and each registers its kinds.

A *benign anomaly* is drawn the same way (`FaultKind(benign=True)`): intended state that looks
like a fault, documented in the prompt and on the device; touching it is unsafe, naming it as
a cause costs precision, and it is never a detect positive.

Families (`FaultKind.family`): ospf, bgp, dataplane, l2, services (FRR labs, this app), and
the catalogue's other apps' families k8s and malt, which register elsewhere.
Kind ids are `<family>.<name>`, lower case, e.g. `ospf.mtu_mismatch`.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from generators.netlab.spec import NetSpec
from pipeline.api import ConfigError

FAMILIES = ("ospf", "bgp", "dataplane", "l2", "services")
KIND_ID = re.compile(r"^[a-z0-9]+\.[a-z0-9_]+$")
# Verdict classes a kind exercises (DESIGN28 §3.1): flows that must work, flows that must
# stay closed, protocol or path intent, and benign state that must stay as it is.
CHECKS = frozenset({"works", "closed", "intent", "benign"})
# How a trusted injection is applied: vtysh configuration lines on a router (each line as
# `vtysh -c` would take it, inside `configure terminal`), an argv run in the device's
# network namespace, or a service's configuration directive.
HOW = frozenset({"vtysh", "argv", "service"})
PROBES = frozenset({"large", "closed", "name"})  # Probe.kind


@dataclass(frozen=True)
class Injection:
    device: str
    how: str  # one of HOW
    lines: tuple[str, ...]  # vtysh: configuration lines; argv: one argv; service: directives

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "how": self.how, "lines": list(self.lines)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Injection:
        return cls(data["device"], data["how"], tuple(data["lines"]))


@dataclass(frozen=True)
class Evidence:
    machine: str
    command: str  # as an agent sends it (passes the agent's sandbox, read-only)
    pattern: str  # a regex the command's output matches while the fault is present

    def to_json(self) -> dict[str, Any]:
        return {"machine": self.machine, "command": self.command, "pattern": self.pattern}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(data["machine"], data["command"], data["pattern"])


@dataclass(frozen=True)
class Probe:
    """A check the verdict runs while the query holds the fault that declares it:
    large   an ICMP echo of `size` bytes (the whole IP packet, DF set) from `source` to
            `address` (on `target`) must come back;
    closed  a `protocol` flow (icmp, or tcp/udp to the echo port 7) from `source` to
            `address` must NOT come back (what the intent keeps closed);
    name    `dig @address name` from `source` must answer `expect` (an IPv4 address)."""

    kind: str  # large | closed | name
    source: str
    target: str
    address: str
    protocol: str = "icmp"
    size: int = 1400
    name: str = ""
    expect: str = ""

    def __post_init__(self) -> None:
        if self.kind not in PROBES:
            raise ConfigError(f"probe kind {self.kind!r}: one of {sorted(PROBES)}")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Cause:
    """A root cause as a localize answer names it (pipeline/diagnosis.py scores it)."""

    device: str
    component: str  # the kind's component form, e.g. "r7-eth2", "bgp:172.16.0.6"
    kind: str

    def to_json(self) -> dict[str, str]:
        return {"device": self.device, "component": self.component, "kind": self.kind}


@dataclass(frozen=True)
class Fault:
    kind: str  # a FaultKind id
    cause: Cause
    placement: str  # the placement class (variety strata), e.g. "link", "border", "leaf"
    summary: str  # what is wrong, in words (ground truth; never shown to agents)
    inject: tuple[Injection, ...]
    fix: tuple[tuple[str, str], ...]  # (machine, command): the oracle's replies, in order
    evidence: tuple[Evidence, ...]
    elements: frozenset[str] = frozenset()  # e.g. {"link:3", "router:r2", "session:r1-r4"}
    benign: bool = False
    probes: tuple[Probe, ...] = ()
    note: str = ""  # benign: its documentation, as the prompt's intent section shows it

    def to_json(self) -> dict[str, Any]:
        # probes and note only when present: a fault without them serializes (and keys its
        # query) exactly as before they existed, so the routing families' pinned draws hold
        return (
            {
                "kind": self.kind,
                "cause": self.cause.to_json(),
                "placement": self.placement,
                "summary": self.summary,
                "inject": [i.to_json() for i in self.inject],
                "fix": [{"machine": m, "command": c} for m, c in self.fix],
                "evidence": [e.to_json() for e in self.evidence],
                "elements": sorted(self.elements),
                "benign": self.benign,
            }
            | ({"probes": [p.to_json() for p in self.probes]} if self.probes else {})
            | ({"note": self.note} if self.note else {})
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fault:
        return cls(
            kind=data["kind"],
            cause=Cause(**data["cause"]),
            placement=data["placement"],
            summary=data["summary"],
            inject=tuple(Injection.from_json(i) for i in data["inject"]),
            fix=tuple((f["machine"], f["command"]) for f in data["fix"]),
            evidence=tuple(Evidence.from_json(e) for e in data["evidence"]),
            elements=frozenset(data.get("elements", ())),
            benign=bool(data.get("benign", False)),
            probes=tuple(Probe(**p) for p in data.get("probes", ())),
            note=str(data.get("note", "")),
        )


@dataclass
class Taken:
    """What the query has drawn so far: the elements its faults touch, and their kinds."""

    elements: set[str] = field(default_factory=set)
    kinds: list[str] = field(default_factory=list)

    def add(self, fault: Fault) -> None:
        self.elements |= fault.elements
        self.kinds.append(fault.kind)

    def free(self, *elements: str) -> bool:
        return not (set(elements) & self.elements)


Draw = Callable[[random.Random, NetSpec, Taken], Fault | None]


@dataclass(frozen=True)
class FaultKind:
    id: str  # "<family>.<name>"
    family: str  # one of FAMILIES
    meaning: str  # one line for the vocabulary: what is wrong
    component: str  # the component form a cause names, in words
    topologies: frozenset[str]  # the netlab families it can be drawn on
    checks: frozenset[str]  # the verdict classes it exercises (CHECKS)
    draw: Draw
    masks: tuple[str, ...] = ()  # kinds it can hide when drawn on the same element
    benign: bool = False  # a benign anomaly: intended, documented, must stay
    # the lab sizes it can be drawn on; None: every size (the security policy's kinds
    # exist only where the policy does: large and xlarge labs, faults/security.py)
    sizes: frozenset[str] | None = None
    # kinds that vary one mistake (the security policy's four): together they weigh as one
    # kind in a draw, so one check does not answer most of a tier; "": a group of its own
    group: str = ""
    # kinds whose fault it keeps traffic off when drawn on the same element (an order trap,
    # faults/traps.py): fixing this one first moves live traffic onto the broken element
    shields: tuple[str, ...] = ()

    def drawn_on(self, family: str, size: str | None = None) -> bool:
        """Whether it can be drawn on a lab of `family` (and `size`, when given)."""
        return family in self.topologies and (
            size is None or self.sizes is None or size in self.sizes
        )


_KINDS: dict[str, FaultKind] = {}


def register(kind: FaultKind) -> FaultKind:
    """Add `kind` to the catalogue; an id seen before, or malformed, is a ConfigError."""
    if not KIND_ID.match(kind.id) or kind.id.split(".")[0] != kind.family:
        raise ConfigError(f"fault kind id {kind.id!r} must be '{kind.family}.<name>'")
    if kind.family not in FAMILIES:
        raise ConfigError(f"fault kind {kind.id!r}: unknown family {kind.family!r}")
    if not kind.checks <= CHECKS:
        raise ConfigError(f"fault kind {kind.id!r}: unknown checks {sorted(kind.checks - CHECKS)}")
    if kind.id in _KINDS:
        raise ConfigError(f"fault kind {kind.id!r} is registered twice")
    _KINDS[kind.id] = kind
    return kind


def define(
    family: str,
    name: str,
    meaning: str,
    component: str,
    draw: Draw,
    *,
    topologies: Iterable[str],
    checks: Iterable[str],
    masks: Iterable[str] = (),
    benign: bool = False,
    sizes: Iterable[str] | None = None,
    group: str = "",
    shields: Iterable[str] = (),
) -> FaultKind:
    """Register the kind `<family>.<name>`: how every family module declares its kinds."""
    return register(
        FaultKind(
            f"{family}.{name}", family, meaning, component, frozenset(topologies),
            frozenset(checks), draw, tuple(masks), benign,
            frozenset(sizes) if sizes is not None else None, group, tuple(shields),
        )
    )  # fmt: skip


def kinds(*, benign: bool | None = False) -> Iterator[FaultKind]:
    """The registered kinds in id order (faults only by default; `benign=None`: all)."""
    for kid in sorted(_KINDS):
        kind = _KINDS[kid]
        if benign is None or kind.benign == benign:
            yield kind


def kind(kid: str) -> FaultKind:
    try:
        return _KINDS[kid]
    except KeyError:
        raise ConfigError(f"unknown fault kind {kid!r}; choose one of {sorted(_KINDS)}") from None
