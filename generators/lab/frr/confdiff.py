"""The difference between two running configurations of one FRR daemon, as the vty lines that
turn the current one into the wanted one (the warm restore's configuration half).

A daemon's `show running-config` is read as FRR prints it: top-level statements
(`ip prefix-list ...`, `no ipv6 forwarding`), and contexts, a header line (`interface X`,
`router ospf`, `router bgp N`, `route-map X deny 10`) whose lines are indented one space and
which ends with `exit`; inside a context, a sub-context (` address-family ipv4 unicast`)
holds lines indented two spaces and ends with ` exit-address-family`. Comments (`!`), blank
lines and the version banner are not configuration.

The lines: first what the wanted configuration lacks goes (`no LINE` in its context, `LINE`
without its `no` for a negated line; a context the wanted one lacks goes whole with `no
HEADER`, an interface context line by line, since `no interface` is not every daemon's),
then what it holds is added in its own order (a neighbour's `remote-as` before its other
lines). FRR prints its configuration in a canonical order, so two equal configurations
print equal texts; the restore reads the configuration again after applying the lines
and compares (generators/lab/frr/warm.py), so a line this difference gets wrong costs a
fallback restart, never a wrong lab.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BANNER = ("frr version", "frr defaults")
SUB_END = "exit-address-family"


@dataclass
class Context:
    """A context's lines, in order, and its sub-contexts' lines by header."""

    lines: list[str] = field(default_factory=list)
    subs: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Config:
    """One daemon's running configuration, parsed; see the module docstring."""

    statements: list[str] = field(default_factory=list)
    contexts: dict[str, Context] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Config:
        out = cls()
        lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
        lines = [
            line
            for line in lines
            if line.strip() and not line.strip().startswith("!") and not line.startswith(BANNER)
        ]
        context: Context | None = None
        sub: list[str] | None = None
        for n, line in enumerate(lines):
            depth = len(line) - len(line.lstrip(" "))
            word = line.strip()
            if depth == 0:
                sub = None
                if word == "exit":
                    context = None
                elif n + 1 < len(lines) and (
                    lines[n + 1].startswith(" ") or lines[n + 1].strip() == "exit"
                ):
                    context = out.contexts.setdefault(word, Context())
                else:
                    context = None
                    out.statements.append(word)
            elif context is None:
                out.statements.append(word)  # indented outside a context: kept as is
            elif depth == 1 and word == SUB_END:
                sub = None
            elif depth == 1 and word.startswith("address-family "):
                sub = context.subs.setdefault(word, [])
            elif sub is not None and depth >= 2:
                sub.append(word)
            else:
                sub = None
                context.lines.append(word)
        return out


def negate(line: str) -> str:
    """The line that undoes `line`: its `no` dropped, or a `no` added."""
    return line[3:] if line.startswith("no ") else f"no {line}"


def diff(current: str, wanted: str) -> list[str]:
    """The vty lines (configuration mode) turning `current` into `wanted`; empty if equal."""
    have, want = Config.parse(current), Config.parse(wanted)
    removals: list[str] = []
    additions: list[str] = []
    for header, ctx in have.contexts.items():
        target = want.contexts.get(header)
        if target is None and not header.startswith("interface "):
            removals.append(negate(header))
            continue
        target = target or Context()
        lines = [f"{negate(x)}" for x in ctx.lines if x not in target.lines]
        for sub_header, sub_lines in ctx.subs.items():
            wanted_sub = target.subs.get(sub_header, [])
            gone = [negate(x) for x in sub_lines if x not in wanted_sub]
            if gone:
                lines += [sub_header, *gone, SUB_END]
        if lines:
            removals += [header, *lines, "exit"]
    removals += [negate(s) for s in have.statements if s not in want.statements]
    additions += [s for s in want.statements if s not in have.statements]
    for header, target in want.contexts.items():
        ctx = have.contexts.get(header) or Context()
        lines = [x for x in target.lines if x not in ctx.lines]
        for sub_header, sub_lines in target.subs.items():
            missing = [x for x in sub_lines if x not in ctx.subs.get(sub_header, [])]
            if missing:
                lines += [sub_header, *missing, SUB_END]
        if lines or header not in have.contexts:
            additions += [header, *lines, "exit"]
    return removals + additions


def same(current: str, wanted: str) -> bool:
    """Whether two running configurations hold the same configuration."""
    return Config.parse(current) == Config.parse(wanted)
