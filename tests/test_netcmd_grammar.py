"""The command check reads arguments as the real tools do: checked against the installed
ip, tc and iptables in throwaway network namespaces, and against Python's own GNU getopt.
"""

from __future__ import annotations

import getopt as pygetopt
import random
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from emulators.netcmd import getopt, iproute, iptables
from emulators.netcmd.policy import check
from tests.conftest import require_root

pytestmark = pytest.mark.integration


def _netns(*argv: str) -> subprocess.CompletedProcess:
    """Run argv in a fresh, empty network namespace (unshare -n), stdin closed."""
    require_root("network namespaces need root")
    return subprocess.run(
        ["unshare", "-n", *argv], capture_output=True, text=True, timeout=30,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


# -- getopt.py against Python's getopt.gnu_getopt (same rules for required arguments) ---------
SHORTS, LONGS = "abc:d:", {"alpha": 0, "beta": 0, "count": 1, "colour": 1, "delta": 0}
WORDS = ["-a", "-b", "-ab", "-c", "5", "-c5", "-bc5", "--alpha", "--al", "--count=3",
         "--count", "7", "--cou", "9", "--d", "x", "y", "--", "-", "--colour=red",
         "--col=1"]  # fmt: skip


def _ours(argv):
    options, operands = getopt.parse(argv, SHORTS, LONGS)
    return [(o.name, o.value or "") for o in options], operands


def _python(argv):
    longs = [name + ("=" if kind else "") for name, kind in LONGS.items()]
    options, operands = pygetopt.gnu_getopt(argv, SHORTS, longs)
    return options, operands


def test_getopt_agrees_with_gnu_getopt_on_random_argvs():
    rng = random.Random(11)
    agreed = 0
    for _ in range(3000):
        argv = rng.sample(WORDS, rng.randint(1, 6))
        try:
            expected = _python(argv)
        except pygetopt.GetoptError:
            with pytest.raises(getopt.GetoptError):
                _ours(argv)
            continue
        assert _ours(argv) == expected, argv
        agreed += 1
    assert agreed > 1000


def test_getopt_optional_arguments_only_attach():
    options, operands = getopt.parse(
        ["-pfile", "-p", "x", "--load", "--load=y"], "p::", {"load": 2}
    )
    assert [(o.name, o.value) for o in options] == [
        ("-p", "file"), ("-p", None), ("--load", None), ("--load", "y")
    ]  # fmt: skip
    assert operands == ["x"]


# -- ip and tc: every prefix of every global option, resolved by the real tool ----------------
def _ip_meaning(prefix: str) -> str:
    """What the installed `ip` made of `prefix`: 'value:<which>', 'flag', 'exit', 'unknown'."""
    out = _netns("ip", prefix, "lo", "link", "show")
    text = out.stdout + out.stderr
    if 'is unknown, try "ip -help"' in text:
        return "unknown"
    if 'Object "lo" is unknown' in text:
        return "flag"
    for marker, which in (('Cannot open file "lo"', "-batch"),
                          ('Cannot open network namespace "lo"', "-netns"),
                          ("Invalid rcvbuf size 'lo'", "-rcvbuf"),
                          ('argument "lo" is wrong', "-family")):  # fmt: skip
        if marker in text:
            return f"value:{which}"
    if "1: lo:" in text:  # -loops took "lo" as its count, then listed the links
        return "value:-loops"
    return "exit"  # -Version, -help


def _prefixes(names):
    out = set()
    for name in names:
        for end in range(2, len(name) + 1):
            out.add(name[:end])
    return sorted(out)


IP_NAMES = [n.lstrip("=") for n, _ in iproute.IP_OPTIONS]


@pytest.mark.parametrize("prefix", _prefixes(IP_NAMES))
def test_ip_options_resolve_as_ip_resolves_them(prefix):
    ours = iproute._option(prefix, iproute.IP_OPTIONS)
    real = _ip_meaning(prefix)
    if ours is None and prefix.startswith("-c"):
        ours = ("-color", False)
    if ours is None:
        assert real == "unknown"
    elif ours[1]:
        assert real == f"value:{ours[0]}"
    else:
        assert real in ("flag", "exit"), (prefix, ours, real)


def _tc_meaning(prefix: str) -> str:
    out = _netns("tc", prefix, "lo", "qdisc", "show")
    text = out.stdout + out.stderr
    if 'is unknown, try "tc -help"' in text:
        return "unknown"
    if 'Object "lo" is unknown' in text:
        return "flag"
    if 'Cannot open file "lo"' in text:
        return "value:-batch"
    if 'Cannot open network namespace "lo"' in text:
        return "value:-netns"
    if "tc utility" in text or "Usage:" in text:
        return "exit"  # -Version, -help
    return "value:conf" if out.returncode == 0 else "other"


@pytest.mark.parametrize("prefix", _prefixes([n for n, _ in iproute.TC_OPTIONS]))
def test_tc_options_resolve_as_tc_resolves_them(prefix):
    ours = iproute._option(prefix, iproute.TC_OPTIONS)
    real = _tc_meaning(prefix)
    if ours is None:
        assert real == "unknown", prefix
    elif ours[1]:
        expected = "value:conf" if ours[0] in ("-cf", "-conf") else f"value:{ours[0]}"
        assert real == expected, (prefix, ours, real)
    else:
        assert real in ("flag", "exit"), (prefix, ours, real)


@pytest.mark.parametrize("prefix", _prefixes(["address", "route", "rule", "neighbour", "link"]))
def test_ip_objects_resolve_as_ip_resolves_them(prefix):
    """`ip <prefix> help` prints the usage of the object ip chose."""
    ours = iproute.dispatch(prefix[1:] if prefix.startswith("-") else prefix, iproute.IP_OBJECTS)
    out = _netns("ip", prefix, "help")
    usage = re.search(r"Usage: ip (?:\[ OPTIONS \] )?(\S+)", out.stdout + out.stderr)
    real = usage.group(1) if usage else None
    aliases = {"neighbour": "neighbor", "neigh": "neighbor", "addr": "address"}
    assert aliases.get(real, real) == aliases.get(ours, ours), (prefix, out.stderr[:200])


def test_ip_link_s_is_set_and_sh_is_show():
    out = _netns("sh", "-c", "ip link s lo mtu 1280 && ip link sh lo")
    assert "mtu 1280" in out.stdout
    assert iproute.dispatch("s", iproute.IP_VERBS["link"]) == "set"
    assert iproute.dispatch("sh", iproute.IP_VERBS["link"]) == "show"
    assert check("ip link s lo mtu 1280").allowed
    assert not check("ip link s lo name x").allowed


# -- iptables: the long names our table holds cover what the real parser knows ----------------
@cache
def _iptables_possibilities(prefix: str) -> set[str]:
    out = _netns("iptables", f"--{prefix}")
    found = re.findall(r"'--([a-z0-9-]+)'", out.stderr.split("possibilities:")[-1])
    return set(found) if "ambiguous" in out.stderr else set()


@pytest.mark.parametrize("letter", list("acdfilmnoprstvwz"))
def test_iptables_long_names_cover_the_real_parsers(letter):
    """Where the real parser finds `--<letter>` ambiguous, every name it lists is in our
    table, so no abbreviation resolves to a name we do not know."""
    real = _iptables_possibilities(letter)
    ours = {name for name in iptables.BASE if name.startswith(letter)}
    assert real <= ours, (letter, real - ours)
    if len(ours) > 1:
        with pytest.raises(iptables.Refusal, match="ambiguous"):
            iptables.read_iptables([f"--{letter}", "x"])


def test_iptables_modprobe_in_every_spelling_the_parser_accepts():
    for spelled in ("--modprobe=/bin/sh", "--mo=/bin/sh", "--modp=/x", "-M/x", "-nM/x", "-vnM/x"):
        assert not check(f"iptables {spelled} -L").allowed, spelled
    real = _netns("iptables", "--mo", "/nonexistent", "-t", "nosuchtable", "-L")
    assert "unrecognized option" not in real.stderr  # --mo is an option iptables knows


def test_the_largest_rule_allowed_stays_small():
    """What the check allows at most in one rule, measured in a throwaway namespace."""
    rule = (
        "iptables -A INPUT -m string --algo kmp --string " + "s" * 128 + " "
        "-m comment --comment " + "c" * 256 + " -p tcp -m multiport --dports 1:65535 "
        "-m conntrack --ctstate NEW -j DROP"
    )
    assert check(rule).allowed
    before = _vmalloc_kb()
    out = _netns("sh", "-c", f"{rule} && grep VmallocUsed: /proc/meminfo")
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[1]) - before < 8_000


def _vmalloc_kb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("VmallocUsed:"):
            return int(line.split()[1])
    return 0
