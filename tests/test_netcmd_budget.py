"""Per-device bounds on kernel objects (emulators/netcmd/budget.py, inventory.py): which
commands add and how many objects iptables makes of one, that the netlink counts match what
the tools see (proxy neighbours and IPv6 included), and, on one live lab shared by the
tests here, that a command past a bound is refused or undone (a typed `limit`) and leaves
the machine within its bounds: the issue's 2,916-rule comma list and six-string-match
command among them."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator

import pytest

from emulators import scratchns
from emulators.mininet.emulator import MininetEmulator
from emulators.netcmd import budget
from emulators.netcmd.policy import check
from emulators.netcmd.sandbox import STEP_STATUS, CommandSandbox, Status
from generators.routing.config import RoutingConfig
from generators.routing.environment import RoutingEnvironment
from generators.routing.topology import RoutingTopology
from pipeline.core import StepStatus
from tests.conftest import integration_fixture, require_emulator, require_root
from tests.test_emulator_contract import small_lab
from tests.test_routing_netcmd import _query

ADDS = [
    ("ip addr add 10.9.0.1/24 dev r0-eth1", budget.ADDRESSES),
    ("ip a a 10.9.0.1/24 dev r0-eth1", budget.ADDRESSES),
    ("ip -4 address replace 10.9.0.1/24 dev r0-eth1", budget.ADDRESSES),
    ("ip route add 10.9.0.0/24 dev r0-eth1", budget.ROUTES),
    ("ip r prepend 10.9.0.0/24 dev r0-eth1", budget.ROUTES),
    ("ip route append 10.9.0.0/24 dev r0-eth1", budget.ROUTES),
    ("ip rule add pref 100 prohibit", budget.IP_RULES),
    ("ip -6 ru a pref 100 prohibit", budget.IP_RULES),
    ("ip neigh add proxy 10.0.1.9 dev r0-eth1", budget.NEIGHBOURS),
    ("arp -i r0-eth1 -s 10.0.1.9 00:00:00:00:00:01 pub", budget.NEIGHBOURS),
    ("ip neigh add 10.0.1.9 lladdr 00:00:00:00:00:01 dev r0-eth1", budget.NEIGHBOURS),
    ("arp -s 10.0.1.9 00:00:00:00:00:01", budget.NEIGHBOURS),
    ("arp -ns 10.0.1.9 00:00:00:00:00:01", budget.NEIGHBOURS),
    ("route add -net 10.9.0.0 netmask 255.255.255.0 dev r0-eth1", budget.ROUTES),
    ("ifconfig r0-eth1 10.9.0.1 netmask 255.255.255.0", budget.ADDRESSES),
    ("iptables -A INPUT -j DROP", budget.RULES),
    ("iptables -I INPUT 1 -j DROP", budget.RULES),
    ("iptables -tnat -NEVIL", budget.RULES),
    ("iptables --app INPUT -j DROP", budget.RULES),
    ("tc qdisc add dev r0-eth1 root pfifo", budget.TC),
    ("tc q r dev r0-eth1 root pfifo", budget.TC),
    ("tc qdisc add dev r0-eth1 ingress", budget.TC),
    ("tc qdisc add dev r0-eth1 parent 1:1 handle 10: sfq perturb 10", budget.TC),
]
NO_ADDS = ["ip addr show", "ip route del 10.9.0.0/24", "ip r g 10.0.1.2", "iptables -L -n",
           "iptables -D INPUT 1", "tc qdisc del dev r0-eth1 root", "tc -s qdisc show",
           "ip link set r0-eth1 up", "arp -n", "route -n", "ifconfig r0-eth1",
           "sysctl -w net.ipv4.ip_forward=1", "ping -c 1 10.0.1.2"]  # fmt: skip


@pytest.mark.parametrize(("command", "kind"), ADDS)
def test_commands_that_add_are_known_by_what_they_add(command, kind):
    assert budget.adds(check(command).argv) == kind


@pytest.mark.parametrize("command", NO_ADDS)
def test_commands_that_add_nothing_are_not_counted(command):
    assert budget.adds(check(command).argv) is None


def _addresses(n: int, first: int) -> str:
    return ",".join(f"{first}.0.0.{i + 1}" for i in range(n))


# The issue's two commands: 54 x 54 addresses in 987 characters, and 44 x 44 with six
# string matches; iptables makes one rule per source times destination.
COMMA_LIST = f"iptables -A INPUT -s {_addresses(54, 1)} -d {_addresses(54, 2)} -j DROP"
SIX_STRINGS = (
    f"iptables -I FORWARD -s {_addresses(44, 1)} -d {_addresses(44, 2)} "
    + " ".join(f"-m string --algo bm --string x{i}" for i in range(6))
    + " -j DROP"
)


def test_the_issues_commands_fit_in_a_reply():
    assert len(COMMA_LIST) <= 1000 and check(COMMA_LIST).allowed
    assert len(SIX_STRINGS) <= 1000 and check(SIX_STRINGS).allowed, check(SIX_STRINGS).reason


@pytest.mark.parametrize(
    ("command", "rules", "strings"),
    [
        (COMMA_LIST, 2916, 0),
        (SIX_STRINGS, 1936, 11616),
        (
            "iptables --append INPUT --source=1.1.1.1,2.2.2.2 --dst 3.3.3.3,4.4.4.4,5.5.5.5 "
            "-j DROP",
            6,
            0,
        ),
        ("iptables -s1.1.1.1,2.2.2.2,3.3.3.3 -I INPUT 2 -d4.4.4.4 -j DROP", 3, 0),
        (
            "iptables --insert INPUT --so 1.1.1.1,2.2.2.2 --destination=3.3.3.3,4.4.4.4 -j DROP",
            4,
            0,
        ),
        ("iptables -tnat -AOUTPUT -d 1.1.1.1,2.2.2.2 -j DNAT --to-destination 10.0.0.1", 2, 0),
        (
            "iptables -A INPUT -p tcp -m multiport --dports 1,2,3,4 -s 1.1.1.1,2.2.2.2 -j DROP",
            2,
            0,
        ),  # multiport ports make no rules of their own
        (
            "iptables -A INPUT -m string --algo kmp --string a -m string --algo bm --string b "
            "-s 1.1.1.1,2.2.2.2 -j DROP",
            2,
            4,
        ),
        ("iptables -D INPUT -s 1.1.1.1,2.2.2.2 -j DROP", 0, 0),  # deletes add nothing
        ("iptables -L -n", 0, 0),
        ("ip route add 10.9.0.0/24 dev r0-eth1", 0, 0),
    ],
)
def test_an_iptables_expansion_is_counted_as_iptables_makes_it(command, rules, strings):
    checked = check(command)
    assert checked.allowed, checked.reason
    expected = Counter({budget.RULES: rules, budget.STRINGS: strings})
    assert +budget.expansion(checked.argv) == +expected


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("iptables -A INPUT -m set --match-set evil src -j DROP", "'set' is not available"),
        ("ipset create evil hash:ip maxelem 65536", "not an allowed tool"),
        ("iptables-restore", "not an allowed tool"),
        ("ip6tables -A INPUT -j DROP", "not an allowed tool"),
        ("nft add rule ip filter INPUT drop", "not an allowed tool"),
        ("ip -batch -", "(-batch) is not allowed"),
        ("ip -b /dev/stdin", "(-batch) is not allowed"),
        ("tc -batch -", "(-batch) is not allowed"),
        ("ip link add x type dummy", "'ip link add' (add) is not allowed"),
    ],
)
def test_no_command_makes_objects_the_inventory_does_not_count(command, reason):
    """What could hold kernel memory outside the bounded kinds (ip sets, nft objects of
    its own, batches read from elsewhere, new links) is refused before anything runs."""
    checked = check(command)
    assert not checked.allowed and reason in (checked.reason or ""), checked.reason


@pytest.fixture
def scratch_netns() -> Iterator[str]:
    """A throwaway network namespace held by one sleeping process of ours."""
    require_root("network namespaces need root")
    with scratchns.scratch_netns(60) as path:
        subprocess.run(["nsenter", f"--net={path}", "ip", "link", "set", "lo", "up"], check=True)
        yield path


def _in(path: str, command: str) -> str:
    return subprocess.run(
        ["nsenter", f"--net={path}", *command.split()], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.integration
def test_the_counts_are_what_the_tools_see(scratch_netns):
    ns = scratch_netns
    _in(ns, "ip addr add 10.9.0.1/24 dev lo")
    _in(ns, "ip addr add 10.9.1.1/24 dev lo")
    addresses = sum(len(a["addr_info"]) for a in json.loads(_in(ns, "ip -j addr show")))
    assert budget.count(ns, budget.ADDRESSES) == addresses
    _in(ns, "ip route add unreachable 2001:db8::/32 table 77")
    routes = [json.loads(_in(ns, f"ip -j -{v} route show table all")) for v in (4, 6)]
    assert budget.count(ns, budget.ROUTES) == sum(map(len, routes))
    # each next hop of a multipath route counts
    _in(ns, "ip route add 10.8.0.0/16 nexthop via 10.9.0.2 nexthop via 10.9.0.3 nexthop via "
            "10.9.1.2")  # fmt: skip
    assert budget.count(ns, budget.ROUTES) == sum(map(len, routes)) + 3
    before = budget.count(ns, budget.RULES)
    _in(ns, "iptables -A INPUT -j ACCEPT")
    _in(ns, "iptables -A INPUT -p icmp -j DROP")
    _in(ns, "iptables -N mine")
    # two rules and two chains: iptables-nft makes a base chain (INPUT) when first used
    assert budget.count(ns, budget.RULES) == before + 4
    _in(ns, "iptables -A mine -m string --algo bm --string a -m string --algo kmp --string b "
            "-m comment --comment c -j DROP")  # fmt: skip
    assert budget.count(ns, budget.STRINGS) == 2
    held = budget.count(ns, budget.TC)
    _in(ns, "tc qdisc replace dev lo root handle 1: htb default 10")
    _in(ns, "tc class add dev lo parent 1: classid 1:10 htb rate 1mbit")
    _in(ns, "tc filter add dev lo parent 1: prio 1 protocol ip u32 match ip dst 1.1.1.1/32 "
            "flowid 1:10")  # fmt: skip
    assert budget.count(ns, budget.TC) >= held + 3
    _in(ns, "ip -6 rule add pref 100 prohibit")
    rules = [json.loads(_in(ns, f"ip -j -{v} rule show")) for v in (4, 6)]
    assert budget.count(ns, budget.IP_RULES) == sum(map(len, rules))
    # (on a veth: the loopback keeps one neighbour entry for every address)
    _in(ns, "ip link add name nb0 type veth peer name nb1")
    _in(ns, "ip neigh add 10.9.0.9 lladdr 00:00:00:00:00:01 dev nb0 nud permanent")
    _in(ns, "ip neigh add 10.9.0.8 lladdr 00:00:00:00:00:01 dev nb0 nud noarp")
    assert budget.count(ns, budget.NEIGHBOURS) == 2
    # proxy entries, both families: the issue's uncounted neighbours
    _in(ns, "ip neigh add proxy 10.9.0.7 dev nb0")
    _in(ns, "ip neigh add proxy 2001:db8::7 dev nb0")
    proxies = json.loads(_in(ns, "ip -j neigh show proxy"))
    assert len(proxies) == 2 and budget.count(ns, budget.NEIGHBOURS) == 4


@pytest.mark.integration
def test_vtysh_configuration_stops_at_the_route_bound(scratch_netns, monkeypatch):
    """FRR's routes are zebra's and never undone, so configuration is refused once the
    router holds its bound of routes; reading is not."""
    monkeypatch.setitem(budget.LIMITS, budget.ROUTES, budget.count(scratch_netns, budget.ROUTES))
    lines = ("configure terminal", "ip route 10.9.0.0/16 blackhole")
    assert "already holds" in (budget.vtysh_refusal(scratch_netns, lines) or "")
    assert budget.vtysh_refusal(scratch_netns, ("show ip route", "sh ip ospf neighbor")) is None
    monkeypatch.setitem(budget.LIMITS, budget.ROUTES, 10**6)
    assert budget.vtysh_refusal(scratch_netns, lines) is None


def test_every_bound_is_kept_by_the_inventory():
    assert set(budget.LIMITS) == {
        budget.RULES, budget.STRINGS, budget.TC, budget.ROUTES, budget.ADDRESSES,
        budget.NEIGHBOURS, budget.IP_RULES,
    }  # fmt: skip


@pytest.mark.integration
def test_a_command_past_a_bound_is_a_resource_limit_step(monkeypatch):
    require_emulator("mininet")
    monkeypatch.setitem(budget.LIMITS, budget.RULES, 0)
    monkeypatch.setitem(budget.LIMITS, budget.ADDRESSES, 0)
    topo = RoutingTopology(2, 1)
    with RoutingEnvironment(RoutingConfig()) as env, env.episode(_query(topo)) as episode:
        for command in ("iptables -A INPUT -j DROP", "ip addr add 10.9.0.1/24 dev r0-eth1"):
            step = episode.step(json.dumps({"machine": "r0", "command": command}))
            assert step.status is StepStatus.RESOURCE_LIMIT, step.output
            assert "the most allowed per machine" in step.output
            assert step.evidence["sandbox"] == "limit" and step.evidence["argv"] == []
            assert step.evidence["before"] == step.evidence["after"]
        # Undone after it ran: one rule fits the count before, the INPUT chain it makes
        # does not. The step says so, and ran (its argv), so the network is probed again.
        monkeypatch.setitem(budget.LIMITS, budget.RULES, 1)
        step = episode.step(json.dumps({"machine": "r0", "command": "iptables -A INPUT -j DROP"}))
        assert step.status is StepStatus.RESOURCE_LIMIT and "removed again" in step.output
        assert step.evidence["sandbox"] == "limit" and step.evidence["argv"]
        shown = episode.step(json.dumps({"machine": "r0", "command": "iptables -S"}))
        assert shown.status is StepStatus.OK and "-j DROP" not in shown.output
    assert STEP_STATUS[Status.LIMIT] is StepStatus.RESOURCE_LIMIT


# -- one live lab for the tests below (tests/test_emulator_contract.py's small lab) ----
@pytest.fixture(scope="module")
@integration_fixture
def lab() -> Iterator[tuple[MininetEmulator, CommandSandbox]]:
    require_emulator("mininet")
    with MininetEmulator() as emu:
        emu.build(small_lab())
        emu.snapshot()
        yield emu, CommandSandbox(emu, ("r0", "h1", "h2", "h3"), timeout_s=10)


@pytest.fixture
def sandbox(lab) -> Iterator[CommandSandbox]:
    emu, box = lab
    yield box
    emu.reset()


def _held(box: CommandSandbox, machine: str = "r0") -> Counter[str]:
    return budget.inventory.take(box._netns(machine)).counts()


def _within(held: Counter[str]) -> bool:
    return all(held[k] <= limit for k, limit in budget.LIMITS.items())


def test_the_issues_comma_lists_are_refused_before_they_run(sandbox):
    before = _held(sandbox)
    for command, rules in ((COMMA_LIST, 2916), (SIX_STRINGS, 1936)):
        result = sandbox.run("r0", command)
        assert result.status is Status.LIMIT, result.output
        assert f"at least {rules} {budget.RULES}" in result.output
        assert result.argv == ()  # never ran
        assert _held(sandbox) == before and _within(before)


def test_a_command_past_a_bound_by_its_effect_is_undone(sandbox, monkeypatch):
    """The count before says it fits, the kernel says otherwise: iptables-nft also makes
    the chain a rule goes in, an address brings its routes. What the command added goes
    again, and nothing else does."""
    before = _held(sandbox)
    monkeypatch.setitem(budget.LIMITS, budget.RULES, before[budget.RULES] + 4)
    # four rules fit the count before; the raw table's PREROUTING chain is one more
    result = sandbox.run("r0", "iptables -t raw -A PREROUTING -s 1.1.1.1,2.2.2.2 -d "
                               "3.3.3.3,4.4.4.4 -j NOTRACK")  # fmt: skip
    assert result.status is Status.LIMIT and result.argv, result.output
    assert "was removed again" in result.output and budget.RULES in result.output
    assert _held(sandbox) == before
    assert "raw" not in sandbox.run("r0", "iptables-save").output
    monkeypatch.setitem(budget.LIMITS, budget.ROUTES, before[budget.ROUTES] + 1)
    result = sandbox.run("r0", "ip addr add 10.9.0.1/24 dev r0-eth1")
    assert result.status is Status.LIMIT and budget.ROUTES in result.output, result.output
    assert _held(sandbox) == before
    assert "10.9.0.1" not in sandbox.run("r0", "ip -br addr").output


def test_string_matches_have_a_bound_of_their_own(sandbox):
    six = " ".join(f"-m string --algo bm --string s{i}" for i in range(6))
    statuses = [sandbox.run("r0", f"iptables -A INPUT {six} -j DROP").status for _ in range(3)]
    assert statuses == [Status.OK, Status.OK, Status.LIMIT]  # 12 held, 18 > 16
    assert _held(sandbox)[budget.STRINGS] == 12


def test_proxy_neighbours_count_in_both_families(sandbox, monkeypatch):
    before = _held(sandbox)
    assert sandbox.run("r0", "ip neigh add proxy 10.0.1.77 dev r0-eth1").status is Status.OK
    assert sandbox.run("r0", "ip neigh add proxy 2001:db8::77 dev r0-eth1").status is Status.OK
    assert _held(sandbox)[budget.NEIGHBOURS] == before[budget.NEIGHBOURS] + 2
    monkeypatch.setitem(budget.LIMITS, budget.NEIGHBOURS, before[budget.NEIGHBOURS] + 2)
    for command in ("arp -i r0-eth1 -s 10.0.1.78 00:11:22:33:44:55 pub",
                    "ip -6 neigh add proxy 2001:db8::78 dev r0-eth1"):  # fmt: skip
        result = sandbox.run("r0", command)
        assert result.status is Status.LIMIT and "already holds" in result.output, result.output


def test_an_ipv6_policy_rule_does_not_survive_the_reset(lab):
    emu, box = lab
    for command in ("ip -6 ru a pref 100 prohibit", "ip -6 rule add pref 101 to 2001:db8::/32 "
                    "lookup 77", "ip route add unreachable 2001:db8::/32 table 77"):  # fmt: skip
        assert box.run("r0", command).status is Status.OK
    emu.reset()
    shown = box.run("r0", "ip -6 rule").output + box.run("r0", "ip -6 route show table all").output
    assert "prohibit" not in shown and "2001:db8" not in shown, shown
