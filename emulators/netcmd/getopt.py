"""GNU getopt_long, as glibc reads an argv: so a check sees exactly the options a tool sees.

`parse(args, shorts, longs)` returns the options in order and the operands. It follows
glibc's rules, the ones an attacker's spellings rely on:

  - short options cluster (`-nvL`); an option with a required argument takes the rest of
    its token or, if none, the next token (`-tnat`, `-t nat`, and `-c2W1` gives -c "2W1");
    an optional argument (`p::`) is taken only from the rest of the token;
  - `--name=value` and `--name value` (required arguments), `--name=value` only
    (optional ones); a long name may be abbreviated to any unique prefix (`--mo` is
    `--modprobe`); an exact match wins over prefixes; an ambiguous prefix is an error;
  - options and operands may be interleaved (argv is permuted) unless the short string
    starts with `+`; `--` ends the options.

A malformed argv raises GetoptError with glibc's wording, as the tool would have refused
it; callers turn that into a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass

NONE, REQUIRED, OPTIONAL = 0, 1, 2


class GetoptError(ValueError):
    """The tool itself would reject this argv."""


@dataclass(frozen=True)
class Option:
    name: str  # "-x" for a short option, "--name" for a long one (the canonical spelling)
    value: str | None  # None: no argument given
    spelled: str  # what the argv held, e.g. "--mo=/bin/sh"


def _shorts(spec: str) -> dict[str, int]:
    out: dict[str, int] = {}
    i = 0
    spec = spec.lstrip("+-:")
    while i < len(spec):
        char = spec[i]
        kind = NONE
        if spec[i + 1 : i + 3] == "::":
            kind, i = OPTIONAL, i + 3
        elif spec[i + 1 : i + 2] == ":":
            kind, i = REQUIRED, i + 2
        else:
            i += 1
        out[char] = kind
    return out


def resolve_long(name: str, longs: dict[str, int]) -> str:
    """The long option `name` (without `--`) stands for: exact, or a unique prefix."""
    if name in longs:
        return name
    found = [n for n in longs if n.startswith(name)]
    if not found:
        raise GetoptError(f"unrecognized option '--{name}'")
    if len(found) > 1:
        options = " ".join(f"'--{n}'" for n in sorted(found))
        raise GetoptError(f"option '--{name}' is ambiguous; possibilities: {options}")
    return found[0]


def parse(
    args: list[str], shorts: str, longs: dict[str, int] | None = None
) -> tuple[list[Option], list[str]]:
    """(options in order, operands) of `args` (the words after the program name)."""
    table = _shorts(shorts)
    longs = longs or {}
    permute = not shorts.startswith("+")
    options: list[Option] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            operands += args[i:]
            break
        if token.startswith("--"):
            body = token[2:]
            raw, eq, value = body.partition("=")
            name = resolve_long(raw, longs)
            kind = longs[name]
            if kind == NONE and eq:
                raise GetoptError(f"option '--{name}' doesn't allow an argument")
            if kind == REQUIRED and not eq:
                if i >= len(args):
                    raise GetoptError(f"option '--{name}' requires an argument")
                value, i = args[i], i + 1
            options.append(Option(f"--{name}", value if (eq or kind == REQUIRED) else None, token))
            continue
        if token.startswith("-") and token != "-":
            rest = token[1:]
            while rest:
                char, rest = rest[0], rest[1:]
                if char not in table:
                    raise GetoptError(f"invalid option -- '{char}'")
                kind = table[char]
                if kind == NONE:
                    options.append(Option(f"-{char}", None, token))
                    continue
                if rest:
                    options.append(Option(f"-{char}", rest, token))
                elif kind == REQUIRED:
                    if i >= len(args):
                        raise GetoptError(f"option requires an argument -- '{char}'")
                    options.append(Option(f"-{char}", args[i], token))
                    i += 1
                else:
                    options.append(Option(f"-{char}", None, token))
                rest = ""
            continue
        if not permute:
            operands += args[i - 1 :]
            break
        operands.append(token)
    return options, operands
