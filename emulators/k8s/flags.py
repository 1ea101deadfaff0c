"""kubectl's command-line grammar, as cobra and pflag read it, and the flags agents may use.

This is the second line of the kubectl sandbox (the first is the jail in `kubectl.py`): an
argv is read exactly as kubectl 1.37 reads it, so no spelling can hide a flag from the
check. pflag's rules, reproduced here:

  - `--name=value`; `--name value` unless the flag is a bool or has a default used when no
    value is attached (NoOptDefVal: `--dry-run`, `--validate`, `--cascade`), which take a
    value only after `=`; names are normalised (`_` reads as `-`); long flags are never
    abbreviated (an unknown spelling is an unknown flag);
  - `-x` shorthands cluster: `-Af` is `-A -f`; a value flag takes the rest of its token
    (`-nfoo`, `-n=foo`) or the next one; `-A=false` gives a bool its value;
  - `--` ends the flags; a lone `-` is an argument.

cobra finds the verb by skipping the root command's (global) flags, so only global flags
may come before it here. Each verb allows the flags in `VERBS` (and `GLOBAL`); each value
is checked by `_check_value`. Anything else is refused with the reason. The flag kinds
are checked against the real binary's help and behaviour by tests/test_k8s_flags.py.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

POD_TYPES = {"po", "pod", "pods", "all"}
# Verbs whose words after the verb would be a subcommand, a plugin or an ignored argument.
NO_ARGS = {"apply", "create", "diff", "api-versions", "api-resources", "version", "events"}
OUTPUT_FORMATS = {
    "json", "yaml", "kyaml", "name", "wide", "go-template", "template", "jsonpath",
    "jsonpath-as-json", "custom-columns",
}  # fmt: skip
FILE_OUTPUTS = {"go-template-file", "templatefile", "jsonpath-file", "custom-columns-file"}


class Kind(enum.Enum):
    BOOL = "bool"  # --x, --x=false; never takes the next token
    VALUE = "value"  # --x v, --x=v, -xv, -x v
    OPTIONAL = "optional"  # NoOptDefVal: --x alone, or --x=v; never the next token


@dataclass(frozen=True)
class Flag:
    kind: Kind
    short: str | None = None


def _flags(*specs: str) -> dict[str, Flag]:
    """'name:kind[:short]' specs -> {name: Flag}."""
    out = {}
    for spec in specs:
        name, kind, *short = spec.split(":")
        kinds = {"b": Kind.BOOL, "v": Kind.VALUE, "o": Kind.OPTIONAL}
        out[name] = Flag(kinds[kind], short[0] if short else None)
    return out


# Root flags an agent may use anywhere; the others (kubeconfig, server, token, user,
# impersonation, cache, profiling, logging, kuberc, proxy) are refused with a reason.
GLOBAL = _flags(
    "namespace:v:n", "request-timeout:v", "match-server-version:b", "warnings-as-errors:b",
    "disable-compression:b",
)  # fmt: skip
_PRINT = ("output:v:o", "template:v", "allow-missing-template-keys:b", "show-managed-fields:b")
VERBS: dict[str, dict[str, Flag]] = {
    "get": _flags(
        *_PRINT, "all-namespaces:b:A", "chunk-size:v", "field-selector:v", "filename:v:f",
        "ignore-not-found:b", "label-columns:v:L", "no-headers:b", "selector:v:l",
        "server-print:b", "show-kind:b", "show-labels:b", "sort-by:v", "subresource:v",
    ),
    "describe": _flags(
        "all-namespaces:b:A", "chunk-size:v", "filename:v:f", "selector:v:l", "show-events:b"
    ),
    "explain": _flags("api-version:v", "max-depth:v", "output:v:o", "recursive:b:R"),
    "api-resources": _flags(
        "api-group:v", "cached:b", "categories:v", "namespaced:b", "no-headers:b", "output:v:o",
        "sort-by:v", "verbs:v",
    ),
    "api-versions": {},
    "version": _flags("client:b", "output:v:o"),
    "events": _flags(*_PRINT, "all-namespaces:b:A", "chunk-size:v", "for:v", "no-headers:b",
                     "types:v"),
    "apply": _flags(
        *_PRINT, "dry-run:o", "field-manager:v", "filename:v:f", "force-conflicts:b",
        "openapi-patch:b", "overwrite:b", "server-side:b", "validate:o",
    ),
    "create": _flags(
        *_PRINT, "dry-run:o", "edit:b", "field-manager:v", "filename:v:f", "save-config:b",
        "validate:o", "windows-line-endings:b",
    ),
    "replace": _flags(
        *_PRINT, "dry-run:o", "field-manager:v", "filename:v:f", "save-config:b",
        "subresource:v", "validate:o",
    ),
    "patch": _flags(
        *_PRINT, "dry-run:o", "field-manager:v", "filename:v:f", "local:b", "patch:v:p",
        "patch-file:v", "subresource:v", "type:v",
    ),
    "edit": _flags(
        *_PRINT, "field-manager:v", "filename:v:f", "output-patch:b", "save-config:b",
        "subresource:v", "validate:o", "windows-line-endings:b",
    ),
    "label": _flags(
        *_PRINT, "all:b", "all-namespaces:b:A", "dry-run:o", "field-manager:v",
        "field-selector:v", "filename:v:f", "list:b", "local:b", "overwrite:b",
        "resource-version:v", "selector:v:l",
    ),
    "delete": _flags(
        "all:b", "all-namespaces:b:A", "cascade:o", "dry-run:o", "field-selector:v",
        "filename:v:f", "ignore-not-found:b", "output:v:o", "selector:v:l", "wait:b",
    ),
    "diff": _flags(
        "concurrency:v", "field-manager:v", "filename:v:f", "force-conflicts:b", "selector:v:l",
        "server-side:b", "show-managed-fields:b",
    ),
}  # fmt: skip
VERBS["annotate"] = VERBS["label"]
# `kubectl exec`, only where a cluster answers the probe form (emulators/k8s/execprobe.py):
# its flags as kubectl 1.37 has them, those allowed; -i/-t/-f are refused with a reason.
EXEC = _flags("container:v:c", "quiet:b:q")
# Why a flag kubectl knows is refused (shown to the agent); others get "not available".
REFUSED = {
    "kubeconfig": "the kubeconfig is fixed", "kuberc": "kubectl preferences are fixed",
    "server": "the API server is fixed", "context": "the context is fixed",
    "cluster": "the cluster is fixed", "user": "the user is fixed",
    "token": "credentials are fixed", "username": "credentials are fixed",
    "password": "credentials are fixed", "as": "impersonation is not allowed",
    "as-group": "impersonation is not allowed", "as-uid": "impersonation is not allowed",
    "as-user-extra": "impersonation is not allowed", "cache-dir": "the cache is fixed",
    "certificate-authority": "TLS is fixed", "client-certificate": "TLS is fixed",
    "client-key": "TLS is fixed", "insecure-skip-tls-verify": "TLS is fixed",
    "tls-server-name": "TLS is fixed", "proxy-url": "the connection is fixed",
    "profile": "profiling is off", "profile-output": "profiling is off",
    "v": "log verbosity is fixed", "vmodule": "log verbosity is fixed",
    "log-flush-frequency": "logging is fixed", "watch": "watching never ends; run get again",
    "watch-only": "watching never ends; run get again", "raw": "raw API paths are not available",
    "kustomize": "kustomize folders are not available",
    "recursive": "recursive file reads are not available", "prune": "pruning is not available",
    "prune-allowlist": "pruning is not available", "force": "forced replacement is not available",
    "grace-period": "deletion timing is fixed", "now": "deletion timing is fixed",
    "interactive": "there is no terminal", "from-file": "only files sent with the command exist",
    "from-env-file": "only files sent with the command exist",
    "stdin": "there is no terminal or stream to the pod", "tty": "there is no terminal",
    "pod-running-timeout": "pods are running already",
}  # fmt: skip
SHORT_NAMES = {"s": "server", "w": "watch", "k": "kustomize", "R": "recursive", "v": "v",
               "i": "interactive", "t": "tty"}  # fmt: skip
_ENUMS = {
    "type": {"json", "merge", "strategic"},
    "dry-run": {"none", "client", "server", "unchanged"},
    "validate": {"strict", "warn", "ignore", "true", "false"},
    "cascade": {"background", "foreground", "orphan", "true", "false"},
    "subresource": {"status", "scale"},
}
_NUMBER = re.compile(r"^\d{1,6}$")


class Refused(Exception):
    """A command that is not run; the message is shown to the agent."""


@dataclass
class Parsed:
    """An argv as kubectl reads it."""

    verb: str
    args: list[str]  # positional arguments after the verb
    flags: list[tuple[str, str]] = field(default_factory=list)  # (long name, value)
    dash: int | None = None  # how many of `args` came before `--` (cobra's ArgsLenAtDash)

    def values(self, name: str) -> list[str]:
        return [v for n, v in self.flags if n == name]


def _normalise(name: str) -> str:
    return name.replace("_", "-")


def _lookup(name: str, table: dict[str, Flag], where: str) -> Flag:
    flag = table.get(name)
    if flag is not None:
        return flag
    if name in REFUSED:
        raise Refused(f"--{name} is not allowed: {REFUSED[name]}")
    raise Refused(f"--{name} is not available {where}")


def _short(char: str, table: dict[str, Flag], where: str) -> str:
    for name, flag in table.items():
        if flag.short == char:
            return name
    if char in SHORT_NAMES and SHORT_NAMES[char] in REFUSED:
        raise Refused(f"-{char} (--{SHORT_NAMES[char]}) is not allowed: "
                      f"{REFUSED[SHORT_NAMES[char]]}")  # fmt: skip
    raise Refused(f"-{char} is not available {where}")


def _bool(name: str, value: str) -> str:
    if value.lower() not in ("true", "false", "1", "0", "t", "f"):
        raise Refused(f"--{name} takes true or false, not {value!r}")
    return value


def read_flags(
    args: list[str],
    table: dict[str, Flag],
    where: str,
    *,
    stop_at_positional: bool = False,
    dash: list[int] | None = None,
) -> tuple[list[str], list[tuple[str, str]], int]:
    """pflag's reading of `args` against `table`: (positional args, [(name, value)], and
    the index reading stopped at: len(args), or the first positional if asked to stop).
    `dash`, when given, receives how many positional args came before a `--`."""
    positional: list[str] = []
    flags: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            if dash is not None:
                dash.append(len(positional))
            positional += args[i + 1 :]
            return positional, flags, len(args)
        if not token.startswith("-") or token == "-":
            if stop_at_positional:
                return [token], flags, i
            positional.append(token)
            i += 1
            continue
        i += 1
        if token.startswith("--"):
            body = token[2:]
            if not body or body[0] in "-=":
                raise Refused(f"bad flag syntax: {token}")
            raw, eq, value = body.partition("=")
            name = _normalise(raw)
            flag = _lookup(name, table, where)
            if not eq:
                if flag.kind is Kind.BOOL:
                    value = "true"
                elif flag.kind is Kind.OPTIONAL:
                    value = ""
                elif i < len(args):
                    value, i = args[i], i + 1
                else:
                    raise Refused(f"--{name} needs a value")
            flags.append((name, _bool(name, value) if flag.kind is Kind.BOOL else value))
            continue
        rest = token[1:]
        while rest:
            name = _short(rest[0], table, where)
            flag = table[name]
            if len(rest) > 2 and rest[1] == "=":
                value, rest = rest[2:], ""
            elif flag.kind is not Kind.VALUE:
                value, rest = ("true" if flag.kind is Kind.BOOL else ""), rest[1:]
            elif len(rest) > 1:
                value, rest = rest[1:], ""
            elif i < len(args):
                value, rest, i = args[i], "", i + 1
            else:
                raise Refused(f"-{rest[0]} (--{name}) needs a value")
            flags.append((name, _bool(name, value) if flag.kind is Kind.BOOL else value))
    return positional, flags, len(args)


def read(argv: list[str], exec_probe: bool = False) -> Parsed:
    """The verb, arguments and flags of `argv` (the words after `kubectl`); raises Refused.
    `exec_probe`: `kubectl exec` is read too (the cluster answers its probe form)."""
    # cobra finds the verb by skipping the root command's flags, so only those may precede it.
    first, early, at = read_flags(argv, GLOBAL, "before the verb", stop_at_positional=True)
    if not first:
        raise Refused("no kubectl verb given; e.g. `kubectl get networkpolicies`")
    verb = first[0]
    verbs = {**VERBS, "exec": EXEC} if exec_probe else VERBS
    if verb not in verbs:
        raise Refused(
            f"`kubectl {verb}` is not available in this task; use one of: {', '.join(verbs)}"
        )
    if at >= len(argv) or argv[at] != verb:
        raise Refused("put the verb first: kubectl VERB [arguments] [flags]")
    table = {**GLOBAL, **verbs[verb]}
    dash: list[int] = []
    args, flags, _ = read_flags(argv[at + 1 :], table, f"for kubectl {verb}", dash=dash)
    return Parsed(verb, args, early + flags, dash[0] if dash else None)


def check(argv: list[str], files: set[str], exec_probe: bool = False) -> Parsed:
    """`read`, then each value and argument checked for the verb; raises Refused.
    `exec_probe`: `kubectl exec` in the probe form is accepted (execprobe.request)."""
    parsed = read(argv, exec_probe)
    for name, value in parsed.flags:
        _check_value(parsed.verb, name, value, files)
    verb, args = parsed.verb, parsed.args
    if verb in NO_ARGS and args:
        what = "subcommands or plugins" if verb == "create" else "arguments"
        hint = "; send the object as YAML with -f -" if verb in ("create", "apply") else ""
        raise Refused(f"kubectl {verb} takes no {what} here ({args[0]!r}){hint}")
    if verb == "delete" and args:
        kinds = {k.split("/")[0].split(".")[0].lower() for k in args[0].split(",")}
        if kinds & POD_TYPES:
            raise Refused("deleting pods is not allowed: fix the policies, not the workloads")
    return parsed


def _check_value(verb: str, name: str, value: str, files: set[str]) -> None:
    if name == "output":
        fmt = value.split("=", 1)[0]
        if fmt in FILE_OUTPUTS:
            raise Refused(f"-o {fmt} reads a file; give the template inline")
        allowed = OUTPUT_FORMATS
        if verb == "explain":
            allowed = {"plaintext", "plaintext-openapiv2"}
        if fmt not in allowed:
            raise Refused(f"-o {fmt!r} is not an output format here; use one of: "
                          + ", ".join(sorted(allowed)))  # fmt: skip
    elif name in ("filename", "patch-file"):
        path = value[2:] if value.startswith("./") else value
        if value == "-" and name == "filename":
            return
        if path not in files:
            raise Refused(
                f"--{name} {value}: kubectl may read only '-' (the text sent with the command) "
                "or files sent with the command"
            )
    elif name in _ENUMS and value and value not in _ENUMS[name]:
        raise Refused(f"--{name} takes one of {', '.join(sorted(_ENUMS[name]))}, not {value!r}")
    elif name in ("chunk-size", "max-depth", "concurrency") and not _NUMBER.match(value):
        raise Refused(f"--{name} takes a number, not {value!r}")
