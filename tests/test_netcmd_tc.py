"""tc's grammar (emulators/netcmd/tc.py) against the installed tc, and the kinds and sizes
it refuses. The tables' spellings are checked by running tc itself: every spelling of every
parameter (each prefix of its name) is read by tc as a parameter exactly when our table
reads it as one."""

from __future__ import annotations

import re
import shlex
import subprocess
from functools import cache

import pytest

from emulators.netcmd import durable, kinds, tc
from emulators.netcmd.policy import check
from tests.conftest import require_root

DEV = "r0-eth1"


def _spellings(names: list[str]) -> list[str]:
    out = set()
    for name in names:
        bare = name.lstrip("=")
        out.update(bare[:k] for k in range(1, len(bare) + 1))
    return sorted(out)


# How each kind's parser is reached: (object words before the kind, the kind, the table).
PARSERS = {
    **{f"qdisc {k}": ("qdisc add dev lo root", k, t) for k, t in tc.QDISC_PARAMS.items() if t},
    **{f"class {k}": ("class add dev lo parent 1: classid 1:1", k, t)
       for k, t in tc.CLASS_PARAMS.items()},
    **{f"filter {k}": ("filter add dev lo parent 1: protocol ip prio 1", k, t)
       for k, t in tc.FILTER_PARAMS.items()},
}  # fmt: skip
_COMPLAINT = re.compile(r'(?:unknown parameter|What is|Unknown (?:qdisc|filter)) "?([^"?\s]+)')


@cache
def _tc_unknown_words(case: str) -> frozenset[tuple[str, str]]:
    """(spelling, "unknown" or "known") for every spelling of every parameter of one kind,
    as tc 6.1 reads them: one run of tc per spelling, all in one throwaway namespace."""
    require_root("tc needs a network namespace")
    prefix, kind, table = PARSERS[case]
    spellings = _spellings([name for name, _ in table])
    script = ["ip link set lo up"]
    for spelled in spellings:
        cmd = f"tc {prefix} {kind} {spelled} 1"
        script.append(f"echo '@@{spelled}'; {cmd} 2>&1 | head -3")
    out = subprocess.run(
        ["unshare", "-n", "sh", "-s"], input="\n".join(script), capture_output=True, text=True,
        timeout=120,
    ).stdout  # fmt: skip
    found = set()
    for block in out.split("@@")[1:]:
        spelled, _, text = block.partition("\n")
        said = {m for m in _COMPLAINT.findall(text)}
        found.add((spelled, "unknown" if spelled in said else "known"))
    return frozenset(found)


@pytest.mark.integration
@pytest.mark.parametrize("case", sorted(PARSERS))
def test_each_kinds_parameters_resolve_as_tc_resolves_them(case):
    _, _, table = PARSERS[case]
    for spelled, real in sorted(_tc_unknown_words(case)):
        ours = "unknown" if tc._lookup(spelled, table) is None else "known"
        assert ours == real, (case, spelled, ours, real)


@pytest.mark.integration
@pytest.mark.parametrize("obj", ["qdisc", "filter"])
def test_the_objects_words_before_the_kind_resolve_as_tc_resolves_them(obj):
    """A word our table does not read is the kind for tc too ('Unknown qdisc "w"')."""
    require_root("tc needs a network namespace")
    table = {"qdisc": tc.QDISC_WORDS, "filter": tc.FILTER_WORDS}[obj]
    spellings = [s for s in _spellings([n for n, _ in table]) if s not in ("h", "he", "hel")]
    script = ["ip link set lo up"]
    for spelled in spellings:
        script.append(f"echo '@@{spelled}'; tc {obj} add dev lo {spelled} 1 2 3 2>&1 | head -2")
    out = subprocess.run(
        ["unshare", "-n", "sh", "-s"], input="\n".join(script), capture_output=True, text=True,
        timeout=120,
    ).stdout  # fmt: skip
    for block in out.split("@@")[1:]:
        spelled, _, text = block.partition("\n")
        real_kind = f'Unknown {obj} "{spelled}"' in text
        ours_kind = tc._lookup(spelled, table) is None
        assert ours_kind == real_kind, (obj, spelled, text[:200])


# -- what is refused, with its reason ----------------------------------------------------------
REFUSED = [
    (f"tc qdisc add dev {DEV} root cake", "qdisc kind 'cake' is not available"),
    (f"tc qdisc add dev {DEV} root netem delay 100ms", "qdisc kind 'netem'"),
    (f"tc qdisc add dev {DEV} root handle 1: hfsc", "qdisc kind 'hfsc'"),
    (f"tc qdisc add dev {DEV} root qfq", "qdisc kind 'qfq'"),
    (f"tc q a dev {DEV} root choke", "qdisc kind 'choke'"),
    (f"tc qdisc add dev {DEV} root ro pfifo", "qdisc kind 'ro'"),
    (f"tc qdisc add dev {DEV} root sfq divisor 65536", "divisor: 65536 is not between 1 and 1024"),
    (f"tc qdisc add dev {DEV} root sfq limit 1000000", "limit: 1000000 is not between"),
    (f"tc qdisc add dev {DEV} root sfq flows 65000", "flows: 65000 is not between"),
    (f"tc qdisc add dev {DEV} root sfq flows 1024", "flows: 1024 is not between 1 and 128"),
    (f"tc qdisc add dev {DEV} root sfq depth 1000", "depth: 1000 is not between"),
    (f"tc qdisc add dev {DEV} root sfq redflowlimit 100000", "redflowlimit"),
    (f"tc qdisc add dev {DEV} root tbf rate 1mbit burst 1gb latency 50ms", "most allowed here"),
    (f"tc qdisc add dev {DEV} root tbf rate 1mbit bu 64 lim 4gb", "most allowed here"),
    (f"tc qdisc add dev {DEV} root tbf rate 1mbit burst 64 latency 1000s", "longer than 10 s"),
    (f"tc qdisc add dev {DEV} root tbf r 1mbit burst 64 latency 5ms", 'unknown parameter "r"'),
    (f"tc qdisc add dev {DEV} root tbf rate 1mbit burst 0x40 latency 5ms", "is not a size"),
    (f"tc qdisc add dev {DEV} root fq_codel flows 65536", "flows: 65536 is not between"),
    (f"tc qdisc add dev {DEV} root fq_codel memory_limit 4gb", "most allowed here"),
    (f"tc qdisc add dev {DEV} root pfifo limit 99999999", "limit: 99999999 is not between"),
    (f"tc qdisc add dev {DEV} root pfifo_fast limit 1", "does not support option parsing"),
    (f"tc qdisc add dev {DEV} root est 1s 8s pfifo", "(estimator): rate estimators"),
    (f"tc qdisc add dev {DEV} root stab overhead 1 pfifo", "(stab): size tables"),
    (f"tc qdisc add dev {DEV} ingress_block 1 ingress", "shared filter blocks"),
    (f"tc qdisc add dev {DEV} root handle 1: htb offload", "(offload)"),
    (f"tc class add dev {DEV} parent 1: classid 1:1 htb rate 1mbit quantum 1gb", "most allowed"),
    (f"tc class add dev {DEV} parent 1: classid 1:1 htb rate 1mbit prio 9", "prio: 9 is not"),
    (f"tc class add dev {DEV} parent 1: classid 1:1 hfsc ls m2 1mbit", "class kind 'hfsc'"),
    (f"tc class add dev {DEV} parent 1: classid 1:1 htb ra 1mbit", 'unknown parameter "ra"'),
    (f"tc filter add dev {DEV} parent 1: route to 1 classid 1:1", "filter kind 'route'"),
    (f"tc filter add dev {DEV} parent 1: tcindex hash 1", "filter kind 'tcindex'"),
    (f"tc filter add dev {DEV} parent 1: rsvp ipproto tcp", "filter kind 'rsvp'"),
    (f"tc filter add dev {DEV} parent 1: flower dst_ip 1.1.1.1", "filter kind 'flower'"),
    (f"tc filter add dev {DEV} parent 1: basic classid 1:1", "filter kind 'basic'"),
    (f"tc f a dev {DEV} parent 1: cgroup", "filter kind 'cgroup'"),
    (f"tc filter add dev {DEV} parent 1: matchall action mirred egress redirect dev lo",
     "action 'mirred' is not available"),
    (f"tc filter add dev {DEV} parent 1: matchall action nat ingress 1.1.1.1 2.2.2.2", "'nat'"),
    (f"tc filter add dev {DEV} parent 1: matchall action pedit ex munge ip ttl set 1", "'pedit'"),
    (f"tc filter add dev {DEV} parent 1: u32 match ip src 1.1.1.1/32 police rate 1mbit",
     "policers are not available"),
    (f"tc filter add dev {DEV} parent 1: u32 match ip6 src ::1/128", "match 'ip6'"),
    (f"tc filter add dev {DEV} parent 1: u32 divisor 4096", "divisor: 4096 is not between"),
    (f"tc filter add dev {DEV} parent 1: u32 hashkey mask 0xff at 12", "(hashkey)"),
    (f"tc filter add dev {DEV} parent 1: chain 5 u32", "filter chains"),
    (f"tc filter add dev {DEV} parent 1: block 1 u32", "shared filter blocks"),
    (f"tc filter add dev {DEV} parent 1: u32 "
     + " ".join("match ip dst 10.0.0.0/8" for _ in range(9)), "at most 8 matches"),
    (f"tc filter add dev {DEV} parent 1: matchall " + " ".join(["action drop"] * 5),
     "at most 4 actions"),
    (f"tc chain add dev {DEV} parent 1: chain 1 u32", "'tc chain add' is not allowed"),
    ("tc qdisc add dev gre0 root pfifo", "a kernel module's device"),
    ("tc qdisc show dev tunl0", "a kernel module's device"),
]  # fmt: skip
ALLOWED = [
    f"tc qdisc del dev {DEV} root",
    f"tc qdisc replace dev {DEV} root pfifo_fast",
    f"tc qdisc add dev {DEV} parent 1:10 handle 10: sfq perturb 10 limit 127 divisor 1024",
    f"tc qdisc add dev {DEV} root prio bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
    f"tc filter del dev {DEV} parent 1: prio 4",
    f"tc qdisc add dev {DEV} ingress",
    f"tc -s qdisc show dev {DEV}",
    f"tc filter show dev {DEV} parent 1:",
    "tc chain show dev lo",
]
# What tc's grammar (and this check's) reads, then refuses as state that changes what
# passes by itself: shaping and metering qdiscs, class and filter writes (durable.py).
NOT_LASTING = [
    f"tc qdisc add dev {DEV} root tbf rate 1mbit burst 64 latency 50ms",
    f"tc qdisc replace dev {DEV} root tbf rate 10mbit bu 32kb lat 50ms",
    f"tc qdisc change dev {DEV} root tbf rate 1mbit burst 32k limit 3000",
    f"tc qdisc add dev {DEV} root handle 1: htb default 10 r2q 10",
    f"tc class add dev {DEV} parent 1: classid 1:10 htb rate 1mbit ceil 2mbit quantum 1514",
    f"tc qdisc add dev {DEV} root fq_codel limit 1000 flows 128 target 5ms ecn",
    f"tc filter add dev {DEV} parent 1: protocol ip prio 1 u32 match ip dst 10.0.1.0/24 "
    "flowid 1:10",
    f"tc filter add dev {DEV} parent 1: protocol ip prio 2 u32 match ip protocol 1 0xff action "
    "drop",
    f"tc filter add dev {DEV} parent 1: prio 3 handle 5 fw classid 1:10",
    f"tc filter add dev {DEV} parent 1: prio 4 matchall action gact pass",
]


@pytest.mark.parametrize(("command", "needle"), REFUSED)
def test_tc_refuses_other_kinds_and_large_sizes(command, needle):
    checked = check(command)
    assert not checked.allowed, command
    assert needle in checked.reason, (command, checked.reason)


@pytest.mark.parametrize("command", ALLOWED)
def test_tc_allows_what_an_operator_uses(command):
    checked = check(command)
    assert checked.allowed, (command, checked.reason)


@pytest.mark.parametrize("command", NOT_LASTING)
def test_tc_reads_shaping_and_filters_then_refuses_them_as_not_lasting(command):
    checked = check(command)
    assert not checked.allowed and durable.WHY in checked.reason, (command, checked.reason)


def test_every_allowed_kind_has_a_grammar_and_a_warm_up():
    script = kinds.warm_script()
    for kind in kinds.QDISC_KINDS:
        assert kind in tc.QDISC_PARAMS and f" {kind}" in script, kind
    for kind in kinds.FILTER_KINDS:
        assert kind in tc.FILTER_PARAMS and f" {kind} " in script, kind
    for kind in kinds.CLASS_KINDS:
        assert kind in tc.CLASS_PARAMS
    for line in script.splitlines():
        if line.startswith("tc "):
            command = line.split(" >/dev/null")[0].replace(" dev lo", f" dev {DEV}")
            checked = check(command)
            assert checked.allowed or durable.WHY in checked.reason, (command, checked.reason)


@pytest.mark.integration
def test_what_the_check_allows_tc_itself_accepts():
    """Every allowed example parses in tc (the kernel may still refuse a kind built out)."""
    require_root("tc needs a network namespace")
    script = ["ip link set lo up"]
    for command in ALLOWED + NOT_LASTING:
        command = command.replace(DEV, "lo")
        script.append(f"echo '@@{command}'; {command} 2>&1; echo rc=$?")
    out = subprocess.run(
        ["unshare", "-n", "sh", "-s"], input="\n".join(script), capture_output=True, text=True,
        timeout=120,
    ).stdout  # fmt: skip
    for block in out.split("@@")[1:]:
        command, _, text = block.partition("\n")
        code = int(text.rsplit("rc=", 1)[1].split()[0])
        # 0: done; 2: tc parsed it and the kernel refused (a kind not built, no parent).
        assert code in (0, 2), (shlex.split(command), text[:300])


def test_every_allowed_iptables_match_and_target_is_warmed_up():
    from emulators.netcmd import iptables

    script = kinds.warm_script()
    for match in iptables.MATCHES:
        assert f"-m {match} " in script or f"-p {match} " in script, match
    for target in set(iptables.TARGETS) - {"ACCEPT", "DROP", "RETURN"}:
        assert f"-j {target}" in script, target


MODULE_REQUESTS = [
    ("sysctl -w net.ipv4.tcp_congestion_control=westwood", "takes reno or cubic"),
    ("sysctl -w net.ipv4.tcp_congestion_control=dctcp", "takes reno or cubic"),
    ("iptables -A INPUT -m string --algo fsm --string x -j DROP", "--algo takes bm or kmp"),
    ("iptables -A INPUT -m string --al fsm --string x -j DROP", "--algo takes bm or kmp"),
    ("ip link add x type gre remote 1.1.1.1", "(add) is not allowed"),
    ("ip link show gre0", "a kernel module's device"),
    ("ip addr show dev ip6tnl0", "a kernel module's device"),
    ("ifconfig tunl0", "a kernel module's device"),
    ("ifconfig sit0:1 10.0.0.1 up", "a kernel module's device"),
    ("ping -c 1 -I ip_vti0 10.0.0.1", "a kernel module's device"),
    ("arp -i xfrm0 -n", "a kernel module's device"),
]


@pytest.mark.parametrize(("command", "needle"), MODULE_REQUESTS)
def test_names_that_would_load_a_module_are_refused(command, needle):
    checked = check(command)
    assert not checked.allowed and needle in checked.reason, (command, checked.reason)
