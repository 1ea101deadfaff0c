"""Per-device bounds on kernel objects (emulators/netcmd/budget.py): which commands add,
that the netlink counts match what the tools see, and that a lab command past a bound is a
typed `resource_limit` step that never ran."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from emulators.netcmd import budget
from emulators.netcmd.policy import check
from emulators.netcmd.sandbox import STEP_STATUS, Status
from generators.routing.config import RoutingConfig
from generators.routing.environment import RoutingEnvironment
from generators.routing.topology import RoutingTopology
from pipeline.core import StepStatus
from tests.conftest import require_emulator, require_root
from tests.test_routing_netcmd import _query

ADDS = [
    ("ip addr add 10.9.0.1/24 dev r0-eth1", budget.ADDRESSES),
    ("ip a a 10.9.0.1/24 dev r0-eth1", budget.ADDRESSES),
    ("ip -4 address replace 10.9.0.1/24 dev r0-eth1", budget.ADDRESSES),
    ("ip route add 10.9.0.0/24 dev r0-eth1", budget.ROUTES),
    ("ip r prepend 10.9.0.0/24 dev r0-eth1", budget.ROUTES),
    ("ip route append 10.9.0.0/24 dev r0-eth1", budget.ROUTES),
    ("ip rule add pref 100 prohibit", budget.IP_RULES),
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


@pytest.fixture
def scratch_netns() -> Iterator[str]:
    """A throwaway network namespace held by one sleeping process of ours."""
    require_root("network namespaces need root")
    holder = subprocess.Popen(["unshare", "--net", "sleep", "60"])
    try:
        path = f"/proc/{holder.pid}/ns/net"
        subprocess.run(["nsenter", f"--net={path}", "ip", "link", "set", "lo", "up"], check=True)
        yield path
    finally:
        holder.kill()
        holder.wait()


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
    routes = len(json.loads(_in(ns, "ip -j route show table all")))
    assert budget.count(ns, budget.ROUTES) == routes
    before = budget.count(ns, budget.RULES)
    _in(ns, "iptables -A INPUT -j ACCEPT")
    _in(ns, "iptables -A INPUT -p icmp -j DROP")
    _in(ns, "iptables -N mine")
    # two rules and two chains: iptables-nft makes a base chain (INPUT) when first used
    assert budget.count(ns, budget.RULES) == before + 4
    held = budget.count(ns, budget.TC)
    _in(ns, "tc qdisc replace dev lo root handle 1: htb default 10")
    _in(ns, "tc class add dev lo parent 1: classid 1:10 htb rate 1mbit")
    _in(ns, "tc filter add dev lo parent 1: prio 1 protocol ip u32 match ip dst 1.1.1.1/32 "
            "flowid 1:10")  # fmt: skip
    assert budget.count(ns, budget.TC) >= held + 3
    rules = [json.loads(_in(ns, f"ip -j -{v} rule show")) for v in (4, 6)]
    assert budget.count(ns, budget.IP_RULES) == sum(map(len, rules))
    _in(ns, "ip neigh add 10.9.0.9 lladdr 00:00:00:00:00:01 dev lo nud permanent")
    assert budget.count(ns, budget.NEIGHBOURS) == 1


@pytest.mark.integration
def test_a_command_past_a_bound_is_a_resource_limit_step_that_never_ran(monkeypatch):
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
        shown = episode.step(json.dumps({"machine": "r0", "command": "iptables -L -n"}))
        assert shown.status is StepStatus.OK
    assert STEP_STATUS[Status.LIMIT] is StepStatus.RESOURCE_LIMIT
