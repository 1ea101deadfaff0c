"""kubectl's grammar as emulators/k8s/flags.py reads it: the allow-list's flag kinds checked
against the real kubectl binary, and every refused flag in every spelling pflag accepts."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from emulators.k8s.flags import (
    EXEC,
    GLOBAL,
    REFUSED,
    SHORT_NAMES,
    VERBS,
    Kind,
    Refused,
    check,
    read,
)
from tests.conftest import require

KUBECTL = Path(sys.executable).with_name("kubectl")
_HELP_FLAG = re.compile(r"^\s+(?:-(\w), )?--([\w-]+)=(.*):$")


def _kubectl() -> str:
    found = str(KUBECTL) if KUBECTL.exists() else shutil.which("kubectl")
    require(found is not None, "kubectl is not installed (scripts/setup.sh)")
    return str(found)


@cache
def _help(verb: str) -> dict[str, tuple[str | None, str]]:
    """{flag: (shorthand, default)} from `kubectl <verb> --help` (or `kubectl options`)."""
    args = ["options"] if verb == "" else [verb, "--help"]
    out = subprocess.run(
        [_kubectl(), *args], capture_output=True, text=True, env={"KUBERC": "off"}, check=True
    ).stdout
    return {
        m.group(2): (m.group(1), m.group(3)) for m in map(_HELP_FLAG.match, out.splitlines()) if m
    }


def _needs_argument(verb: str, name: str) -> bool:
    """Whether the real kubectl refuses `--name` with no value attached and none after it."""
    done = subprocess.run(
        [_kubectl(), *([verb] if verb else ["get"]), f"--{name}"],
        capture_output=True,
        text=True,
        env={"KUBERC": "off", "KUBECONFIG": "/dev/null", "HOME": "/nonexistent"},
        timeout=30,
    )
    return "flag needs an argument" in done.stderr


CASES = [(verb, name, flag) for verb, table in VERBS.items() for name, flag in table.items()]
CASES += [("", name, flag) for name, flag in GLOBAL.items()]
CASES += [("exec", name, flag) for name, flag in EXEC.items()]  # clusters with the probe


@pytest.mark.parametrize(("verb", "name", "flag"), CASES, ids=lambda x: str(x) or "global")
def test_flag_kinds_match_the_real_kubectl(verb, name, flag):
    helped = _help(verb)
    assert name in helped, f"kubectl {verb or 'options'} has no --{name}"
    short, default = helped[name]
    assert short == flag.short
    if flag.kind is Kind.BOOL:
        assert default in ("true", "false")
    else:
        assert default not in ("true", "false")
        assert _needs_argument(verb, name) is (flag.kind is Kind.VALUE)


def test_refused_flags_and_shorthands_exist_in_kubectl():
    known = {name for verb in [*VERBS, "exec"] for name in _help(verb)} | set(_help(""))
    known |= {"from-file", "from-env-file", "now", "interactive", "log-file", "prune-allowlist"}
    assert set(REFUSED) <= known | {"kustomize", "watch-only"}
    assert set(SHORT_NAMES.values()) <= set(REFUSED)


# Each refused flag, spelled every way pflag reads it, in front of or behind flags that take
# no next word (NoOptDefVal or bool), clustered behind a bool shorthand, with `_` for `-`.
def _spellings(name: str, short: str | None) -> list[list[str]]:
    out = [
        [f"--{name}=x"],
        [f"--{name}", "x"],
        [f"--{name.replace('-', '_')}=x"],
        ["--validate", f"--{name}=x"],
        ["--dry-run", f"--{name}", "x"],
        ["--show-managed-fields", f"--{name}=x"],
    ]
    if short:
        out += [[f"-{short}x"], [f"-{short}=x"], [f"-{short}", "x"], [f"-A{short}x"]]
    return out


SHORT_OF = {v: k for k, v in SHORT_NAMES.items()}
SPELLED = [
    (name, spelled) for name in sorted(REFUSED) for spelled in _spellings(name, SHORT_OF.get(name))
]


@pytest.mark.parametrize(
    ("name", "spelled"), SPELLED, ids=lambda x: " ".join(x) if isinstance(x, list) else x
)
def test_refused_flags_in_every_spelling(name, spelled):
    for argv in (
        ["apply", *spelled, "-f", "-"],
        [*spelled, "get", "pods"],
        ["get", "pods", *spelled],
    ):
        with pytest.raises(Refused):
            check(argv, set())


@pytest.mark.parametrize(
    ("argv", "verb", "args", "flags"),
    [
        ("get netpol -A", "get", ["netpol"], [("all-namespaces", "true")]),
        ("-n kube-system get netpol", "get", ["netpol"], [("namespace", "kube-system")]),
        ("-nkube-system get po", "get", ["po"], [("namespace", "kube-system")]),
        ("--namespace=x get po", "get", ["po"], [("namespace", "x")]),
        ("get po -ojson", "get", ["po"], [("output", "json")]),
        ("get po -o=yaml", "get", ["po"], [("output", "yaml")]),
        ("get -Ao wide po", "get", ["po"], [("all-namespaces", "true"), ("output", "wide")]),
        ("get -A=false po", "get", ["po"], [("all-namespaces", "false")]),
        ("get --all_namespaces po", "get", ["po"], [("all-namespaces", "true")]),
        ("apply --dry-run -f -", "apply", [], [("dry-run", ""), ("filename", "-")]),
        ("apply --validate=false -f -", "apply", [], [("validate", "false"), ("filename", "-")]),
        ("delete --cascade netpol a", "delete", ["netpol", "a"], [("cascade", "")]),
        ("get po -- -A", "get", ["po", "-A"], []),
        ("get - po", "get", ["-", "po"], []),
    ],
)
def test_argv_is_read_as_pflag_reads_it(argv, verb, args, flags):
    parsed = read(argv.split())
    assert (parsed.verb, parsed.args, parsed.flags) == (verb, args, flags)


@pytest.mark.parametrize(
    ("argv", "files", "needle"),
    [
        ("", set(), "no kubectl verb"),
        ("-n", set(), "needs a value"),
        ("exec -it frontend -- sh", set(), "kubectl exec"),
        ("get -A -- exec", set(), None),
        ("--bogus get po", set(), "--bogus is not available before the verb"),
        ("-A get po", set(), "-A is not available before the verb"),
        ("get po --kubec=x", set(), "--kubec is not available"),
        ("apply -f /etc/passwd", set(), "may read only"),
        ("apply -f manifest.yaml", {"manifest.yaml"}, None),
        ("apply -f ./manifest.yaml", {"manifest.yaml"}, None),
        ("apply -fmanifest.yaml", {"other"}, "may read only"),
        ("apply -f http://127.0.0.1:6443/x", set(), "may read only"),
        ("patch netpol a --patch-file=-", set(), "may read only"),
        ("get po -o jsonpath-file=/etc/passwd", set(), "reads a file"),
        ("get po -ocustom-columns-file=/x", set(), "reads a file"),
        ("get po --output=templatefile", set(), "reads a file"),
        ("get po -o bogus", set(), "not an output format"),
        ("create configmap x", set(), "takes no subcommands or plugins"),
        ("create evilplugin", set(), "takes no subcommands or plugins"),
        ("apply view-last-applied netpol a", set(), "takes no arguments"),
        ("delete po x", set(), "deleting pods"),
        ("delete pods,netpol --all", set(), "deleting pods"),
        ("delete all --all", set(), "deleting pods"),
        ("patch netpol a --type=evil -p {}", set(), "--type takes one of"),
        ("get po --chunk-size=-1", set(), "takes a number"),
        ("get po -A=maybe", set(), "true or false"),
        ("get ---x po", set(), "bad flag syntax"),
    ],
)
def test_checks_refuse_with_a_reason(argv, files, needle):
    if needle is None:
        check(argv.split(), files)
        return
    with pytest.raises(Refused, match=re.escape(needle)):
        check(argv.split(), files)
